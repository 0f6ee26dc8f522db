"""The store and the summary at scale: indexed reads, streamed results, grouped commits.

Figures at a million trials are in benchmarks/ (store_scale.py, memory.py); these tests
pin down what makes them possible: every read a run needs is an index search (no scan of
the trials table, no sort), and the summary of the small streamed results equals the
summary of the full ones.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from proctor import Runner, Store, load_agent, load_suite
from proctor.decide.scorecard import summary_with_scorecard
from proctor.decide.summarize import DEFAULT_MAX_ERROR_RATE, Tally
from proctor.run.runner import task_infos
from proctor.store.sqlite import SCHEMA_VERSION
from store_sql import sql

FIXTURES = Path(__file__).parent / "fixtures"
MINI = FIXTURES / "mini"
SUITE = load_suite(MINI)


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, Any]:
    store = Store(tmp_path_factory.mktemp("scale") / "p.db")
    agent = load_agent(f"{FIXTURES / 'exec_agents.py'}:flaky")
    report = Runner(SUITE, agent, trials=8, seed=3, store=store).run()
    return store, report


class Plans:
    """Every query plan SQLite chooses for the store's SELECTs while in the block."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.plans: list[str] = []

    def __enter__(self) -> list[str]:
        self.saved = db = self.store._db
        plans = self.plans

        class Explaining:
            def __getattr__(self, name: str) -> Any:
                return getattr(db, name)

            def execute(self, sql: str, params: Any = ()) -> Any:
                if sql.lstrip().upper().startswith("SELECT"):
                    plan = db.execute("EXPLAIN QUERY PLAN " + sql, params)
                    plans.extend(row[-1] for row in plan)
                return db.execute(sql, params)

        self.store._db = Explaining()  # type: ignore[assignment]
        return plans

    def __exit__(self, *exc: object) -> None:
        self.store._db = self.saved


@pytest.mark.parametrize(
    "read",
    [
        lambda s, r: s.task_counts(r),
        lambda s, r: list(s.trial_results(r)),
        lambda s, r: s.trial_keys(r),
        lambda s, r: list(s.graded_trials(r, "agent_crashed")),
        lambda s, r: s.trace(r, "read-item", 2),
        lambda s, r: s.run(r),
    ],
    ids=["task_counts", "trial_results", "trial_keys", "graded_trials", "trace", "run"],
)
def test_a_runs_reads_are_index_searches(ran: tuple[Store, Any], read: Any) -> None:
    store, report = ran
    with Plans(store) as plans:
        read(store, report.run_id)
    assert plans
    for step in plans:
        if step.startswith("SCAN"):  # only the runs table (one row a run) may be scanned
            assert step.split()[1] == "runs", step
        assert "TEMP B-TREE" not in step, step  # never sort the run's rows


def test_task_counts_match_the_summary(ran: tuple[Store, Any]) -> None:
    store, report = ran
    counts = store.task_counts(report.run_id)
    assert list(counts) == sorted(t.id for t in SUITE.tasks)
    for row in report.summary.per_task:
        c = counts[row.id]
        assert c["trials"] == 8 and c["passed"] == row.passed
        assert c["passed"] + c["failed"] + c["timeout"] + c["error"] == 8
    assert sum(c["failed"] for c in counts.values()) == report.summary.statuses["failed"] > 0


def test_the_streamed_summary_is_the_summary_of_the_full_results(ran: tuple[Store, Any]) -> None:
    store, report = ran
    results = list(store.trial_results(report.run_id))
    assert any(c.evidence for r in results for c in r.checks)
    tally = Tally()
    for r in reversed(results):  # any order
        tally.add(r)
    infos = task_infos(SUITE)
    manifest, limit = report.manifest.to_json(), DEFAULT_MAX_ERROR_RATE
    from_full = summary_with_scorecard(
        report.run_id, manifest, results, infos, max_error_rate=limit
    )
    from_tally = summary_with_scorecard(
        report.run_id, manifest, tally.results, infos, max_error_rate=limit
    )
    full = from_full.to_json()
    assert json.dumps(from_tally.to_json(), sort_keys=True) == json.dumps(full, sort_keys=True)
    assert from_full.safety_violations.total > 0  # checks mattered to the comparison
    # What the tally keeps is small: no evidence, check lists shared between trials.
    assert not any(c.evidence for r in tally.results for c in r.checks)
    assert len({id(r.checks) for r in tally.results}) < len(results) / 2
    # what the runner adds: the run's status and its wall time (an evaluation-program figure)
    assert report.summary.to_json() == {
        **full,
        "status": "completed",
        "wall_time_s": report.summary.wall_time_s,
    }


def test_a_group_of_trials_is_durable_at_its_commit(ran: tuple[Store, Any], tmp_path: Path) -> None:
    store, report = ran
    records = list(store.trial_results(report.run_id))[:3]
    writer = Store(tmp_path / "w.db")
    writer.create_run("r", {})
    reader = sqlite3.connect(tmp_path / "w.db")
    writer.begin()
    for r in records:
        r.run_id = "r"
        trace, answer, outcome = store.trace(report.run_id, r.task_id, r.trial)
        writer.write_trial(r, trace, answer, outcome)
    assert reader.execute("SELECT COUNT(*) FROM trials").fetchone()[0] == 0
    writer.commit()
    assert reader.execute("SELECT COUNT(*) FROM trials").fetchone()[0] == 3


def test_a_version_1_store_is_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO meta VALUES ('schema_version', '1');
        CREATE TABLE runs (run_id TEXT PRIMARY KEY, created_at REAL NOT NULL,
            status TEXT NOT NULL, manifest TEXT NOT NULL, summary TEXT);
        CREATE TABLE trials (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, task_id TEXT NOT NULL,
            trial INTEGER NOT NULL, seed INTEGER NOT NULL, status TEXT NOT NULL,
            score REAL NOT NULL, latency_s REAL NOT NULL, trace_id TEXT NOT NULL,
            usage TEXT NOT NULL, metrics TEXT NOT NULL, error TEXT, answer TEXT, outcome TEXT,
            UNIQUE (run_id, task_id, trial));
        INSERT INTO runs VALUES ('old', 0, 'completed', '{}', NULL);
        INSERT INTO trials VALUES (1, 'old', 't', 0, 7, 'passed', 1.0, 0.5, 'abc', '{}', '{}',
            NULL, 'hi', '{"final_state": {}}');
        """
    )
    db.close()
    store = Store(path)
    assert sql(store).execute("SELECT value FROM meta").fetchone()[0] == str(SCHEMA_VERSION)
    [old] = store.trial_results("old")
    assert (old.task_id, old.seed, old.status) == ("t", 7, "passed")
    trace, answer, outcome = store.trace("old", "t", 0)
    assert answer == "hi" and trace.events == [] and outcome is not None
