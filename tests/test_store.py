"""The SQLite store: round trips, one row per trial, run lookup, manifests, interruption."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import proctor
from proctor import AgentInput, Plan, Runner, ScriptedAgent, Step, Store, Toolbox, load_suite
from proctor.core.jsonvalues import digest
from proctor.run import TrialSpec, run_trial, trial_seed
from proctor.store import RunNotFound
from store_sql import sql

MINI = Path(__file__).parent / "fixtures" / "mini"
SUITE = load_suite(MINI)
HEX16 = re.compile(r"[0-9a-f]{16}")

PLANS = {
    "read-item": Plan(steps=(Step("items.get", {"item_id": "a"}),), answer="Item a is red."),
    "paint-item": Plan(
        steps=(
            Step(ask="Shall I paint item a green?"),
            Step("items.set", {"item_id": "a", "field": "colour", "value": "green"}),
        ),
        answer="Item a is now green.",
    ),
    "dated-item": Plan(steps=(Step("items.get", {"item_id": "d"}),), answer="Made 2024-01-05."),
    "count-item": Plan(
        steps=(Step("items.bump", {"item_id": "c"}), Step("items.bump", {"item_id": "c"})),
        answer="Done.",
    ),
}


def agent(**kwargs: Any) -> ScriptedAgent:
    return ScriptedAgent(PLANS, name="scripted-test", version="7", **kwargs)


def as_json(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def count(store: Store, table: str) -> int:
    return sql(store).execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


def stored_events(store: Store) -> int:
    """Trace events stored, over every trial (a trial's are one row, one JSON array)."""
    query = "SELECT COALESCE(SUM(json_array_length(events)), 0) FROM traces"
    return sql(store).execute(query).fetchone()[0]


def one_trial(task_id: str = "paint-item", trial: int = 0, run_id: str = "r1") -> Any:
    suite_task = next(t for t in SUITE.tasks if t.id == task_id)
    spec = TrialSpec(run_id, suite_task.task, suite_task.domain, trial, trial_seed(0, task_id, 0))
    return asyncio.run(run_trial(spec, agent(), 5.0))


# -- round trips -------------------------------------------------------------------------------


def test_trial_trace_and_checks_round_trip(tmp_path: Path) -> None:
    record = one_trial()
    assert record.result.status == "passed"
    kinds = {e.kind for e in record.trace.events}
    assert {"confirmation", "state_change", "tool_result", "model_call", "answer"} <= kinds
    assert record.result.checks and record.outcome.ledger

    store = Store(tmp_path / "p.db")
    store.create_run("r1", {"run_id": "r1"})
    store.write_trial(record.result, record.trace, record.answer, record.outcome)

    store2 = Store(tmp_path / "p.db")  # a second connection reads what was committed
    [back] = list(store2.trial_results("r1"))
    assert as_json(back.to_dict()) == as_json(record.result.to_dict())
    assert [c.name for c in back.checks] == [c.name for c in record.result.checks]
    trace, answer, outcome = store2.trace("r1", "paint-item", 0)
    assert trace.trace_id == record.trace.trace_id
    assert trace.trial_id == "paint-item#0"
    assert [e.to_dict() for e in trace.events] == as_json(
        [e.to_dict() for e in record.trace.events]
    )
    assert answer == record.answer == "Item a is now green."
    assert outcome is not None
    assert outcome.to_dict() == as_json(record.outcome.to_dict())
    assert outcome.final_state["items"]["a"]["colour"] == "green"
    with pytest.raises(RunNotFound):
        store2.trace("r1", "paint-item", 1)


def test_a_runs_trials_round_trip(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.db")
    report = Runner(SUITE, agent(), trials=2, store=store).run()
    stored = list(store.trial_results(report.run_id))
    assert [(r.task_id, r.trial) for r in stored] == sorted(
        (r.task_id, r.trial) for r in report.results
    )
    expected = {(r.task_id, r.trial): as_json(r.to_dict()) for r in report.results}
    assert {(r.task_id, r.trial): as_json(r.to_dict()) for r in stored} == expected
    assert {r.status for r in stored} == {"passed"}
    row = store.run(report.run_id)
    assert row["status"] == "completed"
    assert row["summary"] == report.summary.to_json()
    assert row["manifest"] == as_json(report.manifest.to_json())
    assert store.runs()[0]["run_id"] == report.run_id


def test_the_same_trial_cannot_be_written_twice(tmp_path: Path) -> None:
    record = one_trial()
    store = Store(tmp_path / "p.db")
    store.create_run("r1", {})
    store.write_trial(record.result, record.trace, record.answer, record.outcome)
    with pytest.raises(sqlite3.IntegrityError):
        store.write_trial(record.result, record.trace, record.answer, record.outcome)
    assert count(store, "trials") == 1
    assert stored_events(store) == len(record.trace.events)
    assert count(store, "checks") == len(record.result.checks)
    # The failed write was rolled back: the store still accepts the next trial.
    other = one_trial(trial=1)
    store.write_trial(other.result, other.trace, other.answer, other.outcome)
    assert [r.trial for r in store.trial_results("r1")] == [0, 1]


def test_a_trial_needs_its_run(tmp_path: Path) -> None:
    record = one_trial(run_id="missing")
    store = Store(tmp_path / "p.db")
    with pytest.raises(sqlite3.IntegrityError):
        store.write_trial(record.result, record.trace, record.answer, record.outcome)
    assert count(store, "trials") == stored_events(store) == 0


# -- finding runs ------------------------------------------------------------------------------


def test_run_by_prefix_and_latest(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.db")
    for run_id in ("abc123", "abd456", "xyz789"):
        store.create_run(run_id, {"run_id": run_id})
    assert store.run("abc")["run_id"] == "abc123"
    assert store.run("abd456")["manifest"] == {"run_id": "abd456"}
    assert store.run("abd456")["status"] == "running"
    assert store.run("latest")["run_id"] == "xyz789"
    with pytest.raises(RunNotFound, match="2 runs"):
        store.run("ab")
    with pytest.raises(RunNotFound, match="no run"):
        store.run("nope")
    with pytest.raises(RunNotFound):
        store.run("%")  # not a wildcard for every run
    assert [r["run_id"] for r in store.runs()] == ["xyz789", "abd456", "abc123"]


def test_latest_in_an_empty_store(tmp_path: Path) -> None:
    with pytest.raises(RunNotFound, match="no run"):
        Store(tmp_path / "p.db").run("latest")


def test_exact_run_id_with_underscore(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.db")
    store.create_run("base_1", {})
    store.create_run("base-1", {})
    assert store.run("base_1")["run_id"] == "base_1"


# -- the manifest ------------------------------------------------------------------------------


def test_run_row_holds_the_manifest(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.db")
    runner = Runner(SUITE, agent(), trials=1, seed=11, store=store, agent_ref="x.py:agent")
    report = runner.run()
    m = store.run(report.run_id[:6])["manifest"]
    assert m["run_id"] == report.run_id
    assert (m["agent"]["name"], m["agent"]["version"]) == ("scripted-test", "7")
    assert m["agent"]["ref"] == "x.py:agent"
    assert m["model"] == "scripted-model"
    for key in ("prompt_hash", "tool_schema_hash", "policy_hash"):
        assert HEX16.fullmatch(m[key]), key
    assert m["policy_hash"] != digest([])  # the domain's authorizer is part of it
    assert m["suite"]["digest"] == SUITE.digest
    assert m["suite"]["tasks"] == 4
    assert m["suite"]["task_digests"] == {t.id: t.task.digest for t in SUITE.tasks}
    assert {"outcome", "trajectory", "answer", "safety", "budget"} <= set(m["grader_versions"])
    assert m["proctor_version"] == proctor.__version__
    assert m["seed"] == 11
    assert m["trials"] == 1
    assert m["host"]["name"] == socket.gethostname()
    assert "judge_model" in m


def test_manifest_hashes_follow_what_they_hash() -> None:
    base = Runner(SUITE, agent()).manifest
    prompted_agent = agent()
    prompted_agent.system_prompt = "You are a careful clerk."  # type: ignore[attr-defined]
    prompted = Runner(SUITE, prompted_agent).manifest
    assert prompted.prompt_hash != base.prompt_hash
    assert prompted.tool_schema_hash == base.tool_schema_hash
    assert prompted.policy_hash == base.policy_hash
    fewer = Runner(SUITE.select(ids=["read-item"]), agent()).manifest
    assert fewer.suite.digest != base.suite.digest
    assert fewer.prompt_hash != base.prompt_hash


# -- interruption ------------------------------------------------------------------------------


class StallsFromTrial2:
    """Trials 0 and 1 finish; trial 2 waits forever (until the run is cancelled)."""

    name = "staller"

    async def run(self, input: AgentInput, toolbox: Toolbox) -> str:
        if input.trial >= 2:
            await asyncio.Event().wait()
        got = await toolbox.call("items.get", {"item_id": "a"})
        return f"Item a is {got.value['colour']}."


def test_interrupted_run_keeps_finished_trials(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.db")
    runner = Runner(
        SUITE.select(ids=["read-item"]),
        StallsFromTrial2(),
        trials=5,
        concurrency=1,
        timeout_s=None,
        store=store,
    )
    finished: list[int] = []

    async def drive() -> None:
        def progress(result: Any) -> None:
            finished.append(result.trial)
            if len(finished) == 2:
                run_task.cancel()

        run_task = asyncio.ensure_future(runner.run_async(progress))
        with pytest.raises(asyncio.CancelledError):
            await run_task

    asyncio.run(drive())
    assert sorted(finished) == [0, 1]
    row = store.run(runner.run_id)
    assert row["status"] == "interrupted"
    assert [(r.trial, r.status) for r in store.trial_results(runner.run_id)] == [
        (0, "passed"),
        (1, "passed"),
    ]
    summary = row["summary"]
    assert (summary["status"], summary["trials"], summary["missing_trials"]) == (
        "interrupted",
        2,
        3,
    )
    assert summary["valid"] is False
    trace, answer, _ = store.trace(runner.run_id, "read-item", 1)
    assert answer == "Item a is red."
    assert any(e.kind == "tool_result" for e in trace.events)


def test_graded_trials_give_each_trial_its_own_events_in_order(tmp_path: Path) -> None:
    """Events are built over a whole read at once and cut per trial: a trial without
    events between two with events gets none, and no two trials share an event list."""
    from proctor.core.results import TrialResult
    from proctor.core.trace import Trace, TraceEvent

    store = Store(tmp_path / "s.db")
    store.create_run("r1", {"run_id": "r1"})
    written = {}
    for trial, count in enumerate([3, 0, 2, 2, 0]):
        events = [
            TraceEvent(seq, 0.5 * seq, "message", {"n": trial, "seq": seq}) for seq in range(count)
        ]
        result = TrialResult("r1", "t", trial, trial, "passed", trace_id=f"tr{trial}")
        store.write_trial(result, Trace(f"t#{trial}", f"tr{trial}", events), "", None)
        written[trial] = [e.to_dict() for e in events]
    for batch in (2, 5):  # the one without events last in a read, and in its middle
        read = list(store.graded_trials("r1", (), batch=batch))
        assert [s.result.trial for s in read] == list(written)
        assert {s.result.trial: [e.to_dict() for e in s.trace.events] for s in read} == written
        lists = [id(s.trace.events) for s in read]
        assert len(set(lists)) == len(lists)
    store.close()


def test_graded_trials_give_each_trial_its_own_outcome(tmp_path: Path) -> None:
    """Outcomes are decoded once per distinct text: trials ending alike share one, the
    others keep theirs, and a trial without one has none."""
    from proctor.core.outcome import LedgerEntry, Outcome
    from proctor.core.results import TrialResult
    from proctor.core.trace import Trace

    store = Store(tmp_path / "s.db")
    store.create_run("r1", {"run_id": "r1"})
    cancelled = Outcome({"orders": {"A-1": "cancelled"}}, [LedgerEntry(3, "cancel", {"id": 1})])
    kept = Outcome({"orders": {"A-1": "placed"}})
    written = [cancelled, kept, cancelled, None, kept]
    for trial, outcome in enumerate(written):
        result = TrialResult("r1", "t", trial, trial, "passed", trace_id=f"tr{trial}")
        store.write_trial(result, Trace(f"t#{trial}", f"tr{trial}", []), "", outcome)
    read = [s.outcome for s in store.graded_trials("r1", ())]
    assert [o and o.to_dict() for o in read] == [o and o.to_dict() for o in written]
    assert read[0] is read[2] and read[1] is read[4] and read[0] is not read[1]
    store.close()


def test_a_trace_that_cannot_be_decoded_is_a_damaged_store(tmp_path: Path) -> None:
    """Each trial is decoded as it is handed on, after the read: a trace row that is
    not JSON is still StoreDamaged naming the run, never a bare JSON error."""
    from proctor.core.results import TrialResult
    from proctor.core.trace import Trace, TraceEvent
    from proctor.store import StoreDamaged

    store = Store(tmp_path / "s.db")
    store.create_run("r1", {"run_id": "r1"})
    for trial in range(3):
        result = TrialResult("r1", "t", trial, trial, "passed", trace_id=f"tr{trial}")
        events = [TraceEvent(0, 0.0, "message", {"n": trial})]
        store.write_trial(result, Trace(f"t#{trial}", f"tr{trial}", events), "", None)
    db = sql(store)
    db.execute(
        "UPDATE traces SET events = '[[0, 0.0, \"message\", {' WHERE trial_rowid ="
        " (SELECT id FROM trials WHERE trial = 1)"
    )
    db.commit()
    with pytest.raises(StoreDamaged, match="run r1 is unreadable"):
        list(store.graded_trials("r1", ()))
    store.close()
