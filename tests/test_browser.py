"""The HTML report in a real headless Chromium (Debian's `chromium` + `chromedriver`).

Skipped with the reason when Selenium or the browser is missing (a laptop); CI sets
PROCTOR_REQUIRE_BROWSER=1 so that there a missing browser fails instead.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from proctor import Store
from proctor.report.html import write_html
from proctor.report.inputs import gather
from report_runs import PWN, StoredRun, run_example, run_hostile

OPEN = "return document.getElementById('trace').open"
REQUIRE = os.environ.get("PROCTOR_REQUIRE_BROWSER") == "1"
CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1280,1000",
]


def _unavailable() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    if CHROMIUM is None or CHROMEDRIVER is None:
        return "no chromium/chromedriver on PATH (apt-get install chromium chromium-driver)"
    return None


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    why = _unavailable()
    if why is not None:
        if REQUIRE:
            pytest.fail(f"PROCTOR_REQUIRE_BROWSER=1 but {why}")
        pytest.skip(why)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium')}")
    options.binary_location = str(CHROMIUM)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    yield browser
    browser.quit()


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[StoredRun, Path]]:
    folder = tmp_path_factory.mktemp("browser")
    store = Store(folder / "p.db")
    out = {}
    for name, stored in (
        ("clinical", run_example(store, "clinical")),
        ("adversarial", run_example(store, "adversarial")),
        ("hostile", run_hostile(store)),
    ):
        path = folder / f"{name}.html"
        write_html(path, gather(stored.run, suite=stored.suite), stored.trace)
        out[name] = (stored, path)
    return out


def open_page(driver: Any, path: Path, fragment: str = "") -> None:
    driver.get(path.as_uri() + fragment)
    driver.get_log("browser")  # start each page with an empty console


def errors(driver: Any) -> list[dict[str, Any]]:
    return [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def js(driver: Any, script: str) -> Any:
    return driver.execute_script(script)


def column(driver: Any, index: int) -> list[str]:
    return js(
        driver,
        f"return Array.from(document.querySelectorAll('#task-table tbody tr'))"
        f".map(r => r.cells[{index}].dataset.v)",
    )


def wait_open(driver: Any) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 10).until(lambda d: d.execute_script(OPEN))


@pytest.mark.parametrize("name", ["clinical", "adversarial", "hostile"])
def test_report_opens_without_console_errors(
    driver: Any, reports: dict[str, tuple[StoredRun, Path]], name: str
) -> None:
    stored, path = reports[name]
    driver.get(path.as_uri())
    tasks = stored.run.summary.tasks
    # the script ran (it writes the count) and found every row
    count = js(driver, "return document.getElementById('task-count').textContent")
    assert count == f"{tasks} of {tasks} tasks shown"
    assert errors(driver) == []


def test_task_table_sorts_and_filters(
    driver: Any, reports: dict[str, tuple[StoredRun, Path]]
) -> None:
    from selenium.webdriver.common.by import By

    stored, path = reports["clinical"]
    open_page(driver, path)
    heads = driver.find_elements(By.CSS_SELECTOR, "#task-table thead th button")
    passed = heads[3]
    passed.click()
    rates = [float(v) for v in column(driver, 3)]
    assert rates == sorted(rates) and rates[0] < rates[-1]
    assert passed.find_element(By.XPATH, "..").get_attribute("aria-sort") == "ascending"
    passed.click()
    assert [float(v) for v in column(driver, 3)] == sorted(rates, reverse=True)
    heads[0].click()
    ids = column(driver, 0)
    assert ids == sorted(ids) and len(ids) == stored.run.summary.tasks
    box = driver.find_element(By.ID, "task-filter")
    box.send_keys("metformin")
    visible = js(
        driver,
        "return Array.from(document.querySelectorAll('#task-table tbody tr'))"
        ".filter(r => !r.classList.contains('hidden')).map(r => r.cells[0].dataset.v)",
    )
    assert visible == ["metformin-egfr-review"]
    box.clear()
    box.send_keys(" ")  # an input event with an empty needle shows every row again
    driver.find_element(By.CSS_SELECTOR, "#task-status option[value=violations]").click()
    shown = js(
        driver,
        "return Array.from(document.querySelectorAll('#task-table tbody tr'))"
        ".filter(r => !r.classList.contains('hidden')).map(r => r.cells[0].dataset.v)",
    )
    expected = {v.task_id for v in stored.run.summary.safety_violations.trials}
    assert set(shown) == expected
    assert errors(driver) == []


def test_a_trace_opens_with_its_steps_and_checks(
    driver: Any, reports: dict[str, tuple[StoredRun, Path]]
) -> None:
    from selenium.webdriver.common.by import By

    stored, path = reports["clinical"]
    open_page(driver, path)
    chip = driver.find_element(By.CSS_SELECTOR, "#task-table a.chip.failed")
    task = chip.find_element(By.XPATH, "../..").find_element(By.TAG_NAME, "td").text
    trial_no = int(chip.text)
    chip.click()
    wait_open(driver)
    trace = stored.trace(task, trial_no)
    result = next(r for r in stored.run.results if (r.task_id, r.trial) == (task, trial_no))
    title = driver.find_element(By.ID, "trace-title").text
    assert title == f"{task} · trial {trial_no}"
    steps = driver.find_elements(By.CSS_SELECTOR, "#trace-body li.step")
    assert [s.get_attribute("id") for s in steps] == [f"step-{e.seq}" for e in trace.events]
    checks = driver.find_elements(By.CSS_SELECTOR, "#trace-body li.check")
    assert len(checks) == len(result.checks)
    failed = {c.name for c in result.checks if not c.passed}
    shown = [c.find_element(By.TAG_NAME, "strong").text for c in checks]
    assert set(shown[: len(failed)]) == failed  # failed ones first
    body = driver.find_element(By.ID, "trace-body").text
    prompt = next(t.task.prompt for t in stored.suite.tasks if t.id == task)
    assert prompt.split("\n")[0] in body
    # From a failed check to the step its evidence names.
    go = driver.find_elements(By.CSS_SELECTOR, "#trace-body li.check.failed button.goto")
    assert go, "a failed check of this trial points at a step"
    seq = go[0].text.removeprefix("step ")
    go[0].click()
    focused = js(driver, "return Array.from(document.querySelectorAll('.step.focus'), s => s.id)")
    assert focused == [f"step-{seq}"]
    driver.find_element(By.ID, "trace-close").click()
    assert js(driver, OPEN) is False
    assert js(driver, "return location.hash") == ""
    assert errors(driver) == []


def test_hostile_tool_output_executes_nothing(
    driver: Any, reports: dict[str, tuple[StoredRun, Path]]
) -> None:
    from selenium.webdriver.common.by import By

    stored, path = reports["hostile"]
    for trial in range(len(stored.run.results)):
        open_page(driver, path, f"#trace-{trial}")
        wait_open(driver)
        body = driver.find_element(By.ID, "trace-body")
        # The payload is on the page, as text, everywhere the agent or tool put it...
        text = body.text
        assert f"<script>{PWN}</script>" in text and f'onerror="{PWN}"' in text
        assert text.count("click me") >= 3  # prompt, tool result, state change, answer
        for pre in body.find_elements(By.TAG_NAME, "pre"):
            pre.click()
        # ...and none of it became an element, a handler or a link that runs anything.
        assert js(driver, "return typeof window.__pwned") == "undefined"
        assert js(driver, "return document.querySelectorAll('img, iframe, object').length") == 0
        assert js(driver, "return document.scripts.length") == len(stored.run.results) + 1
        hrefs = js(
            driver,
            "return Array.from(document.querySelectorAll('[href]'), a => a.getAttribute('href'))",
        )
        assert all(h.startswith("#") for h in hrefs)
        assert errors(driver) == []
    tag = js(
        driver, "return document.querySelector('#task-table tbody td:nth-child(2)').textContent"
    )
    assert f"<b>{PWN}</b>" in tag


def test_a_trace_with_nan_latency_and_unmeasured_usage_opens(driver: Any, tmp_path: Path) -> None:
    """A store written before usage was checked (or by another tool) can hold NaN and
    infinite figures in its JSON; usage nothing reported is null. The viewer shows them as "not
    measured" and every trace still opens (issue 18 item 4, issue 16 item 14)."""
    import math
    from dataclasses import replace

    from proctor.core.results import Usage
    from proctor.core.trace import Trace, TraceEvent
    from proctor.store.export import store_run

    store = Store(tmp_path / "p.db")
    stored = run_hostile(store, trials=1)
    [result] = stored.run.results
    trace = stored.trace(result.task_id, 0)
    odd_call = TraceEvent(
        len(trace.events) + 1, 0.0, "model_call",
        {"model": "m", "input_tokens": 5, "cost_usd": math.inf, "latency_s": math.nan},
    )  # fmt: skip
    run_id = "oddfigures01"
    store.create_run(run_id, {**stored.run.manifest.to_json(), "run_id": run_id})
    for trial, usage in ((0, Usage(cost_usd=math.inf, input_tokens=5)), (1, Usage())):
        odd = replace(result, run_id=run_id, trial=trial, usage=usage)
        events = Trace(trace.trial_id, trace.trace_id, [*trace.events, odd_call])
        store.write_trial(odd, events, "answer", None)
    store.finish_run(run_id, "completed", stored.run.summary or {})
    run = store_run(store, run_id)
    path = tmp_path / "odd.html"
    write_html(path, gather(run, suite=stored.suite), lambda t, n: store.trace(run_id, t, n)[0])
    for trial in (0, 1):
        open_page(driver, path, f"#trace-{trial}")
        wait_open(driver)
        facts = js(driver, "return document.querySelector('#trace-body .facts').textContent")
        assert "not measured" in facts and "NaN" not in facts, facts
        steps = js(driver, "return document.querySelector('#trace-body').textContent")
        assert "model call: m" in steps
        assert errors(driver) == []
