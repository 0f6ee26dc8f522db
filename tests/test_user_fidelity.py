"""The simulated user's fidelity judged (proctor.run.fidelity): the shipped rubric and its
calibration set, the sampling, and `sim_error` from a calibrated judge, through the real
CLI with the loopback user models of tests/sim_users.py and the simulated judges of
examples/support/fidelity."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import proctor
from proctor.core.trace import Trace, TraceEvent
from proctor.judge.views import conversation_turns, transcript
from proctor.run.fidelity import CHECK, RUBRIC_PATH, fidelity_rubric, sampled
from proctor.store import Store

ROOT = Path(__file__).resolve().parents[1]
SUPPORT = ROOT / "examples" / "support"
FIDELITY = SUPPORT / "fidelity"
TASK = "cancel-eligible-order"
USERS = str(ROOT / "tests" / "sim_users.py")
CAREFUL = f"{FIDELITY}/judges.py:careful"
LENIENT = f"{FIDELITY}/judges.py:lenient"


def calibrate(store: Path, judge: str) -> subprocess.CompletedProcess[str]:
    return proctor(
        "calibrate",
        str(RUBRIC_PATH),
        "--labels",
        str(FIDELITY / "labels.csv"),
        "--items",
        str(FIDELITY / "items.yaml"),
        "--judge",
        judge,
        "--store",
        str(store),
    )


def run(
    store: Path, user: str, *extra: str, agent: str = f"{SUPPORT}/agents.py:conversational"
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    out = store.with_suffix(".json")
    done = proctor(
        "run",
        str(SUPPORT),
        "--task",
        TASK,
        "--agent",
        agent,
        "--user-model",
        f"{USERS}:{user}",
        "--store",
        str(store),
        "--json",
        str(out),
        *extra,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done, json.loads(out.read_text()) if out.exists() else {}


def results(store: Path, run_id: str) -> list[Any]:
    with Store(store) as db:
        return sorted(db.trial_results(run_id), key=lambda r: r.trial)


def fidelity_checks(result: Any) -> list[Any]:
    return [c for c in result.checks if c.name == CHECK]


def test_the_calibration_set_is_committed_as_generated() -> None:
    script = FIDELITY / "make_calibration.py"
    done = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    items = (FIDELITY / "items.yaml").read_text()
    assert items.count("\n- id: ") + items.startswith("- id: ") >= 60
    for kind in (
        "faithful",
        "ends_early",
        "leaks",
        "invents_id",
        "rescues",
        "swaps_roles",
        "restarts",
        "discloses",
        "gives_up",
    ):
        assert f"slice: {kind}\n" in items, kind


def test_the_careful_judge_is_accepted_and_the_lenient_one_refused(tmp_path: Path) -> None:
    careful = calibrate(tmp_path / "c.db", CAREFUL)
    assert careful.returncode == 0, careful.stderr
    assert "ACCEPTED" in careful.stdout
    lenient = calibrate(tmp_path / "c.db", LENIENT)
    assert "REFUSED" in lenient.stdout and "false-pass" in lenient.stdout


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store where the careful judge is calibrated on the fidelity rubric."""
    store = tmp_path_factory.mktemp("fidelity") / "p.db"
    assert calibrate(store, CAREFUL).returncode == 0
    return store


def test_a_user_that_gives_up_is_sim_error_by_the_calibrated_judge(
    calibrated: Path, tmp_path: Path
) -> None:
    """No guard can tell a plausible "never mind" at the first turn; the agent cancels
    anyway and the trial would pass. The calibrated fidelity judge sees the user gave up
    before the agent could act: `sim_error`, out of pass rates, the run invalid."""
    store = tmp_path / "p.db"
    store.write_bytes(calibrated.read_bytes())
    done, summary = run(
        store, "gives_up", "--user-fidelity", CAREFUL, "--fidelity-sample", "1", "--trials", "2"
    )
    assert summary["statuses"]["sim_error"] == 2, summary["statuses"]
    assert summary["user_model"]["fidelity_judged"] == 2
    assert summary["user_model"]["fidelity_failed"] == 2
    assert summary["manifest"]["user_fidelity"]["calibrated"] is True
    for result in results(store, summary["run_id"]):
        (check,) = fidelity_checks(result)
        assert not check.passed and check.severity is None
        assert "fidelity judge scored it 1" in (result.error or "")
        assert result.metrics["judge_calls"] + result.metrics["judge_cache_hits"] == 1
    assert done.returncode != 0 and "RUN INVALID" in done.stdout


def test_an_uncalibrated_fidelity_judge_is_shown_and_decides_nothing(tmp_path: Path) -> None:
    done, summary = run(
        tmp_path / "p.db", "gives_up", "--user-fidelity", CAREFUL, "--fidelity-sample", "1"
    )
    assert done.returncode == 0, done.stderr
    assert summary["statuses"]["passed"] == 1
    assert "its checks are shown and never make a trial sim_error" in done.stderr
    (result,) = results(tmp_path / "p.db", summary["run_id"])
    (check,) = fidelity_checks(result)
    assert not check.passed and check.evidence["calibrated"] is False
    assert result.score == 1.0  # a check of the user, not in the agent's partial credit
    assert CHECK not in summary["per_task"][0]["failed_checks"]


def test_every_failed_trial_is_judged_and_passed_ones_by_sample(
    calibrated: Path, tmp_path: Path
) -> None:
    """With the sample at 0, a passed trial is never judged and a failed one always is;
    a faithful user on a failed trial leaves it failed (the agent's failure, `partial`:
    it looked the order up and never cancelled it)."""
    store = tmp_path / "p.db"
    store.write_bytes(calibrated.read_bytes())
    _, passed = run(store, "good", "--user-fidelity", CAREFUL, "--fidelity-sample", "0")
    assert passed["statuses"]["passed"] == 1
    assert not fidelity_checks(results(store, passed["run_id"])[0])
    _, failed = run(
        store,
        "good",
        "--user-fidelity",
        CAREFUL,
        "--fidelity-sample",
        "0",
        agent=f"{USERS}:asks_only",
    )
    assert failed["statuses"]["partial"] == 1, failed["statuses"]  # failed, some parts done
    (check,) = fidelity_checks(results(store, failed["run_id"])[0])
    assert check.passed and check.evidence["score"] == 4


def test_user_fidelity_needs_a_user_model(tmp_path: Path) -> None:
    done = proctor(
        "run",
        str(SUPPORT),
        "--agent",
        f"{SUPPORT}/agents.py:scripted",
        "--user-fidelity",
        CAREFUL,
        "--store",
        str(tmp_path / "p.db"),
    )
    assert done.returncode == 2
    assert "--user-fidelity judges a model user: it goes with --user-model" in done.stderr
    assert "Traceback" not in done.stderr


@given(
    task=st.text(min_size=1, max_size=20),
    trial=st.integers(0, 1000),
    low=st.floats(0, 1),
    high=st.floats(0, 1),
)
def test_the_sample_is_seeded_by_task_and_trial_and_grows_with_the_rate(
    task: str, trial: int, low: float, high: float
) -> None:
    low, high = sorted((low, high))
    assert not sampled(task, trial, 0.0) and sampled(task, trial, 1.0)
    assert sampled(task, trial, low) <= sampled(task, trial, high)
    assert sampled(task, trial, low) == sampled(task, trial, low)


def test_the_sample_takes_its_share_of_trials() -> None:
    taken = sum(sampled("task", trial, 0.1) for trial in range(20_000)) / 20_000
    assert 0.09 < taken < 0.11


def test_the_transcript_is_what_each_side_said_with_the_stop_marked() -> None:
    def event(seq: int, kind: str, data: dict[str, Any]) -> TraceEvent:
        return TraceEvent(seq=seq, t=0.0, kind=kind, data=data)

    events = [
        event(0, "message", {"role": "user", "content": "Cancel A-100."}),
        event(1, "message", {"role": "assistant", "to": "user", "content": "Email?"}),
        event(2, "note", {"user_sim": {"stop": True, "stop_reason": "declined"}}),
        event(3, "message", {"role": "user", "content": "Never mind."}),
        event(4, "answer", {"text": "Nothing done."}),
    ]
    trace = Trace("t#0", "x", events)
    assert transcript(conversation_turns(trace)) == (
        "User: Cancel A-100.\nAgent: Email?\n"
        "User [ends the conversation: declined]: Never mind.\n"
        "Agent (final answer): Nothing done."
    )
    assert conversation_turns(Trace("t#0", "x", [events[0], events[1]])) == []
    assert fidelity_rubric().subject == "user_turns"


def test_regrade_keeps_the_fidelity_check_and_its_sim_error(
    calibrated: Path, tmp_path: Path
) -> None:
    store = tmp_path / "p.db"
    store.write_bytes(calibrated.read_bytes())
    _, summary = run(store, "gives_up", "--user-fidelity", CAREFUL, "--fidelity-sample", "1")
    out = tmp_path / "regraded.json"
    done = proctor("regrade", summary["run_id"], "--store", str(store), "--json", str(out))
    assert "Traceback" not in done.stderr, done.stderr
    again = json.loads(out.read_text())
    assert again["statuses"]["sim_error"] == 1
    (result,) = results(store, again["run_id"])
    (check,) = fidelity_checks(result)
    assert not check.passed and "fidelity judge" in (result.error or "")
