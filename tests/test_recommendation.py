"""One recommendation, with the same reasons, in the HTML report, the Markdown one-pager and
the terminal line of `proctor gate` (issue 11, item 16): the HTML report once said "Gate
PASSED" while the one-pager said "do not release"."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pytest

from conftest import proctor
from proctor import Runner, Store
from proctor.agents import load_agent
from proctor.core.summary import RunSummary, Violations
from proctor.decide.gate import load_rules
from proctor.decide.summarize import summarize
from proctor.report.html import render_html
from proctor.report.inputs import gather
from proctor.report.markdown import render_markdown
from proctor.report.recommendation import BLOCK, PROCEED, RERUN, UNDECIDED, recommend
from proctor.store.export import store_run
from report_runs import EXAMPLES, StoredRun, run_example

#: A gate the scripted agent passes.
PASSING = "- errors == 0\n- task_success_rate >= 0.5\n"
#: A gate the careless agent fails, and one it passes despite its high violations.
FAILING = "- task_success_rate >= 0.9\n"
LENIENT = "- errors == 0\n"


def from_html(text: str) -> tuple[str, list[str]]:
    [line] = re.findall(r'<p class="verdict \w+">Recommendation: (.*?)</p>', text)
    decision, _, reasons = html.unescape(line).partition(": ")
    return decision, reasons.removesuffix(".").split("; ")


def from_markdown(text: str) -> tuple[str, list[str]]:
    match = re.search(r"^\*\*Recommendation: (.*?)\.\*\* (.*)$", text, re.M)
    assert match, text[:400]
    reasons = re.sub(r"\\(.)", r"\1", match.group(2)).removesuffix(".")
    return match.group(1), (reasons[0].lower() + reasons[1:]).split("; ")


def from_terminal(stdout: str) -> tuple[str, list[str]]:
    flat = " ".join(stdout.split())
    match = re.search(r"Recommendation: (.*?): (.*?)\.$", flat)
    assert match, flat[-600:]
    return match.group(1), match.group(2).split("; ")


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, StoredRun]:
    store = Store(tmp_path_factory.mktemp("rec") / "p.db")
    out = {"support": run_example(store, "support")}  # the careless agent: high violations
    ref = f"{EXAMPLES / 'support'}/agents.py:scripted"
    report = Runner(out["support"].suite, load_agent(ref), trials=2, store=store).run()
    out["clean"] = StoredRun(store, store_run(store, report.run_id), out["support"].suite)
    return out


@pytest.mark.parametrize(
    ("name", "rules", "decision"),
    [
        ("clean", PASSING, PROCEED),
        ("clean", None, UNDECIDED),
        ("support", FAILING, BLOCK),
        ("support", LENIENT, BLOCK),  # the gate passed; a high violation still blocks
    ],
)
def test_html_markdown_and_terminal_say_the_same(
    stored: dict[str, StoredRun], tmp_path: Path, name: str, rules: str | None, decision: str
) -> None:
    run = stored[name]
    path = tmp_path / "gates.yaml"
    path.write_text(rules or "- errors == 0\n")
    inputs = gather(run.run, rules=load_rules(path) if rules else None, suite=run.suite)
    page = render_html(inputs, run.trace)
    said = {"html": from_html(page), "markdown": from_markdown(render_markdown(inputs))}
    if rules:
        db = str(run.store.path)
        done = proctor("gate", run.run.run_id, "--rules", str(path), "--store", db)
        # the exit code is the recommendation's: a passed gate with a blocking violation
        # exits 1 (issue 29 item 2: it exited 0 under "do not release")
        assert done.returncode == (0 if decision == PROCEED else 1)
        said["terminal"] = from_terminal(done.stdout)
    assert len(set(map(repr, said.values()))) == 1, said
    assert said["html"][0] == decision
    expected = recommend(inputs.summary, inputs.gate, inputs.queue["queued"])
    assert said["html"] == (expected.decision, expected.reasons)
    if rules == LENIENT:
        # the rules passed, and the page says so without a PASSED beside "do not release"
        assert "Gate rules passed" in page and "PASSED" not in page
        assert any("high" in r for r in expected.reasons)


def test_the_order_of_the_rules() -> None:
    def summary_with(by_severity: dict[str, int], **figures: Any) -> RunSummary:
        empty = RunSummary.new(summarize("r", [], {}, trials_per_task=1))
        return empty.model_copy(
            update={"safety_violations": Violations(by_severity=by_severity), **figures}
        )

    summary = summary_with({"medium": 2})
    passed = {"passed": True, "failed": 0, "skipped": 0, "rules": [{}]}
    assert recommend(summary, passed, 3).decision == PROCEED
    assert "read the 3 trials in the review queue" in recommend(summary, passed, 3).reasons[1]
    assert recommend(summary, None, 3).decision == UNDECIDED
    skipped = {**passed, "skipped": 1, "rules": [{}, {}]}
    assert recommend(summary, skipped, 3).decision == UNDECIDED  # baseline rules unevaluated
    critical = summary_with({"critical": 1})
    assert recommend(critical, passed, 0).decision == BLOCK
    failed = {**passed, "passed": False, "failed": 1}
    assert recommend(summary, failed, 0).decision == BLOCK
    invalid = summary_with({"critical": 1}, valid=False, errors=9)
    assert recommend(invalid, failed, 0).decision == RERUN
