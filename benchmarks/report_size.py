"""Size and speed of the HTML report for a large run (default 200 tasks x 5 = 1,000 trials).

The tasks are the clinical example's, cloned under new ids, played by its `sloppy` agent,
so traces, failures and safety violations look like a real run's. Prints the time to
render the report, its size, and (with Chromium and chromedriver installed) the time the
browser takes to load the file and to open a trace.

    python benchmarks/report_size.py [--tasks 200] [--trials 5] [--no-browser]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from proctor import Runner, ScriptedAgent, Store, Task
from proctor.agents import load_agent
from proctor.env.suite import Suite, load_suite
from proctor.report.html import write_html
from proctor.report.inputs import gather
from proctor.report.markdown import render_markdown
from proctor.store.export import store_run

CLINICAL = Path(__file__).resolve().parents[1] / "examples" / "clinical"


def clone_suite(copies: int) -> tuple[Suite, ScriptedAgent]:
    """`copies` tasks cycling through the clinical ones, and the sloppy agent for them."""
    suite = load_suite([CLINICAL])
    sloppy = load_agent(f"{CLINICAL}/agents.py:sloppy")
    tasks, plans = [], {}
    for i in range(copies):
        original = suite.tasks[i % len(suite.tasks)]
        task = Task.model_validate({**original.task.model_dump(), "id": f"{original.id}-{i:04d}"})
        tasks.append(task)
        plans[task.id] = sloppy.plans[original.id]
    agent = ScriptedAgent(plans, sloppy.misbehave, name="clinical-sloppy-bench")
    return Suite.from_tasks("clinical-bench", tasks, [suite.tasks[0].domain]), agent


def browser_times(path: Path, trial: int) -> dict[str, float]:
    """Load time of the page and time to open one trace, as the browser measures them."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run"):
        options.add_argument(flag)
    with tempfile.TemporaryDirectory() as profile:
        options.add_argument(f"--user-data-dir={profile}")
        driver: Any = webdriver.Chrome(
            service=Service(str(shutil.which("chromedriver"))), options=options
        )
        try:
            driver.get(path.as_uri())
            load = driver.execute_script(
                "return performance.getEntriesByType('navigation')[0].loadEventEnd"
            )
            open_ms = driver.execute_async_script(
                """
                const done = arguments[arguments.length - 1];
                const dialog = document.getElementById('trace');
                const t0 = performance.now();
                location.hash = '#trace-' + arguments[0];
                (function wait() {
                  if (dialog.open) requestAnimationFrame(() => done(performance.now() - t0));
                  else setTimeout(wait, 1);
                })();
                """,
                trial,
            )
        finally:
            driver.quit()
    return {"load_ms": load, "open_trace_ms": open_ms}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--keep", type=Path, help="Also copy the report here.")
    args = parser.parse_args()
    suite, agent = clone_suite(args.tasks)
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "bench.db")
        report = Runner(suite, agent, trials=args.trials, seed=1, store=store).run()
        run = store_run(store, report.run_id)
        query = "SELECT sum(json_array_length(events)) FROM traces"
        ((events,),) = store.select("the events", query)
        t0 = time.perf_counter()
        inputs = gather(run, suite=suite)
        path = Path(tmp) / "report.html"
        size = write_html(path, inputs, lambda task, n: store.trace(run.run_id, task, n)[0])
        html_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        render_markdown(inputs)
        md_s = time.perf_counter() - t0
        n = len(run.results)
        print(f"run: {n} trials ({args.tasks} tasks x {args.trials}), {events} trace events")
        print(f"html: {size / 1e6:.2f} MB ({size / n / 1e3:.1f} kB per trial)")
        print(f"render: {html_s:.2f} s html (with review queue and gate inputs), {md_s:.3f} s md")
        if args.keep:
            shutil.copy(path, args.keep)
        have_browser = shutil.which("chromium") and shutil.which("chromedriver")
        if not args.no_browser and have_browser:
            times = browser_times(path, n - 1)
            print(
                f"chromium: page loaded in {times['load_ms']:.0f} ms, "
                f"trace #{n - 1} opened in {times['open_trace_ms']:.0f} ms"
            )
        elif not args.no_browser:
            print("chromium: not measured (no chromium/chromedriver on PATH)")
        store.close()


if __name__ == "__main__":
    main()
