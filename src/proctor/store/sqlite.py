"""The embedded store: SQLite, one trial written atomically at a time.

A trial (its row, trace events and checks) is written all or nothing. A runner may group
trials into one transaction (`begin` ... `commit`): a commit per trial is most of the
store's cost, and a crash then loses only trials finished since the last commit, which
a resumed run redoes with the same seeds. WAL journalling keeps readers (`proctor show`
during a run) from blocking the writer.

A trial's trace events are one row (`traces`: one JSON array of [seq, t, kind, data] in
seq order) rather than a row per event: written with one encoder call and one insert,
read with one decoder call, which halved the events' share of writing and reading a
trial (measured; docs/architecture.md, Regrade at scale). Events are only ever read a
trace at a time, never selected by kind in SQL. Stores of schema 3 and before, with an
`events` row per event, are migrated when opened for writing and read as they are when
opened read-only.

Opening checks the file first (proctor.store.file_health); read commands open it read-only,
so a store on a read-only disk can be listed and shown. A write waits for another
process's write lock up to `busy_s` (`PROCTOR_STORE_BUSY_S`, 30 s by default), saying
so through `on_wait`, then gives up with StoreBusy; every SQLite failure becomes a
StoreError of one line.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache, partial
from itertools import chain, groupby, islice, pairwise, starmap
from operator import attrgetter, itemgetter, lt
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar, cast

import orjson

from proctor.core.jsonvalues import json_encoder
from proctor.core.manifest import Manifest
from proctor.core.outcome import Outcome
from proctor.core.results import (
    NOT_MEASURED,
    UNDECIDED,
    Check,
    TrialResult,
    Usage,
    summary_evidence,
)
from proctor.core.summary import RunSummary
from proctor.core.trace import Trace, TraceEvent
from proctor.store.file_health import (
    StoreBusy,
    StoreDamaged,
    StoreError,
    check_pages,
    check_unopened,
    damage,
    is_busy,
    opened,
    schema_version,
)

DEFAULT_PATH = Path(".proctor/proctor.db")
#: 2: `trials.trace_of`, the trial whose trace a regraded trial shares.
#: 3: `trials.simulated_s`, the simulated part of a trial's latency.
#: 4: `traces`, a trial's events in one row, in place of `events`, a row per event.
#: 5: `trials.checks_digest`, a digest of a trial's checks' rows, and `trials.checks_of`,
#:    the trial whose rows a regraded trial with the same digest shares.
SCHEMA_VERSION = 5
#: How long a write waits for another process's write lock, unless told otherwise.
BUSY_ENV, DEFAULT_BUSY_S = "PROCTOR_STORE_BUSY_S", 30.0
#: Each wait inside SQLite lasts at most this long, so a waiting writer can say so.
_WAIT_STEP_S = 1.0
_T = TypeVar("_T")
_P = ParamSpec("_P")
#: Trace ids asked at once by `trials_by_trace`.
_TRACE_CHUNK = 500

#: sqlite3 binds a None parameter as NULL only after looking for an adapter of its type,
#: then asking the protocol and None itself to adapt it (~3,300 instructions; a trial
#: binds 13 Nones: its error and trace_of, each check's severity). An adapter for None
#: ends that search at its first look: `{}.get` returns None as it is, in C, so the same
#: NULL is bound (a trial's write ~27k instructions less, callgrind). Adapters are the
#: process's: another connection binds None the same way, only sooner.
sqlite3.register_adapter(type(None), cast(Callable[[None], None], {}.get))


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
    simulated_s REAL,
    trace_id TEXT NOT NULL,
    usage TEXT NOT NULL,
    metrics TEXT NOT NULL,
    error TEXT,
    answer TEXT,
    outcome TEXT,
    trace_of INTEGER REFERENCES trials(id),
    checks_digest BLOB,
    checks_of INTEGER REFERENCES trials(id),
    UNIQUE (run_id, task_id, trial)
);
CREATE INDEX IF NOT EXISTS trials_by_run_status ON trials(run_id, task_id, status);
CREATE TABLE IF NOT EXISTS traces (
    trial_rowid INTEGER PRIMARY KEY REFERENCES trials(id),
    events TEXT NOT NULL
);
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

_INSERT_TRIAL = (
    "INSERT INTO trials(run_id, task_id, trial, seed, status, score, latency_s,"
    " simulated_s, trace_id, usage, metrics, error, answer, outcome, trace_of, checks_digest)"
    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)
_CHECKS = "checks(trial_rowid, idx, name, kind, passed, score, severity, evidence)"
#: The page size of a new store, in bytes (SQLite's default is 4,096): a trial's trace
#: row (a few KB) then shares a page with the next one's, rather than taking one alone,
#: and writing a trial costs a sixth less (measured: 20 events, 11 checks; 16 KB cost
#: more). Every reader reads any page size; a store keeps the one it was made with.
PAGE_SIZE = 8192
#: `insert_many`'s "no value leads every row".
_NO_LEAD = object()
#: Rows one INSERT takes at most (`insert_many`; fewer where SQLite allows fewer values).
ROWS_AT_ONCE = 256
_INSERT_TRACE = "INSERT INTO traces(trial_rowid, events) VALUES (?,?)"
#: Where a trial's rows are, by its rowid: what a failed write takes out, children first.
_TRIAL_ROWS = (("traces", "trial_rowid"), ("checks", "trial_rowid"), ("trials", "id"))
#: The events of a store of schema 3 and before, a row each, that `_migrate` turns into
#: `traces` rows: those of a stored trial (no read could reach another's).
_EVENT_ROWS = (
    "SELECT e.trial_rowid, e.seq, e.t, e.kind, e.data FROM events e"
    " JOIN trials t ON t.id = e.trial_rowid ORDER BY e.trial_rowid, e.seq"
)


#: Compact JSON text, non-ASCII kept: what the store writes (`compact_json` writes it faster).
_dumps = json_encoder(separators=(",", ":"), ensure_ascii=False)
#: What orjson writes as `json` would, or hands to `_refuse`: dataclasses, dates, subclasses
#: of str, int, dict and list go to `json` (which writes them through `str` or as their base).
_ORJSON_OPTIONS = (
    orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)
#: In orjson's text, the signs that `json` would have written it otherwise: a small float
#: 0.00001 or 1e-7 (json: 1e-05, 1e-07). Inside a string they only send the value to
#: `json`, never make the text wrong. NaN and the infinities become null: see `_same`.
#: Each sign looked for by its own compiled pattern: a fifth to a half of the time of
#: `in` on a trial's texts (measured), whose search skips little on such short needles.
_ORJSON_DIFFERS = (re.compile(rb"0\.0000").search, re.compile(rb"e-").search)


def _refuse(value: Any) -> Any:
    raise TypeError


def compact_json(value: Any) -> str:
    """`_dumps(value)`, by orjson where its text is the same (`_same`): it refuses what it
    cannot write as `json` does (integers past 64 bits, keys other than text, a lone
    surrogate). A plain Enum member, which orjson writes as its value (json as its name),
    is the one difference."""
    try:
        text = orjson.dumps(value, default=_refuse, option=_ORJSON_OPTIONS)
    except orjson.JSONEncodeError:
        return _dumps(value)
    return _checked(value, text)


def compact_jsons(values: Iterable[Any]) -> list[str]:
    """`compact_json` of each value (a trial's usage, metrics, outcome, trace, checks'
    evidence): orjson over them all and the signs of a small float looked for once over
    the joined texts, a null's reading back (`_same`) only in the texts holding one;
    value by value when any is refused or could differ."""
    values = list(values)
    try:
        texts = [orjson.dumps(v, default=_refuse, option=_ORJSON_OPTIONS) for v in values]
    except orjson.JSONEncodeError:
        return [compact_json(value) for value in values]
    joined = b"\0".join(texts)  # NUL: never in orjson's text, so no false joins
    if _differs(joined):
        return [_checked(value, text) for value, text in zip(values, texts, strict=True)]
    if b"null" not in joined:
        return [text.decode() for text in texts]
    return [
        text.decode() if b"null" not in text or orjson.loads(text) == value else _dumps(value)
        for value, text in zip(values, texts, strict=True)
    ]


def _checked(value: Any, text: bytes) -> str:
    """orjson's `text` of `value` where it is `json`'s, else `json`'s."""
    return text.decode() if _same(value, text) else _dumps(value)


def _same(value: Any, text: bytes) -> bool:
    """Is orjson's `text` of `value` what `json` writes? Not where it holds a sign of a
    small float; where it holds null, only if it reads back as `value` (a NaN or an
    infinity, written null, does not: a None, in every stored outcome, does)."""
    if _differs(text):
        return False
    return b"null" not in text or orjson.loads(text) == value


def _differs(text: bytes) -> bool:
    return _ORJSON_DIFFERS[0](text) is not None or _ORJSON_DIFFERS[1](text) is not None


_scan = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # set in __init__, unstubbed


def _manifest_json(manifest: Manifest | dict[str, Any]) -> dict[str, Any]:
    return manifest.to_json() if isinstance(manifest, Manifest) else manifest


def _writable(path: Path) -> bool:
    """Can SQLite write the file and, beside it, its journal (`-wal`, `-shm`)?"""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


def _env_seconds(name: str, default: float) -> float:
    """Seconds from an environment variable (a bad value is the default, not a crash)."""
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if math.isfinite(value) and value >= 0 else default


def _loads(text: str) -> Any:
    """JSON text this store wrote, decoded exactly as `json` decodes it: by orjson (2.5x
    faster on a small row) unless `_orjson_differs` says it could read it otherwise."""
    if not _orjson_differs(text):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:  # NaN, an infinity, a lone surrogate, a huge number
            pass
    try:
        return _scan(text, 0)[0]  # without `json.loads`' whitespace matches
    except StopIteration:  # not written here: json.loads says what is wrong with it
        return json.loads(text)


def loads_all(texts: list[str]) -> list[Any]:
    """Many rows at once (a share's events and evidence): one orjson call over their
    JSON array, a tenth of a regrade's time saved; row by row if that fails."""
    joined = f"[{','.join(texts)}]"
    if not _orjson_differs(joined):
        try:
            values = orjson.loads(joined)
        except orjson.JSONDecodeError:
            values = None
        if isinstance(values, list) and len(values) == len(texts):
            return values
    return [_loads(text) for text in texts]


#: JSON text with digits as 0, number punctuation kept and anything else a space.
_NUMBER_SHAPE = bytes(48 if chr(i).isdigit() else i if chr(i) in ".eE+" else 32 for i in range(256))
_LONG_RUN = b" " + b"0" * 19


def _orjson_differs(text: str) -> bool:
    """Could orjson decode `text` to other values than `json`? Only for an integer of 19
    digits or more, which past 64 bits it reads as a float: such a run preceded by
    anything but a decimal point or an exponent (a string holding one is let through
    too, to `json`). The shape costs ~1 us on a small row, a regex ~3 us."""
    return _LONG_RUN in f" {text}".encode(errors="surrogatepass").translate(_NUMBER_SHAPE)


#: A trial's key in a run, (task id, trial number); FIRST_KEY sorts before every key.
Key = tuple[str, int]
FIRST_KEY: Key = ("", -1)


class RunNotFound(LookupError):
    pass


#: What reading a damaged row raises: SQLite's errors, and JSON a row cannot hold.
_UNREADABLE = (sqlite3.DatabaseError, ValueError, TypeError, KeyError)


class Store:
    """Runs, trials, trace events and checks in one SQLite file."""

    def __init__(
        self,
        path: str | Path = DEFAULT_PATH,
        redactor: Redactor | None = None,
        *,
        readonly: bool = False,
        busy_s: float | None = None,
        on_wait: Callable[[str], None] | None = None,
        pages_checked: bool = False,
    ) -> None:
        """`redactor`: applied to every trial before it is written (proctor.interop.redact).

        `readonly`: for commands that only read (nothing is created or migrated; a
        read-only file will do). `busy_s`: how long a write waits for another process's
        lock; `on_wait` is told once per wait. `pages_checked`: this process opened the
        file for writing before (its pages were checked then), so a further connection
        skips the check, which reads the whole file. Raises StoreError (one line) for a
        store that is damaged, foreign, newer than this proctor, or cannot be opened.
        """
        self.path = Path(path)
        self.redactor = redactor
        self.readonly = readonly
        self.on_wait = on_wait
        if busy_s is None:
            busy_s = _env_seconds(BUSY_ENV, DEFAULT_BUSY_S)
        self.busy_s = busy_s
        #: Held around every write: the connection is shared by threads (a model user's
        #: cache writes from agent threads), and an insert from another thread between a
        #: trial's row and its checks would hand them the other row's id.
        self.lock = threading.RLock()
        memory = str(self.path) == ":memory:"
        if not memory and readonly and not self.path.exists():
            raise StoreError(f"{self.path}: no store yet (run `proctor run` first)")
        if not memory:
            if self.path.exists():
                check_unopened(self.path)
                if not readonly and not _writable(self.path):
                    raise StoreError(
                        f"{self.path}: the store is read-only (file, folder or disk): "
                        "read commands (runs, show, export, report) still work on it"
                    )
            elif not readonly:
                try:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise StoreError(f"{self.path}: cannot create the store: {exc}") from None
        self._db = self._connect(memory)
        try:
            version = schema_version(self._db, self.path, SCHEMA_VERSION)
            if not readonly:
                if version and not pages_checked:
                    check_pages(self._db, self.path)
                # Only now, checked, may it be changed: its page size if it is new (SQLite
                # ignores it on a file with pages), WAL journalling, then the schema.
                if not version:
                    self._db.execute(f"PRAGMA page_size={PAGE_SIZE}")
                self._writing("opening it", partial(self._db.execute, "PRAGMA journal_mode=WAL"))
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._db.execute("PRAGMA foreign_keys=ON")
                if version < SCHEMA_VERSION:
                    self._writing("creating its tables", lambda: self._migrate(version))
            self._columns = {row[1] for row in self._db.execute("PRAGMA table_info(trials)")}
            #: An older store opened read-only (not migrated): its events a row each.
            self._event_rows = "traces" not in _tables(self._db)
        except BaseException:
            self._db.close()
            raise
        self._release = (lambda: None) if memory else opened(self.path)
        weakref.finalize(self, self._release)  # a store dropped without close()

    def _connect(self, memory: bool) -> sqlite3.Connection:
        """A connection (read-only when asked: with `immutable` when SQLite cannot share
        a read-only file's lock, as on a read-only disk)."""
        opens = [str(self.path)]
        if self.readonly and not memory:
            uri = self.path.resolve().as_uri()
            opens = [f"{uri}?mode=ro", f"{uri}?mode=ro&immutable=1"]
        last: sqlite3.Error | None = None
        for target in opens:
            try:
                db = sqlite3.connect(
                    target,
                    isolation_level=None,
                    check_same_thread=False,
                    timeout=min(_WAIT_STEP_S, self.busy_s),
                    uri=target.startswith("file:"),
                )
                db.execute("SELECT count(*) FROM sqlite_master").fetchone()
                return db
            except sqlite3.Error as exc:
                last = exc
        assert last is not None
        raise damage(last, self.path, "opening it") from None

    def _migrate(self, version: int) -> None:
        """Create the tables, or bring an older store's up to this schema (in place)."""
        with transaction(self._db):
            each_statement(self._db, _SCHEMA)  # executescript would commit first
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(trials)")}
            if "trace_of" not in columns:  # a version 1 store
                self._db.execute(
                    "ALTER TABLE trials ADD COLUMN trace_of INTEGER REFERENCES trials(id)"
                )
            if "simulated_s" not in columns:
                self._db.execute("ALTER TABLE trials ADD COLUMN simulated_s REAL")
            if "checks_of" not in columns:  # schema 4 and before: no digest, nothing shared
                self._db.execute("ALTER TABLE trials ADD COLUMN checks_digest BLOB")
                self._db.execute(
                    "ALTER TABLE trials ADD COLUMN checks_of INTEGER REFERENCES trials(id)"
                )
            if "events" in _tables(self._db):  # schema 3 and before: a row per event
                self._db.executemany(_INSERT_TRACE, _event_arrays(self._db.execute(_EVENT_ROWS)))
                self._db.execute("DROP TABLE events")
            self._db.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)",
                (str(max(version, SCHEMA_VERSION)),),
            )

    def _writing(self, doing: str, write: Callable[[], _T]) -> _T:
        """Run `write`, waiting for another process's write lock up to `busy_s`."""
        deadline = time.monotonic() + self.busy_s
        told = False
        while True:
            try:
                with self.lock:
                    return write()
            except sqlite3.IntegrityError:
                raise  # the caller's mistake (a trial stored twice), not the store's state
            except sqlite3.Error as exc:
                if not is_busy(exc) or time.monotonic() >= deadline:
                    error = damage(exc, self.path, doing)
                    if isinstance(error, StoreBusy):
                        error = StoreBusy(
                            f"{self.path}: another process held the store's write lock for "
                            f"{self.busy_s:g} s ({doing}); nothing written so far is lost"
                        )
                    raise error from None
                if not told and self.on_wait is not None:
                    self.on_wait(
                        f"{self.path}: waiting up to {self.busy_s:g} s for another process's "
                        f"write lock ({doing})"
                    )
                    told = True

    def write(self, doing: str, statement: str, params: Sequence[Any] = ()) -> int | None:
        """One statement of a table kept beside the runs (store/caches.py and its
        siblings), under the store's lock and its wait for another process's write lock;
        the row id it inserted."""
        return self._writing(doing, partial(self._db.execute, statement, params)).lastrowid

    def ensure(self, doing: str, schema: str) -> None:
        """Create a table kept beside the runs if it is missing, as `write` writes: one
        statement at a time, since `executescript` would first commit a transaction another
        write of this connection has open."""
        self._writing(doing, partial(each_statement, self._db, schema))

    def select(self, what: str, query: str, params: Sequence[Any] = ()) -> list[Any]:
        """The rows of a query on a table kept beside the runs, under the store's lock
        (another thread may be writing on the shared connection)."""
        with self.lock:
            return self._read(what, partial(_fetch, self._db, query, tuple(params)))

    def close(self) -> None:
        self._db.close()
        self._release()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing -------------------------------------------------------------------

    def create_run(self, run_id: str, manifest: Manifest | dict[str, Any]) -> None:
        """Record a run as `running` with its manifest (a Manifest, or the JSON form of one)."""
        self._writing(
            f"recording run {run_id}",
            partial(
                self._db.execute,
                "INSERT INTO runs(run_id, created_at, status, manifest)"
                " VALUES (?, ?, 'running', ?)",
                (run_id, time.time(), compact_json(_manifest_json(manifest))),
            ),
        )

    def reopen_run(self, run_id: str, manifest: Manifest | dict[str, Any]) -> None:
        """Mark a run `running` again, to resume it; its summary is computed anew."""
        self._writing(
            f"reopening run {run_id}",
            partial(
                self._db.execute,
                "UPDATE runs SET status = 'running', manifest = ?, summary = NULL WHERE run_id = ?",
                (compact_json(_manifest_json(manifest)), run_id),
            ),
        )

    def finish_run(self, run_id: str, status: str, summary: RunSummary | dict[str, Any]) -> None:
        """Store the run's status and summary (a RunSummary, or the JSON form of one)."""
        stored = summary.to_json() if isinstance(summary, RunSummary) else summary
        self._writing(
            f"finishing run {run_id}",
            partial(
                self._db.execute,
                "UPDATE runs SET status = ?, summary = ? WHERE run_id = ?",
                (status, compact_json(stored), run_id),
            ),
        )

    def begin(self) -> None:
        """Open a transaction that groups the trials written until `commit`; it holds the
        write lock from here (IMMEDIATE), so a wait for it happens here, not mid-group."""
        if not self._db.in_transaction:
            self._writing("starting a write", partial(self._db.execute, "BEGIN IMMEDIATE"))

    def commit(self) -> None:
        if self._db.in_transaction:
            try:
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                raise damage(exc, self.path, "committing trials") from None

    def rollback(self) -> None:
        """Drop an open transaction (after a failed write); what was committed stays."""
        if self._db.in_transaction:
            with contextlib.suppress(sqlite3.Error):  # a failed commit may have ended it
                self._db.execute("ROLLBACK")

    @contextlib.contextmanager
    def references_unchecked(self) -> Iterator[None]:
        """Foreign keys not checked while rows whose references hold by how they were made
        are written (a regrade's: run/regrade.py), checked again after: their lookups were
        a fourth of copying a regraded share in (measured). SQLite changes this out of a
        transaction only: entered in one, keys stay checked; a transaction still open on
        the way out (a failed commit) is dropped first."""
        self._db.execute("PRAGMA foreign_keys=OFF")
        try:
            yield
        finally:
            self.rollback()
            self._db.execute("PRAGMA foreign_keys=ON")

    def write_trial(
        self, result: TrialResult, trace: Trace, answer: str, outcome: Outcome | None
    ) -> None:
        """Store one finished trial atomically: all of it or none of it.

        Inside `begin` ... `commit` it becomes durable at the commit; else at once.
        """
        self.insert_trial(self.encoded_trial(result, trace, answer, outcome))

    def encoded_trial(
        self, result: TrialResult, trace: Trace, answer: str, outcome: Outcome | None
    ) -> EncodedTrial:
        """A finished trial as `write_trial` inserts it (redacted first, `result` in place),
        for `insert_trial` to insert later."""
        if self.redactor is not None:
            trace, answer, outcome = self.redactor.trial(result, trace, answer, outcome)
        return encode_trial(result, answer, outcome, None, trace.events)

    def insert_trial(self, encoded: EncodedTrial) -> None:
        """Insert one encoded trial atomically, as `write_trial` does."""
        doing = f"writing trial {encoded.row[1]}#{encoded.row[2]}"
        self._writing(doing, partial(self._insert_rows, encoded))

    def _insert_rows(self, encoded: EncodedTrial) -> int:
        """Insert a trial's row, trace and checks, all or none; returns its rowid.

        Inside a group's transaction a failed insert takes out the trial's rows itself
        (three deletes by key, only then) rather than wrap every trial in a SAVEPOINT and
        RELEASE, two statements that cost about a fifth of the inserts' time; alone, the
        trial is its own transaction."""
        if not self._db.in_transaction:
            with transaction(self._db):
                return self._insert_rows(encoded)
        changes = self._db.total_changes
        try:
            row = (*encoded.row, checks_digest(encoded.checks))  # digested with the inserts
            rowid = self._db.execute(_INSERT_TRIAL, row).lastrowid
            assert rowid is not None
            self._db.execute(_INSERT_TRACE, (rowid, encoded.events))
            insert_many(self._db, _CHECKS, encoded.checks, lead=rowid)
        except BaseException:
            # a full disk may have rolled the group back; a trial row that did not go in
            # (one stored twice) leaves the first one's rows alone
            if self._db.in_transaction and self._db.total_changes > changes:
                with contextlib.suppress(sqlite3.Error):
                    # the trial's row is the last rowid inserted (its trace's row has the
                    # same, checks are a WITHOUT ROWID table), also when an interrupt came
                    # before `rowid`
                    (rowid,) = self._db.execute("SELECT last_insert_rowid()").fetchone()
                    for table, key in _TRIAL_ROWS:
                        self._db.execute(f"DELETE FROM {table} WHERE {key} = ?", (rowid,))
            raise
        return rowid

    # -- reading -------------------------------------------------------------------

    def _column(self, name: str) -> str:
        """`t.NAME`, or NULL in an older store opened read-only (not migrated)."""
        return f"t.{name}" if name in self._columns else "NULL"

    def _checks_owner(self) -> str:
        """The rowid of the trial whose rows in `checks` are trial `t`'s: a regraded trial
        whose graders made its source's checks shares them (run/regrade.py)."""
        return f"COALESCE({self._column('checks_of')}, t.id)"

    def _read(self, what: str, read: Callable[[], _T]) -> _T:
        """`read()`; a damaged page or row becomes StoreDamaged naming `what`."""
        try:
            return read()
        except _UNREADABLE as exc:
            raise _unreadable(exc, self.path, what) from None

    def runs(self, limit: int = 50) -> list[dict[str, Any]]:
        """The newest runs; a run whose row cannot be read has `unreadable` set (why)."""
        rows = self._read(
            "the list of runs",
            partial(
                _fetch,
                self._db,
                "SELECT run_id, created_at, status, manifest, summary FROM runs"
                " ORDER BY created_at DESC LIMIT ?",
                (limit,),
            ),
        )
        out = []
        for row in rows:
            try:
                out.append(self._run_row(row))
            except _UNREADABLE as exc:
                out.append(
                    {
                        "run_id": row[0],
                        "created_at": row[1] if isinstance(row[1], int | float) else 0.0,
                        "status": row[2],
                        "manifest": {},
                        "summary": None,
                        "unreadable": _why(exc),
                    }
                )
        return out

    def run(self, run_id: str) -> dict[str, Any]:
        """A run by id, or by a unique prefix of it; `latest` names the newest run."""
        head = "SELECT run_id, created_at, status, manifest, summary FROM runs"
        if run_id == "latest":
            query, args = f"{head} ORDER BY created_at DESC LIMIT 1", []
        else:
            query = (
                f"{head} WHERE run_id = ?1 OR (substr(run_id, 1, length(?1)) = ?1"
                " AND NOT EXISTS (SELECT 1 FROM runs WHERE run_id = ?1))"
            )
            args = [run_id]
        rows = self._read("the list of runs", partial(_fetch, self._db, query, tuple(args)))
        if len(rows) != 1:
            why = "no run" if not rows else f"{len(rows)} runs"
            raise RunNotFound(f"{why} matching {run_id!r} in {self.path}")
        return self._read(f"run {rows[0][0]}", partial(self._run_row, rows[0]))

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
        """Every stored trial of a run with its checks, in (task, trial) order, streamed.

        Raises StoreDamaged (naming the run) when a page or row of it cannot be read."""
        try:
            yield from self._trial_results(run_id)
        except _UNREADABLE as exc:
            raise _unreadable(exc, self.path, f"run {run_id}") from None

    def _trial_results(self, run_id: str) -> Iterator[TrialResult]:
        rows = self._db.execute(
            "SELECT t.id, t.task_id, t.trial, t.seed, t.status, t.score, t.latency_s,"
            f" t.trace_id, t.usage, t.metrics, t.error, {self._column('simulated_s')},"
            " c.name, c.kind, c.passed, c.score, c.severity, c.evidence"
            f" FROM trials t LEFT JOIN checks c ON c.trial_rowid = {self._checks_owner()}"
            " WHERE t.run_id = ? ORDER BY t.task_id, t.trial, c.idx",
            (run_id,),
        )
        for _, group in groupby(rows, key=lambda row: row[0]):
            first, *rest = group
            checks = [
                Check(name, kind, bool(passed), c_score, severity, _loads(evidence))
                for name, kind, passed, c_score, severity, evidence in (
                    row[12:] for row in (first, *rest)
                )
                if name is not None
            ]
            row = (run_id, *first[1:7], first[11] or 0.0, *first[7:11])
            yield result_of_row(row, checks, _loads(row[9]), _loads(row[10]))

    def trial_keys(self, run_id: str) -> set[tuple[str, int]]:
        """The (task, trial) pairs stored for a run: what a resumed run skips."""
        query = "SELECT task_id, trial FROM trials WHERE run_id = ?"
        return set(self._read(f"run {run_id}", partial(_fetch, self._db, query, (run_id,))))

    def task_counts(self, run_id: str) -> dict[str, dict[str, int]]:
        """Per task: trials stored and how many passed, were partial, failed, timed out,
        broke, await review.

        Read from an index, without loading a trial: fast on a run of millions, and
        available while the run is still going.
        """
        query = (
            "SELECT task_id, COUNT(*), SUM(status = 'passed'), SUM(status = 'partial'),"
            " SUM(status = 'failed'), SUM(status = 'timeout'), SUM(status = 'error'),"
            " SUM(status = 'needs_review')"
            " FROM trials WHERE run_id = ? GROUP BY task_id ORDER BY task_id"
        )
        rows = self._read(f"run {run_id}", partial(_fetch, self._db, query, (run_id,)))
        return {
            task_id: {
                "trials": n,
                "passed": p,
                "partial": pa,
                "failed": f,
                "timeout": t,
                "error": e,
                "needs_review": r,
            }
            for task_id, n, p, pa, f, t, e, r in rows
        }

    def trace(self, run_id: str, task_id: str, trial: int) -> tuple[Trace, str, Outcome | None]:
        """A trial's trace, answer and outcome (a regraded trial's are its source's)."""
        what = f"trial {task_id}#{trial} of run {run_id}"
        return self._read(what, partial(self._trace, run_id, task_id, trial))

    def _trace(self, run_id: str, task_id: str, trial: int) -> tuple[Trace, str, Outcome | None]:
        row = self._db.execute(
            "SELECT s.trace_id, s.answer, s.outcome FROM trials t"
            f" JOIN trials s ON s.id = COALESCE({self._column('trace_of')}, t.id)"
            " WHERE t.run_id = ? AND t.task_id = ? AND t.trial = ?",
            (run_id, task_id, trial),
        ).fetchone()
        if row is None:
            raise RunNotFound(f"no trial {task_id}#{trial} in run {run_id}")
        trace_id, answer, outcome = row
        where = "WHERE t.run_id = ? AND t.task_id = ? AND t.trial = ?"
        texts = self._events(where, (run_id, task_id, trial))
        events = [event for _, events in _traces(texts) for event in events]
        trace = Trace(f"{task_id}#{trial}", trace_id, events)
        return trace, answer or "", Outcome.from_dict(_loads(outcome)) if outcome else None

    def graded_trials(
        self,
        run_id: str,
        kept: Sequence[str],
        batch: int = 500,
        *,
        after: Key = FIRST_KEY,
        until: Key | None = None,
    ) -> Iterator[StoredTrial]:
        """Every trial of a run (with a key after `after`, up to `until`) with what
        grading reads: trace, answer, outcome, usage.

        In (task, trial) order, read `batch` trials at a time by key range, each read
        finished before a trial is handed on: a read cursor held open while the caller
        writes would keep the WAL from being checkpointed, and every page read would get
        slower. Of the stored checks only those named in `kept` are read: the checks the
        harness adds, which graders do not produce. Each trial is decoded as it is handed
        on, so that a caller that is done with it frees it while it is in the CPU's caches.
        """
        while True:
            rows = self.graded_rows(run_id, kept, after, until, batch)
            if not rows[0]:
                return
            decoded = decode_graded(run_id, *rows)
            while (stored := self._read(f"run {run_id}", partial(next, decoded, None))) is not None:
                yield stored
            after = (rows[0][-1][1], rows[0][-1][2])

    def graded_rows(
        self, run_id: str, kept: Sequence[str], after: Key, until: Key | None, limit: int
    ) -> GradedRows:
        """The first `limit` trials after `after` (up to `until`) as stored, not decoded:
        their rows, their trace events' and kept checks' rows, for `decode_graded` here
        or in a worker elsewhere."""
        return self._read(
            f"run {run_id}", partial(self._graded_rows, run_id, kept, after, until, limit)
        )

    def _graded_rows(
        self, run_id: str, kept: Sequence[str], after: Key, until: Key | None, limit: int
    ) -> GradedRows:
        source_of = f"COALESCE({self._column('trace_of')}, t.id)"
        names = ",".join("?" * len(kept)) or "NULL"
        bound = "" if until is None else " AND (t.task_id, t.trial) <= (?, ?)"
        rows = self._db.execute(
            "SELECT s.id, t.task_id, t.trial, t.seed, t.status,"
            f" t.latency_s, t.trace_id, t.usage, t.error, s.answer, s.outcome, t.id,"
            f" {self._column('simulated_s')}, {self._checks_owner()},"
            f" {self._column('checks_digest')}"
            f" FROM trials t JOIN trials s ON s.id = {source_of}"
            f" WHERE t.run_id = ? AND (t.task_id, t.trial) > (?, ?){bound}"
            " ORDER BY t.task_id, t.trial LIMIT ?",
            (run_id, *after, *(until or ()), limit),
        ).fetchall()
        if not rows:
            return [], [], []
        window = (run_id, *after, rows[-1][1], rows[-1][2])
        between = (
            "WHERE t.run_id = ? AND (t.task_id, t.trial) > (?, ?)"
            " AND (t.task_id, t.trial) <= (?, ?)"
        )
        events = self._events(between, window)
        checks = self._db.execute(
            "SELECT t.id, c.name, c.kind, c.passed, c.score, c.severity, c.evidence"
            f" FROM trials t JOIN checks c ON c.trial_rowid = {self._checks_owner()} {between}"
            f" AND c.name IN ({names}) ORDER BY t.task_id, t.trial, c.idx",
            (*window, *kept),
        ).fetchall()
        return rows, events, checks

    def _events(self, where: str, args: tuple[Any, ...]) -> list[tuple[int, str]]:
        """(rowid, its trace's events as `encode_trial` writes them) of the trials `t`
        that `where` selects, in (task, trial) order; a regraded trial's are its source's.
        An older store opened read-only has them a row each: joined here into that text."""
        source_of = f"COALESCE({self._column('trace_of')}, t.id)"
        if self._event_rows:
            rows = self._db.execute(
                "SELECT t.id, e.seq, e.t, e.kind, e.data FROM trials t"
                f" JOIN events e ON e.trial_rowid = {source_of}"
                f" {where} ORDER BY t.task_id, t.trial, e.seq",
                args,
            )
            return list(_event_arrays(rows))
        return self._db.execute(
            f"SELECT t.id, r.events FROM trials t JOIN traces r ON r.trial_rowid = {source_of}"
            f" {where} ORDER BY t.task_id, t.trial",
            args,
        ).fetchall()

    def trials_by_trace(self, trace_ids: Iterable[str]) -> list[tuple[str, str, int, str]]:
        """(run id, task id, trial, trace id) of every stored trial whose trace id is one
        of `trace_ids`, asked `_TRACE_CHUNK` ids at a time (SQLite's bound-parameter limit is far
        above it)."""
        wanted = sorted(set(trace_ids))
        out = []
        for start in range(0, len(wanted), _TRACE_CHUNK):
            chunk = wanted[start : start + _TRACE_CHUNK]
            marks = ",".join("?" * len(chunk))
            query = (
                f"SELECT run_id, task_id, trial, trace_id FROM trials WHERE trace_id IN ({marks})"
            )
            out += self.select("the trials by trace id", query, chunk)
        return out

    def share_bounds(self, run_id: str, size: Callable[[int], int]) -> Iterator[tuple[Key, Key]]:
        """A run's trials in shares, as (after, until] key ranges in order: what a worker
        reads with `graded_trials(after=..., until=...)`; each share `size(left)` trials
        (at least one), `left` the trials not yet in a share. Read from the index, not
        the rows."""
        after: Key = FIRST_KEY
        count = "SELECT COUNT(*) FROM trials WHERE run_id = ?"
        query = (
            "SELECT task_id, trial FROM trials WHERE run_id = ? AND (task_id, trial) > (?, ?)"
            " ORDER BY task_id, trial LIMIT 1 OFFSET ?"
        )
        last = (
            "SELECT task_id, trial FROM trials WHERE run_id = ? AND (task_id, trial) > (?, ?)"
            " ORDER BY task_id DESC, trial DESC LIMIT 1"
        )
        left = self._read(f"run {run_id}", partial(_one, self._db, count, (run_id,)))[0]
        while True:
            taken = max(size(left), 1)
            row = self._read(
                f"run {run_id}", partial(_one, self._db, query, (run_id, *after, taken - 1))
            )
            if row is None:
                row = self._read(f"run {run_id}", partial(_one, self._db, last, (run_id, *after)))
                if row is not None:
                    yield after, (row[0], row[1])
                return
            left -= taken
            yield after, (row[0], row[1])
            after = (row[0], row[1])


def writes(
    doing: str,
) -> Callable[
    [Callable[Concatenate[sqlite3.Connection, _P], _T]], Callable[Concatenate[Store, _P], _T]
]:
    """A write of a table kept beside the runs (store/desk.py, store/label_tables.py), made a
    function of the store: it runs under the store's lock and waits for another
    process's write lock as every write does (`Store._writing`), `doing` naming it."""

    def on_store(
        write: Callable[Concatenate[sqlite3.Connection, _P], _T],
    ) -> Callable[Concatenate[Store, _P], _T]:
        def written(store: Store, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
            return store._writing(doing, partial(write, store._db, *args, **kwargs))

        written.__doc__, written.__name__ = write.__doc__, write.__name__
        return written

    return on_store


def reads(
    read: Callable[Concatenate[sqlite3.Connection, _P], _T],
) -> Callable[Concatenate[Store, _P], _T]:
    """A read of a table kept beside the runs, made a function of the store: it holds the
    store's lock, so no other thread's statement runs between its own on the connection."""

    def on_store(store: Store, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        with store.lock:
            return read(store._db, *args, **kwargs)

    on_store.__doc__, on_store.__name__ = read.__doc__, read.__name__
    return on_store


def each_statement(db: sqlite3.Connection, script: str) -> None:
    """Run a script's statements one by one: `executescript` commits an open transaction
    first."""
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement)


@contextlib.contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[None]:
    """`BEGIN IMMEDIATE` (the write lock taken now, so a busy file fails here, before
    anything is written) ... `COMMIT`; on any failure `ROLLBACK`, so the caller (`writes`)
    may try the whole write again."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:  # a failed COMMIT or a full disk may have ended it
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
        raise


def _fetch(db: sqlite3.Connection, query: str, args: tuple[Any, ...]) -> list[Any]:
    return db.execute(query, args).fetchall()


def _one(db: sqlite3.Connection, query: str, args: tuple[Any, ...]) -> Any:
    return db.execute(query, args).fetchone()


#: A share of a run as stored: trial rows, (trial rowid, trace events) rows, kept check rows.
GradedRows = tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[tuple[Any, ...]]]


def decode_graded(
    run_id: str,
    rows: list[tuple[Any, ...]],
    events: list[tuple[Any, ...]],
    checks: list[tuple[Any, ...]],
) -> Iterator[StoredTrial]:
    """The StoredTrials of rows read by `Store.graded_rows`."""
    traces = iter(_traces(events))
    trace = next(traces, None)
    by_trial: dict[int, list[Check]] = {}
    evidences = loads_all([row[6] for row in checks])
    for (rowid, name, kind, passed, score, severity, _), evidence in zip(
        checks, evidences, strict=True
    ):
        check = Check(name, kind, bool(passed), score, severity, evidence)
        by_trial.setdefault(rowid, []).append(check)
    usages = loads_all([row[7] for row in rows])
    outcomes = _outcomes([row[10] for row in rows])
    for row, usage, outcome in zip(rows, usages, outcomes, strict=True):
        source, task_id, trial, seed, status, latency, trace_id, _, error, answer = row[:10]
        result = TrialResult(
            run_id=run_id,
            task_id=task_id,
            trial=trial,
            seed=seed,
            status=status,
            usage=Usage.stored(usage),
            latency_s=latency,
            simulated_s=row[12] or 0.0,
            trace_id=trace_id,
            error=error,
        )
        trial_events: list[TraceEvent] = []
        if trace is not None and trace[0] == row[11]:
            trial_events = trace[1]
            trace = next(traces, None)
        yield StoredTrial(
            source,
            result,
            Trace(f"{task_id}#{trial}", trace_id, trial_events),
            answer or "",
            outcome,
            by_trial.get(row[11], []),
            row[13],
            row[14],
        )


def _outcomes(texts: list[str | None]) -> list[Outcome | None]:
    """Each row's outcome, decoded once per distinct text: a task's trials often end in
    the same final state (each of the regrade benchmark's tasks, in every trial), and
    its text is most of what a share decodes besides the traces. Shared by those trials,
    as graders only read it."""
    distinct = dict.fromkeys(text for text in texts if text)
    values = loads_all(list(distinct))
    made = {text: Outcome.from_dict(value) for text, value in zip(distinct, values, strict=True)}
    return [made[text] if text else None for text in texts]


def _traces(events: list[tuple[int, str]]) -> Iterator[tuple[int, list[TraceEvent]]]:
    """Each trial's trace events with the trial's rowid, in the order read, decoded when
    it is reached: a share's traces decoded in one call were all alive until the share
    was done, and out of the CPU's caches by the time they were graded and freed."""
    for rowid, text in events:
        yield rowid, list(starmap(TraceEvent, _loads(text)))


def event_lists(events: Sequence[TraceEvent], trial_id: str) -> list[list[Any]]:
    """A trace's events as the store keeps them (`traces.events`, JSON encoded): each as
    [seq, t, kind, data], in seq order with each seq once and `t` a float, as the table of
    a row per event kept them (its key, its REAL column)."""
    seqs = [e.seq for e in events]
    if not all(map(lt, seqs, islice(seqs, 1, None))):
        events = sorted(events, key=attrgetter("seq"))
        seqs = sorted(seqs)
        twice = next((a for a, b in pairwise(seqs) if a == b), None)
        if twice is not None:
            raise ValueError(f"trial {trial_id}: two trace events numbered {twice}")
    return [[e.seq, float(e.t), e.kind, e.data] for e in events]


def _event_arrays(rows: Iterable[tuple[Any, ...]]) -> Iterator[tuple[int, str]]:
    """Event rows of a store before schema 4 (rowid, seq, t, kind, data), each trial's
    together by seq, as `encode_trial` writes them: the stored data text kept as it is."""
    for rowid, group in groupby(rows, key=itemgetter(0)):
        texts = (f"{_dumps([seq, t, kind])[:-1]},{data}]" for _, seq, t, kind, data in group)
        yield rowid, f"[{','.join(texts)}]"


def _tables(db: sqlite3.Connection) -> set[str]:
    return {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}


@dataclass(frozen=True, slots=True)
class EncodedTrial:
    """A trial as the store inserts it: its row, its checks' rows and its trace's events
    (none for a regraded trial, which shares its source's), JSON encoded. A grading worker
    encodes; the process that owns the store inserts."""

    row: tuple[Any, ...]
    checks: list[tuple[Any, ...]]
    events: str | None = None


#: The texts that an encoded evidence holds where a summary reads it (`summary_evidence`).
_UNDECIDED_TEXT, _NOT_MEASURED_TEXT = f'"{UNDECIDED}"', f'"{NOT_MEASURED}"'


def stored_summary_evidence(evidence: str) -> tuple[tuple[str, Any], ...]:
    """`summary_evidence` of a check's encoded evidence, decoded only where it may hold
    what a summary reads."""
    if _UNDECIDED_TEXT not in evidence and _NOT_MEASURED_TEXT not in evidence:
        return ()
    return summary_evidence(_loads(evidence))


def result_of_row(
    row: tuple[Any, ...], checks: list[Check], usage: dict[str, Any], metrics: dict[str, Any]
) -> TrialResult:
    """A trial's result from its row's first columns, in `encode_trial`'s order, and its
    usage and metrics decoded."""
    run_id, task_id, trial, seed, status, score, latency, simulated = row[:8]
    trace_id, error = row[8], row[11]
    return TrialResult(
        run_id=run_id,
        task_id=task_id,
        trial=trial,
        seed=seed,
        status=status,
        checks=checks,
        usage=Usage.stored(usage),
        latency_s=latency,
        simulated_s=simulated,
        trace_id=trace_id,
        score=score,
        metrics=metrics,
        error=error,
    )


def encode_trial(
    result: TrialResult,
    answer: str | None,
    outcome: Outcome | None,
    trace_of: int | None,
    events: Sequence[TraceEvent] | None = None,
) -> EncodedTrial:
    """`result` (and the answer, outcome and trace `events` a trial with its own trace
    keeps) as rows, its JSON by one `compact_jsons` call. The row's `checks_digest` is
    left to whoever inserts it (`checks_digest`: a regrade's worker digests each distinct
    list of checks of its share once)."""
    checks = result.checks
    values: list[Any] = [result.usage.to_dict(), result.metrics, *(c.evidence for c in checks)]
    if outcome is not None:  # its two parts apart: see `_outcome_text`
        values += (outcome.final_state, [e.to_dict() for e in outcome.ledger])
    if events is not None:
        values.append(event_lists(events, f"{result.task_id}#{result.trial}"))
    usage, metrics, *texts = compact_jsons(values)
    # the score a real, as its column keeps it: 1, True and 1.0 alike, 0.0 and -0.0 (a
    # Check's score is never None: its __post_init__ sets it)
    rows = [
        (i, c.name, c.kind, int(c.passed), c.score + 0.0, c.severity, evidence)  # type: ignore[operator]
        for (i, c), evidence in zip(enumerate(checks), texts[: len(checks)], strict=True)
    ]
    return EncodedTrial(
        (
            result.run_id,
            result.task_id,
            result.trial,
            result.seed,
            result.status,
            result.score,
            result.latency_s,
            result.simulated_s,
            result.trace_id,
            usage,
            metrics,
            result.error,
            answer,
            None if outcome is None else _outcome_text(*texts[len(checks) : len(checks) + 2]),
            trace_of,
        ),
        rows,
        None if events is None else texts[-1],
    )


def checks_digest(rows: list[tuple[Any, ...]]) -> bytes:
    """A digest of a trial's checks' rows as `encode_trial` writes them: SHA-256 of their
    JSON text (orjson: a string quoted, a float in its shortest exact form). A regrade
    compares its own checks' with it to share the stored rows where its graders decided
    the same (run/regrade.py): equal digests stand for equal rows (no collision is to be
    found), but for an infinite or NaN score, which JSON writes as null: a list holding
    one shares nothing (`shares.EncodedShare.add`)."""
    return hashlib.sha256(orjson.dumps(rows, default=float)).digest()


def _outcome_text(final_state: str, ledger: str) -> str:
    """`compact_json(outcome.to_dict())` from the texts of its two values, encoded apart:
    a ledger entry's unset entity or idempotency key is a null in nearly every trial,
    and a null is read back (`_same`); so only the short ledger is, not the final state
    with it."""
    return f'{{"final_state":{final_state},"ledger":{ledger}}}'


def insert_many(
    db: sqlite3.Connection, into: str, rows: Sequence[tuple[Any, ...]], lead: Any = _NO_LEAD
) -> None:
    """Insert `rows` (of equal length) `into` a table, "name(column, ...)", by INSERTs of
    up to ROWS_AT_ONCE rows each: `executemany`, a statement run per row, cost a fifth
    more (measured: a trial's 11 checks, a regrade's share). `lead`: a value every row
    begins with (a trial's rowid before its checks), bound once as `?1` rather than
    copied into each row (a seventh of a trial's checks insert, measured)."""
    if not rows:
        return
    width = len(rows[0])
    led = lead is not _NO_LEAD
    limit = db.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) - led
    at_once = max(1, min(ROWS_AT_ONCE, limit // width))
    for start in range(0, len(rows), at_once):
        chunk = rows[start : start + at_once]
        values = chain.from_iterable(chunk)
        statement = _insert_statement(into, width, len(chunk), led)
        db.execute(statement, [lead, *values] if led else list(values))


@cache
def _insert_statement(into: str, width: int, rows: int, led: bool) -> str:
    """`INSERT INTO into` of `rows` rows of `width` values; `led`: each row begins with
    `?1`, then its own values in order (numbered parameters)."""
    if not led:
        marks = f"({','.join('?' * width)})"
        return f"INSERT INTO {into} VALUES {','.join([marks] * rows)}"
    numbered = (
        f"(?1,{','.join(f'?{2 + row * width + k}' for k in range(width))})" for row in range(rows)
    )
    return f"INSERT INTO {into} VALUES {','.join(numbered)}"


def _why(exc: BaseException) -> str:
    text = str(exc).splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:200]


def _unreadable(exc: BaseException, path: Path, what: str) -> StoreError:
    """A failed read as one line naming what could not be read."""
    if isinstance(exc, sqlite3.Error) and is_busy(exc):
        return damage(exc, path, f"reading {what}")
    return StoreDamaged(f"{path}: {what} is unreadable ({_why(exc)}); the store is damaged")


@dataclass(slots=True)
class StoredTrial:
    """A stored trial as grading reads it; `source` is the rowid of its trace's trial."""

    source: int
    result: TrialResult
    trace: Trace
    answer: str
    #: Shared with the trials whose stored outcome reads the same: not to be changed.
    outcome: Outcome | None
    #: The stored checks the harness added (an agent crash, a protocol error, ...).
    kept: list[Check]
    #: The rowid of the trial whose rows in `checks` are this trial's (`checks_of`), and
    #: their digest (`checks_digest`; None in a store of schema 4 and before).
    checks_of: int
    checks_digest: bytes | None
