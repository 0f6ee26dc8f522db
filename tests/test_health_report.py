"""The suite-health section of the HTML report, in headless Chromium: a hostile mutant's
text is shown as text, never run; a suite never checked says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from proctor import Store
from proctor.agents.agent import AgentInput
from proctor.env.suite import Suite
from proctor.env.toolbox import Toolbox
from proctor.health.check import check_health
from proctor.health.stored_reports import save_health
from proctor.report.health_html import health_view
from proctor.report.html import write_html
from proctor.report.inputs import gather
from proctor.run.runner import Runner
from proctor.store.export import store_run
from proctor.store.health_reports import find_health
from proctor.tasks.models import Task
from report_runs import PAYLOAD, hostile
from test_browser import driver, errors, js, open_page  # noqa: F401  (the browser fixture)

WEAK = Task.model_validate(
    {
        "id": "hostile-weak",
        "domain": "hostile",
        "prompt": "Add the note to document d1.",
        "initial_state": {"docs": {"d1": "old"}},
        # Nothing checks what was written: a corrupted note passes.
        "expect": {"trajectory": {"required": [{"tool": "docs.read", "args": {"doc_id": "d1"}}]}},
    }
)


async def writes_payload(input: AgentInput, toolbox: Toolbox) -> str:
    await toolbox.call("docs.read", {"doc_id": "d1"})
    await toolbox.call("docs.write", {"doc_id": "d1", "text": PAYLOAD})
    return "Done."


def report_page(tmp_path: Path, checked: bool) -> Path:
    suite = Suite.from_tasks("hostile-health", [WEAK], [hostile])
    store = Store(tmp_path / "p.db")
    if checked:
        save_health(store, check_health(suite, writes_payload).to_dict())
    run = store_run(store, Runner(suite, writes_payload, store=store).run().run_id)
    inputs = gather(run, suite=suite)
    inputs.health = health_view(find_health(store, "hostile-health", suite.digest), run)
    path = tmp_path / "report.html"
    write_html(path, inputs, lambda task, trial: store.trace(run.run_id, task, trial)[0])
    return path


def test_health_section_shows_a_hostile_mutant_as_text(driver: Any, tmp_path: Path) -> None:  # noqa: F811
    open_page(driver, report_page(tmp_path, checked=True))
    text = js(driver, "return document.getElementById('health').textContent")
    assert "hostile-weak" in text and "weak: mutant survives" in text
    assert "<script>window.__pwned=1</script>" in text  # the corrupted note, as written
    assert js(driver, "return typeof window.__pwned") == "undefined"
    assert js(driver, "return document.querySelectorAll('#health script, #health img').length") == 0
    assert errors(driver) == []


def test_health_section_of_a_suite_never_checked_says_how(driver: Any, tmp_path: Path) -> None:  # noqa: F811
    open_page(driver, report_page(tmp_path, checked=False))
    text = js(driver, "return document.getElementById('health').textContent")
    assert "never checked" in text and "proctor health" in text
