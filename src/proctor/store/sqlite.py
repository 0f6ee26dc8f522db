"""The embedded store: SQLite, written one trial per transaction.

A crash loses at most the trials in flight: every finished trial (its row, trace events
and checks) is committed before the next is written. WAL journalling keeps readers
(`proctor show` during a run) from blocking the writer.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from proctor.agents.base import Usage
from proctor.env.outcome import Outcome
from proctor.grade.check import Check
from proctor.run.result import TrialResult
from proctor.trace import Trace, TraceEvent

DEFAULT_PATH = Path(".proctor/proctor.db")
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    created_at REAL NOT NULL,
    status TEXT NOT NULL,
    manifest TEXT NOT NULL,
    summary TEXT
);
CREATE TABLE IF NOT EXISTS trials (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    task_id TEXT NOT NULL,
    trial INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    status TEXT NOT NULL,
    score REAL NOT NULL,
    latency_s REAL NOT NULL,
    trace_id TEXT NOT NULL,
    usage TEXT NOT NULL,
    metrics TEXT NOT NULL,
    error TEXT,
    answer TEXT,
    outcome TEXT,
    UNIQUE (run_id, task_id, trial)
);
CREATE INDEX IF NOT EXISTS trials_by_run_status ON trials(run_id, task_id, status);
CREATE TABLE IF NOT EXISTS events (
    trial_rowid INTEGER NOT NULL REFERENCES trials(id),
    seq INTEGER NOT NULL,
    t REAL NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (trial_rowid, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS checks (
    trial_rowid INTEGER NOT NULL REFERENCES trials(id),
    idx INTEGER NOT NULL,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    passed INTEGER NOT NULL,
    score REAL NOT NULL,
    severity TEXT,
    evidence TEXT NOT NULL,
    PRIMARY KEY (trial_rowid, idx)
) WITHOUT ROWID;
"""


# Compact JSON text; one encoder for every row (building one per call costs more).
_dumps = json.JSONEncoder(separators=(",", ":"), default=str, ensure_ascii=False).encode


class RunNotFound(LookupError):
    pass


class Store:
    """Runs, trials, trace events and checks in one SQLite file."""

    def __init__(self, path: str | Path = DEFAULT_PATH) -> None:
        self.path = Path(path)
        if str(self.path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.executescript(_SCHEMA)
        self.db.execute(
            "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?)",
            (str(SCHEMA_VERSION),),
        )

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing -------------------------------------------------------------------

    def create_run(self, run_id: str, manifest: dict[str, Any]) -> None:
        self.db.execute(
            "INSERT INTO runs(run_id, created_at, status, manifest) VALUES (?, ?, 'running', ?)",
            (run_id, time.time(), _dumps(manifest)),
        )

    def finish_run(self, run_id: str, status: str, summary: dict[str, Any]) -> None:
        self.db.execute(
            "UPDATE runs SET status = ?, summary = ? WHERE run_id = ?",
            (status, _dumps(summary), run_id),
        )

    def write_trial(
        self, result: TrialResult, trace: Trace, answer: str, outcome: Outcome | None
    ) -> None:
        """Store one finished trial atomically: all of it or none of it."""
        db = self.db
        db.execute("BEGIN")
        try:
            cur = db.execute(
                "INSERT INTO trials(run_id, task_id, trial, seed, status, score, latency_s,"
                " trace_id, usage, metrics, error, answer, outcome)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    result.run_id,
                    result.task_id,
                    result.trial,
                    result.seed,
                    result.status,
                    result.score,
                    result.latency_s,
                    result.trace_id,
                    _dumps(result.usage.to_dict()),
                    _dumps(result.metrics),
                    result.error,
                    answer,
                    None if outcome is None else _dumps(outcome.to_dict()),
                ),
            )
            rowid = cur.lastrowid
            db.executemany(
                "INSERT INTO events(trial_rowid, seq, t, kind, data) VALUES (?,?,?,?,?)",
                [(rowid, e.seq, e.t, e.kind, _dumps(e.data)) for e in trace.events],
            )
            db.executemany(
                "INSERT INTO checks(trial_rowid, idx, name, kind, passed, score, severity,"
                " evidence) VALUES (?,?,?,?,?,?,?,?)",
                [
                    (
                        rowid,
                        i,
                        c.name,
                        c.kind,
                        int(c.passed),
                        c.score,
                        c.severity,
                        _dumps(c.evidence),
                    )
                    for i, c in enumerate(result.checks)
                ],
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    # -- reading -------------------------------------------------------------------

    def runs(self, limit: int = 50) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT run_id, created_at, status, manifest, summary FROM runs"
            " ORDER BY created_at DESC LIMIT ?",
            (limit,),
        ).fetchall()
        return [self._run_row(r) for r in rows]

    def run(self, run_id: str) -> dict[str, Any]:
        """A run by id, or by a unique prefix of it; `latest` names the newest run."""
        if run_id == "latest":
            row = self.db.execute(
                "SELECT run_id, created_at, status, manifest, summary FROM runs"
                " ORDER BY created_at DESC LIMIT 1"
            ).fetchone()
            rows = [row] if row else []
        else:
            rows = self.db.execute(
                "SELECT run_id, created_at, status, manifest, summary FROM runs"
                " WHERE run_id = ?1 OR (substr(run_id, 1, length(?1)) = ?1"
                " AND NOT EXISTS (SELECT 1 FROM runs WHERE run_id = ?1))",
                (run_id,),
            ).fetchall()
        if len(rows) != 1:
            why = "no run" if not rows else f"{len(rows)} runs"
            raise RunNotFound(f"{why} matching {run_id!r} in {self.path}")
        return self._run_row(rows[0])

    @staticmethod
    def _run_row(row: tuple[Any, ...]) -> dict[str, Any]:
        run_id, created, status, manifest, summary = row
        return {
            "run_id": run_id,
            "created_at": created,
            "status": status,
            "manifest": json.loads(manifest),
            "summary": json.loads(summary) if summary else None,
        }

    def trial_results(self, run_id: str) -> Iterator[TrialResult]:
        """Every stored trial of a run with its checks, in (task, trial) order."""
        checks: dict[int, list[Check]] = {}
        for rowid, name, kind, passed, score, severity, evidence in self.db.execute(
            "SELECT c.trial_rowid, c.name, c.kind, c.passed, c.score, c.severity, c.evidence"
            " FROM checks c JOIN trials t ON t.id = c.trial_rowid WHERE t.run_id = ?"
            " ORDER BY c.trial_rowid, c.idx",
            (run_id,),
        ):
            checks.setdefault(rowid, []).append(
                Check(name, kind, bool(passed), score, severity, json.loads(evidence))
            )
        for row in self.db.execute(
            "SELECT id, task_id, trial, seed, status, score, latency_s, trace_id, usage, metrics,"
            " error FROM trials WHERE run_id = ? ORDER BY task_id, trial",
            (run_id,),
        ):
            rowid, task_id, trial, seed, status, score, latency, trace_id, usage, metrics, error = (
                row
            )
            yield TrialResult(
                run_id=run_id,
                task_id=task_id,
                trial=trial,
                seed=seed,
                status=status,
                checks=checks.get(rowid, []),
                usage=Usage(**json.loads(usage)),
                latency_s=latency,
                trace_id=trace_id,
                score=score,
                metrics=json.loads(metrics),
                error=error,
            )

    def trace(self, run_id: str, task_id: str, trial: int) -> tuple[Trace, str, Outcome | None]:
        row = self.db.execute(
            "SELECT id, trace_id, answer, outcome FROM trials"
            " WHERE run_id = ? AND task_id = ? AND trial = ?",
            (run_id, task_id, trial),
        ).fetchone()
        if row is None:
            raise RunNotFound(f"no trial {task_id}#{trial} in run {run_id}")
        rowid, trace_id, answer, outcome = row
        events = [
            TraceEvent(seq, t, kind, json.loads(data))
            for seq, t, kind, data in self.db.execute(
                "SELECT seq, t, kind, data FROM events WHERE trial_rowid = ? ORDER BY seq",
                (rowid,),
            )
        ]
        trace = Trace(f"{task_id}#{trial}", trace_id, events)
        return trace, answer or "", Outcome.from_dict(json.loads(outcome)) if outcome else None
