"""Take the README's screenshot of the review desk's item page (docs/review-desk.png).

Runs the clinical example with its sloppy agent into a temporary store, queues it, serves
the desk, signs a reviewer in with headless Chromium (Debian's `chromium` and
`chromedriver`) and photographs the first item with a fail and a reason ticked.

    python docs/make_screenshot.py
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from pathlib import Path

import uvicorn
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from proctor import Runner, Store
from proctor.agents import load_agent
from proctor.env.suite import load_suite
from proctor.review.assignment import enqueue
from proctor.review.auth import add_reviewer
from proctor.review.queue import review_queue
from proctor.review.server import create_app
from proctor.store.export import store_run

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "review-desk.png"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "p.db"
        store = Store(path)
        suite = load_suite([ROOT / "examples" / "clinical"])
        ref = f"{ROOT / 'examples' / 'clinical'}/agents.py:sloppy"
        report = Runner(suite, load_agent(ref), trials=3, store=store, agent_ref=ref).run()
        run = store_run(store, report.run_id)
        enqueue(store, run, review_queue(run), double_share=0.2, seed=0)
        link, _ = add_reviewer(store, "alice", "", adjudicator=False)
        server = uvicorn.Server(uvicorn.Config(create_app(path), port=0, log_level="warning"))
        threading.Thread(target=server.run, daemon=True).start()
        while not server.started:
            time.sleep(0.05)
        url = f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
        options = webdriver.ChromeOptions()
        for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1200,900"):
            options.add_argument(flag)
        options.add_argument(f"--user-data-dir={tmp}/chromium")
        options.binary_location = str(shutil.which("chromium"))
        browser = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
        try:
            browser.get(url + link)
            browser.find_element(By.ID, "signin").click()
            browser.get(f"{url}/runs/{run.run_id}/queue")
            browser.find_element(By.CSS_SELECTOR, "#next-form button").click()
            browser.find_element(By.CSS_SELECTOR, "input[name=verdict_0][value=fail]").click()
            browser.find_element(By.CSS_SELECTOR, "input[name=reason][data-key='2']").click()
            OUT.write_bytes(browser.get_screenshot_as_png())
        finally:
            browser.quit()
            server.should_exit = True
    print(f"{OUT} ({OUT.stat().st_size / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
