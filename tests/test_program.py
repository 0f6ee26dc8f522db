"""The evaluation program's own figures: coverage, judge–human agreement, wall time,
production incidents first caught by the suite."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from proctor.cli import main
from proctor.core.results import Check, TrialResult
from proctor.env.suite import load_suite
from proctor.loop.program import (
    coverage,
    incidents_caught,
    judge_agreement,
    judge_verdicts,
)
from proctor.store import Store
from test_promote import promote_cancel

SUPPORT = Path(__file__).resolve().parents[1] / "examples" / "support"
#: The support agents that fix and repeat the careless cancel, as promotion tests use them.
PROMOTE_TESTS = Path(__file__).resolve().parent / "test_promote.py"


def invoke(*args: str) -> Any:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result


def test_coverage_counts_typed_sessions_whose_type_the_suite_has() -> None:
    figure = coverage([["refund"], ["refund", "vip"], ["shipping"], []], {"refund", "billing"})
    assert (figure["typed"], figure["covered"], figure["rate"]) == (3, 2, 2 / 3)
    assert figure["untested"] == ["shipping", "vip"]
    assert figure["by_tag"][0] == {"tag": "refund", "sessions": 2, "in_suite": True}
    assert coverage([[], []], {"x"})["rate"] is None


def test_judge_agreement_reads_judge_checks_and_human_labels() -> None:
    def trial(n: int, judge_passes: bool) -> TrialResult:
        return TrialResult(
            "r", "t", n, 0, "passed", checks=[Check("rubric", "judge", judge_passes)]
        )

    judged = judge_verdicts([trial(0, True), trial(1, False), trial(2, True), trial(3, False)])
    human = {("t", 0): True, ("t", 1): False, ("t", 2): False, ("t", 3): False}
    figure = judge_agreement(judged, human)
    assert (figure["trials"], figure["agreement"]) == (4, 0.75)
    assert figure["kappa"] == pytest.approx(0.5)
    assert judge_agreement(judged, {})["note"] == "no human labels for the run"
    assert judge_agreement({}, human)["note"] == "no judge checks in the run"


def test_a_promoted_failure_that_comes_back_is_caught_by_the_suite(tmp_path: Path) -> None:
    db, out = tmp_path / "p.db", tmp_path / "regression"
    careless = f"{SUPPORT / 'agents.py'}:careless"
    invoke("run", str(SUPPORT), "--agent", careless, "--store", str(db), "-q")
    assert promote_cancel(db, out).exit_code == 0
    suite = load_suite(out)
    with Store(db) as store:
        assert incidents_caught(store, suite)["caught"] == 0  # the source run came before
    time.sleep(1.1)  # promotion dates have one-second resolution: later runs are later
    invoke("run", str(out), "--agent", f"{PROMOTE_TESTS}:support_fixed", "--store", str(db), "-q")
    with Store(db) as store:
        assert incidents_caught(store, suite)["caught"] == 0  # the fix passes it
    invoke(
        "run",
        str(out),
        "--agent",
        f"{PROMOTE_TESTS}:support_careless",
        "--store",
        str(db),
        "-q",
    )
    with Store(db) as store:
        figure = incidents_caught(store, suite)
        latest = store.run("latest")["run_id"]
    assert figure["caught"] == 1 and figure["promoted_tasks"] == 1
    assert figure["production_incidents_caught"] == 0  # promoted from a live trial
    assert figure["tasks"][0]["first_caught_in"] == latest


def test_runs_record_their_wall_time_and_the_report_shows_the_program(tmp_path: Path) -> None:
    db, page = tmp_path / "p.db", tmp_path / "r.html"
    invoke(
        "run",
        str(SUPPORT),
        "--agent",
        f"{SUPPORT / 'agents.py'}:scripted",
        "--store",
        str(db),
        "-q",
    )
    with Store(db) as store:
        summary = store.run("latest")["summary"]
    assert summary["wall_time_s"] > 0
    invoke("report", "latest", "--html", str(page), "--store", str(db))
    html = page.read_text()
    assert 'id="program"' in html and "the suite's wall time" in html
    assert f"for {summary['trials']} trials" in html
    assert "no judge checks in the run" in html
