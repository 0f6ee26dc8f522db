"""The embedded store: SQLite, one trial written atomically at a time.

A trial (its row, trace events and checks) is written all or nothing. A runner may group
trials into one transaction (`begin` ... `commit`): a commit per trial is most of the
store's cost, and a crash then loses only trials finished since the last commit, which
a resumed run redoes with the same seeds. WAL journalling keeps readers (`proctor show`
during a run) from blocking the writer.

Events stay one row per event (not one JSON array per trial): SQL can still select by
kind, and the array form measured only ~25 µs a trial faster to write.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import Any, Protocol

from proctor.core.jsonvalues import json_encoder
from proctor.core.outcome import Outcome
from proctor.core.results import Check, TrialResult, Usage
from proctor.core.trace import Trace, TraceEvent

DEFAULT_PATH = Path(".proctor/proctor.db")
#: 2: `trials.trace_of`, the trial whose trace a regraded trial shares.
SCHEMA_VERSION = 2


class Redactor(Protocol):
    """What the store asks of a redactor (proctor.interop.redact.Redactor is one)."""

    def trial(
        self, result: TrialResult, trace: Trace, answer: str, outcome: Outcome | None
    ) -> tuple[Trace, str, Outcome | None]:
        """The trial as it may be stored; `result` is redacted in place."""
        ...


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
    trace_of INTEGER REFERENCES trials(id),
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


#: Compact JSON text, non-ASCII kept.
_dumps = json_encoder(separators=(",", ":"), ensure_ascii=False)
_scan = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # set in __init__, unstubbed


def _loads(text: str) -> Any:
    """JSON text this store wrote (compact, no surrounding space): the C scanner alone,
    without `json.loads`' two whitespace matches, twice as fast on a small row."""
    try:
        return _scan(text, 0)[0]
    except StopIteration:  # not written here: json.loads says what is wrong with it
        return json.loads(text)


#: A trial's key in a run, (task id, trial number); FIRST_KEY sorts before every key.
Key = tuple[str, int]
FIRST_KEY: Key = ("", -1)


class RunNotFound(LookupError):
    pass


class Store:
    """Runs, trials, trace events and checks in one SQLite file."""

    def __init__(self, path: str | Path = DEFAULT_PATH, redactor: Redactor | None = None) -> None:
        """`redactor`: applied to every trial before it is written (proctor.interop.redact)."""
        self.path = Path(path)
        self.redactor = redactor
        if str(self.path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.executescript(_SCHEMA)
        columns = {row[1] for row in self.db.execute("PRAGMA table_info(trials)")}
        if "trace_of" not in columns:  # a version 1 store
            self.db.execute("ALTER TABLE trials ADD COLUMN trace_of INTEGER REFERENCES trials(id)")
        self.db.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)",
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

    def reopen_run(self, run_id: str, manifest: dict[str, Any]) -> None:
        """Mark a run `running` again, to resume it; its summary is computed anew."""
        self.db.execute(
            "UPDATE runs SET status = 'running', manifest = ?, summary = NULL WHERE run_id = ?",
            (_dumps(manifest), run_id),
        )

    def finish_run(self, run_id: str, status: str, summary: dict[str, Any]) -> None:
        self.db.execute(
            "UPDATE runs SET status = ?, summary = ? WHERE run_id = ?",
            (status, _dumps(summary), run_id),
        )

    def begin(self) -> None:
        """Open a transaction that groups the trials written until `commit`."""
        if not self.db.in_transaction:
            self.db.execute("BEGIN")

    def commit(self) -> None:
        if self.db.in_transaction:
            self.db.execute("COMMIT")

    def write_trial(
        self, result: TrialResult, trace: Trace, answer: str, outcome: Outcome | None
    ) -> None:
        """Store one finished trial atomically: all of it or none of it.

        Inside `begin` ... `commit` it becomes durable at the commit; else at once.
        """
        if self.redactor is not None:
            trace, answer, outcome = self.redactor.trial(result, trace, answer, outcome)
        db = self.db
        db.execute("SAVEPOINT trial")
        try:
            rowid = self._insert(result, answer, outcome, None)
            db.executemany(
                "INSERT INTO events(trial_rowid, seq, t, kind, data) VALUES (?,?,?,?,?)",
                [(rowid, e.seq, e.t, e.kind, _dumps(e.data)) for e in trace.events],
            )
            db.execute("RELEASE trial")
        except BaseException:
            db.execute("ROLLBACK TO trial")
            db.execute("RELEASE trial")
            raise

    def write_regraded(self, result: TrialResult, trace_of: int) -> None:
        """Store a regraded trial: new checks and verdict, the trace of trial `trace_of`."""
        self._insert(result, None, None, trace_of)

    def _insert(
        self, result: TrialResult, answer: str | None, outcome: Outcome | None, trace_of: int | None
    ) -> int:
        """Insert a trial's row and checks; returns its rowid."""
        return self.write_encoded(encode_trial(result, answer, outcome, trace_of))

    def write_encoded(self, encoded: EncodedTrial) -> int:
        """Insert a trial encoded elsewhere (a worker process): its row and checks."""
        rowid = self.db.execute(
            "INSERT INTO trials(run_id, task_id, trial, seed, status, score, latency_s,"
            " trace_id, usage, metrics, error, answer, outcome, trace_of)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            encoded.row,
        ).lastrowid
        assert rowid is not None
        self.db.executemany(
            "INSERT INTO checks(trial_rowid, idx, name, kind, passed, score, severity,"
            " evidence) VALUES (?,?,?,?,?,?,?,?)",
            [(rowid, *check) for check in encoded.checks],
        )
        return rowid

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
            "manifest": _loads(manifest),
            "summary": _loads(summary) if summary else None,
        }

    def trial_results(self, run_id: str) -> Iterator[TrialResult]:
        """Every stored trial of a run with its checks, in (task, trial) order, streamed."""
        rows = self.db.execute(
            "SELECT t.id, t.task_id, t.trial, t.seed, t.status, t.score, t.latency_s,"
            " t.trace_id, t.usage, t.metrics, t.error,"
            " c.name, c.kind, c.passed, c.score, c.severity, c.evidence"
            " FROM trials t LEFT JOIN checks c ON c.trial_rowid = t.id"
            " WHERE t.run_id = ? ORDER BY t.task_id, t.trial, c.idx",
            (run_id,),
        )
        for _, group in groupby(rows, key=lambda row: row[0]):
            first, *rest = group
            _, task_id, trial, seed, status, score, latency, trace_id, usage, metrics, error = (
                first[:11]
            )
            yield TrialResult(
                run_id=run_id,
                task_id=task_id,
                trial=trial,
                seed=seed,
                status=status,
                checks=[
                    Check(name, kind, bool(passed), c_score, severity, _loads(evidence))
                    for name, kind, passed, c_score, severity, evidence in (
                        row[11:] for row in (first, *rest)
                    )
                    if name is not None
                ],
                usage=Usage(**_loads(usage)),
                latency_s=latency,
                trace_id=trace_id,
                score=score,
                metrics=_loads(metrics),
                error=error,
            )

    def trial_keys(self, run_id: str) -> set[tuple[str, int]]:
        """The (task, trial) pairs stored for a run: what a resumed run skips."""
        return set(self.db.execute("SELECT task_id, trial FROM trials WHERE run_id = ?", (run_id,)))

    def task_counts(self, run_id: str) -> dict[str, dict[str, int]]:
        """Per task: trials stored and how many passed, failed, timed out, broke.

        Read from an index, without loading a trial: fast on a run of millions, and
        available while the run is still going.
        """
        return {
            task_id: {"trials": n, "passed": p, "failed": f, "timeout": t, "error": e}
            for task_id, n, p, f, t, e in self.db.execute(
                "SELECT task_id, COUNT(*), SUM(status = 'passed'), SUM(status = 'failed'),"
                " SUM(status = 'timeout'), SUM(status = 'error')"
                " FROM trials WHERE run_id = ? GROUP BY task_id ORDER BY task_id",
                (run_id,),
            )
        }

    def trace(self, run_id: str, task_id: str, trial: int) -> tuple[Trace, str, Outcome | None]:
        """A trial's trace, answer and outcome (a regraded trial's are its source's)."""
        row = self.db.execute(
            "SELECT s.id, s.trace_id, s.answer, s.outcome FROM trials t"
            " JOIN trials s ON s.id = COALESCE(t.trace_of, t.id)"
            " WHERE t.run_id = ? AND t.task_id = ? AND t.trial = ?",
            (run_id, task_id, trial),
        ).fetchone()
        if row is None:
            raise RunNotFound(f"no trial {task_id}#{trial} in run {run_id}")
        rowid, trace_id, answer, outcome = row
        events = [
            TraceEvent(seq, t, kind, _loads(data))
            for seq, t, kind, data in self.db.execute(
                "SELECT seq, t, kind, data FROM events WHERE trial_rowid = ? ORDER BY seq",
                (rowid,),
            )
        ]
        trace = Trace(f"{task_id}#{trial}", trace_id, events)
        return trace, answer or "", Outcome.from_dict(_loads(outcome)) if outcome else None

    def graded_trials(
        self,
        run_id: str,
        crash_check: str,
        batch: int = 500,
        *,
        after: Key = FIRST_KEY,
        until: Key | None = None,
    ) -> Iterator[StoredTrial]:
        """Every trial of a run (with keys after `after`, up to `until`) with what grading
        reads: trace, answer, outcome, usage.

        In (task, trial) order, read `batch` trials at a time by key range, each read
        finished before a trial is handed on: a read cursor held open while the caller
        writes would keep the WAL from being checkpointed, and every page read would get
        slower. Of the stored checks only `crash_check` is read, the one check graders do
        not produce.
        """
        while True:
            rows, events = self.graded_rows(run_id, crash_check, after, until, batch)
            if not rows:
                return
            yield from decode_graded(run_id, crash_check, rows, events)
            after = (rows[-1][1], rows[-1][2])

    def graded_rows(
        self, run_id: str, crash_check: str, after: Key, until: Key | None, limit: int
    ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        """The first `limit` trials after `after` (up to `until`) as stored, not decoded:
        their rows and their trace events' rows, for `decode_graded` here or elsewhere."""
        bound = "" if until is None else " AND (t.task_id, t.trial) <= (?, ?)"
        rows = self.db.execute(
            "SELECT s.id, t.task_id, t.trial, t.seed, t.status,"
            " t.latency_s, t.trace_id, t.usage, t.error, s.answer, s.outcome,"
            " c.kind, c.passed, c.score, c.severity, c.evidence"
            " FROM trials t JOIN trials s ON s.id = COALESCE(t.trace_of, t.id)"
            " LEFT JOIN checks c ON c.trial_rowid = t.id AND c.name = ?"
            f" WHERE t.run_id = ? AND (t.task_id, t.trial) > (?, ?){bound}"
            " ORDER BY t.task_id, t.trial LIMIT ?",
            (crash_check, run_id, *after, *(until or ()), limit),
        ).fetchall()
        if not rows:
            return [], []
        last = (rows[-1][1], rows[-1][2])
        events = self.db.execute(
            "SELECT e.trial_rowid, e.seq, e.t, e.kind, e.data FROM trials t"
            " JOIN events e ON e.trial_rowid = COALESCE(t.trace_of, t.id)"
            " WHERE t.run_id = ? AND (t.task_id, t.trial) > (?, ?)"
            " AND (t.task_id, t.trial) <= (?, ?) ORDER BY t.task_id, t.trial, e.seq",
            (run_id, *after, *last),
        ).fetchall()
        return rows, events

    def share_bounds(self, run_id: str, size: int) -> Iterator[tuple[Key, Key]]:
        """A run's trials in shares of `size`, as (after, until) key ranges in order: what
        a worker reads with `graded_trials(after=..., until=...)`. Read from the index."""
        after: Key = FIRST_KEY
        while True:
            row = self.db.execute(
                "SELECT task_id, trial FROM trials WHERE run_id = ? AND (task_id, trial) > (?, ?)"
                " ORDER BY task_id, trial LIMIT 1 OFFSET ?",
                (run_id, *after, size - 1),
            ).fetchone()
            if row is None:
                last = self.db.execute(
                    "SELECT task_id, trial FROM trials WHERE run_id = ?"
                    " AND (task_id, trial) > (?, ?) ORDER BY task_id DESC, trial DESC LIMIT 1",
                    (run_id, *after),
                ).fetchone()
                if last is not None:
                    yield after, (last[0], last[1])
                return
            until = (row[0], row[1])
            yield after, until
            after = until

    @classmethod
    def reader(cls, path: str | Path) -> Store:
        """A read-only handle on an existing store, for a worker process reading its share
        of a run while another process writes: it creates and writes nothing."""
        store = cls.__new__(cls)
        store.path, store.redactor = Path(path), None
        uri = f"{Path(path).resolve().as_uri()}?mode=ro"
        store.db = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        return store

    @staticmethod
    def _stored(
        run_id: str, crash_check: str, row: tuple[Any, ...], events: list[TraceEvent]
    ) -> StoredTrial:
        source, task_id, trial, seed, status, latency, trace_id, usage, error = row[:9]
        answer, outcome, kind, passed, score, severity, evidence = row[9:]
        return StoredTrial(
            source,
            TrialResult(
                run_id=run_id,
                task_id=task_id,
                trial=trial,
                seed=seed,
                status=status,
                usage=Usage(**_loads(usage)),
                latency_s=latency,
                trace_id=trace_id,
                error=error,
            ),
            Trace(f"{task_id}#{trial}", trace_id, events),
            answer or "",
            Outcome.from_dict(_loads(outcome)) if outcome else None,
            None
            if kind is None
            else Check(crash_check, kind, bool(passed), score, severity, _loads(evidence)),
        )


def decode_graded(
    run_id: str, crash_check: str, rows: list[tuple[Any, ...]], events: list[tuple[Any, ...]]
) -> Iterator[StoredTrial]:
    """The StoredTrials of rows read by `Store.graded_rows`."""
    by_source: dict[int, list[TraceEvent]] = {}
    for source, seq, t, kind, data in events:
        by_source.setdefault(source, []).append(TraceEvent(seq, t, kind, _loads(data)))
    for row in rows:
        yield Store._stored(run_id, crash_check, row, by_source.get(row[0], []))


@dataclass(frozen=True, slots=True)
class EncodedTrial:
    """A trial as the store inserts it: its row and its checks' rows, JSON encoded. A
    worker process encodes; the process that owns the store inserts."""

    row: tuple[Any, ...]
    checks: list[tuple[Any, ...]]

    def result(self) -> TrialResult:
        """The trial's result as a summary reads it: checks without their evidence."""
        run_id, task_id, trial, seed, status, score, latency, trace_id, usage, metrics, error = (
            self.row[:11]
        )
        return TrialResult(
            run_id=run_id,
            task_id=task_id,
            trial=trial,
            seed=seed,
            status=status,
            checks=[
                Check(name, kind, bool(passed), score, severity)
                for _, name, kind, passed, score, severity, _ in self.checks
            ],
            usage=Usage(**_loads(usage)),
            latency_s=latency,
            trace_id=trace_id,
            score=score,
            metrics=_loads(metrics),
            error=error,
        )


def encode_trial(
    result: TrialResult, answer: str | None, outcome: Outcome | None, trace_of: int | None
) -> EncodedTrial:
    """`result` (and the answer and outcome a trial with its own trace keeps) as rows."""
    return EncodedTrial(
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
            trace_of,
        ),
        [
            (i, c.name, c.kind, int(c.passed), c.score, c.severity, _dumps(c.evidence))
            for i, c in enumerate(result.checks)
        ],
    )


@dataclass(slots=True)
class StoredTrial:
    """A stored trial as grading reads it; `source` is the rowid of its trace's trial."""

    source: int
    result: TrialResult
    trace: Trace
    answer: str
    outcome: Outcome | None
    crash: Check | None
