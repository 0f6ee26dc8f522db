"""A share of regraded trials as the store takes it (docs/architecture.md, Regrade at scale).

A worker hands back a share's trials as rows. Grading in this process, they stay Python
tuples (`EncodedShare`), inserted a few hundred rows to a statement. Where two workers or
more grade at once, each also packs them into an SQLite database image (`PackedShare`), and
this process copies its tables into the store in SQL, with no Python object per row:
inserting the rows is most of what the process that owns the store does in a regrade,
and with enough workers that process is the one that caps the rate. Packing costs a
worker CPU (about two thirds of what it saves here where a task's trials make the same
checks, measured; as much where every trial's differ), so one worker, the slower side,
hands back tuples. Either way the worker also hands back what the
summary reads, reduced (`ShareVerdicts`): this process decodes no evidence and makes no
per-check object. A share is inserted under one savepoint: all of it or none of it.
"""

from __future__ import annotations

import contextlib
import math
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from proctor.core.results import Check, ChecksKey, TrialResult, Usage
from proctor.store.sqlite import (
    EncodedTrial,
    checks_digest,
    each_statement,
    insert_many,
    loads_all,
    stored_summary_evidence,
    writes,
)

#: A trial's columns in `encode_trial`'s order, then the trial whose checks it shares
#: (`checks_of`); a check's after its trial's rowid.
_TRIAL = (
    "run_id, task_id, trial, seed, status, score, latency_s, simulated_s, trace_id, usage,"
    " metrics, error, answer, outcome, trace_of, checks_digest, checks_of"
)
_CHECK = "idx, name, kind, passed, score, severity, evidence"
#: A packed share's tables: columns without types, so each value is kept as it was given.
#: A trial's checks are its `first`..`last` rows of `checks` (by rowid), where each distinct
#: list of checks of the share is once: a task's trials often make the same checks, and
#: packing a row per trial's check was most of a worker's packing. Rows are inserted in
#: rowid order and ranges read back by rowid: keyed by (list, idx) instead, each insert
#: searched that key.
_PACKED_SCHEMA = (
    f"CREATE TABLE trials (place INTEGER PRIMARY KEY, first, last, {_TRIAL});"
    f" CREATE TABLE checks ({_CHECK})"
)
_CHECKS_OF = ", ".join(f"c.{column}" for column in _CHECK.split(", "))
#: The name a packed share is attached under while it is copied.
_ATTACHED = "regraded_share"
#: The rows of checks written for a trial that shares another's (`checks_of`).
_SHARED: list[tuple[Any, ...]] = []


#: This Python's SQLite can hand a database image over (`serialize`; not every build
#: can): else every share goes back as tuples, on both sides.
PACKABLE = hasattr(sqlite3.Connection, "serialize") and hasattr(sqlite3.Connection, "deserialize")


@dataclass(frozen=True, slots=True)
class ShareVerdicts:
    """What a summary reads of a share's trials, reduced where they were graded: each
    distinct list of checks once, as its key (`ChecksKey`: evidence but for what a summary
    reads of it, tested in its encoded text), each distinct usage and metrics text once,
    and per trial the first columns of its row, the indexes of those three, and its status
    before the regrade. It pickles small, and the process that owns the store makes one
    Check per distinct check of the whole run (the Tally's), decoding no evidence."""

    checks: dict[ChecksKey, int] = field(default_factory=dict)
    usages: dict[str, int] = field(default_factory=dict)
    metrics: dict[str, int] = field(default_factory=dict)
    trials: list[tuple[Any, ...]] = field(default_factory=list)

    def listed(self, checks: Sequence[tuple[Any, ...]]) -> int:
        """The index of the key of a list of checks' rows in `encode_trial`'s order."""
        key = tuple(
            (name, kind, bool(passed), score, severity, stored_summary_evidence(evidence))
            for _, name, kind, passed, score, severity, evidence in checks
        )
        return self.checks.setdefault(key, len(self.checks))

    def add(self, row: tuple[Any, ...], at: int, before: str) -> None:
        """A trial's row in `encode_trial`'s order, its checks' key's index (`listed`)."""
        usage = self.usages.setdefault(row[9], len(self.usages))
        metrics = self.metrics.setdefault(row[10], len(self.metrics))
        self.trials.append((*row[:9], usage, metrics, at, before))

    def results(
        self,
        checks_of: Callable[[ChecksKey], list[Check]],
        metrics_of: Callable[[dict[str, float]], dict[str, float]],
    ) -> list[tuple[TrialResult, str]]:
        """Each trial's result as a summary keeps it (`TrialResult.kept`: no error text),
        its checks and metrics those `checks_of` and `metrics_of` give for their keys
        (a Tally's, shared with the run's other trials), and its status before."""
        usages = [Usage.stored(usage) for usage in loads_all(list(self.usages))]
        metrics = [metrics_of(m) for m in loads_all(list(self.metrics))]
        checks = [checks_of(key) for key in self.checks]
        return [
            (
                TrialResult(
                    run_id, task_id, trial, seed, status, checks[at], usages[usage],
                    latency, simulated, trace_id, score, metrics[metric], None,
                ),
                before,
            )
            for (
                run_id, task_id, trial, seed, status, score, latency, simulated, trace_id,
                usage, metric, at, before,
            ) in self.trials
        ]  # fmt: skip


@dataclass(frozen=True, slots=True)
class EncodedShare:
    """A share's trials as rows: `encode_trial`'s rows and `checks_of`, each trial's
    checks' rows (none where it shares those of the trial it regrades; led by the trial's
    rowid when inserted: one tuple a check is made, where it goes), and what a summary
    reads of them. Trials whose checks' rows are equal share the list first
    added (a task's trials often make the same checks): what a summary reads of it is
    made once, it is packed once and pickled once. Equal rows are stored alike: the
    store's columns are typed (an integer score is a real), and SQLite keeps a real's
    value, not a zero's sign."""

    rows: list[tuple[Any, ...]] = field(default_factory=list)
    checks: list[list[tuple[Any, ...]]] = field(default_factory=list)
    verdicts: ShareVerdicts = field(default_factory=ShareVerdicts)
    #: Each distinct list of checks' rows: the list kept, its key's index in `verdicts`,
    #: its digest, and whether it may share (every score finite: `checks_digest`). Not
    #: pickled: the lists are those of `checks`.
    lists: dict[tuple[tuple[Any, ...], ...], tuple[list[tuple[Any, ...]], int, bytes, bool]] = (
        field(default_factory=dict)
    )

    def add(self, encoded: EncodedTrial, before: str, stored: tuple[int, bytes | None]) -> None:
        """A regraded trial encoded, its status `before` and `stored`: the rowid whose rows
        of checks the trial regraded has, and their digest. Where its own have that digest
        (and every score is finite), it shares those rows (`checks_of`) and none of its
        own are written, as it shares the trace."""
        key = tuple(encoded.checks)
        kept = self.lists.get(key)
        if kept is None:
            rows = encoded.checks
            finite = all(math.isfinite(row[4]) for row in rows)
            kept = self.lists[key] = (rows, self.verdicts.listed(rows), checks_digest(rows), finite)
        owner, digest = stored
        shared = kept[3] and digest == kept[2]
        self.rows.append((*encoded.row, kept[2], owner if shared else None))
        self.checks.append(_SHARED if shared else kept[0])
        self.verdicts.add(encoded.row, kept[1], before)

    def __getstate__(self) -> tuple[Any, ...]:
        return self.rows, self.checks, self.verdicts

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        for name, value in zip(("rows", "checks", "verdicts", "lists"), (*state, {}), strict=True):
            object.__setattr__(self, name, value)

    def packed(self) -> PackedShare:
        """The share as an SQLite database image, for a worker to hand back: each distinct
        list of checks once, each trial the range of its list's rows."""
        spans: dict[int, tuple[int, int]] = {}  # by the list's id: equal lists are one
        distinct: list[tuple[Any, ...]] = []
        trials = []
        for place, (row, its) in enumerate(zip(self.rows, self.checks, strict=True)):
            span = spans.get(id(its))
            if span is None:  # rowids 1, 2, ... as inserted into an empty table
                span = spans[id(its)] = (len(distinct) + 1, len(distinct) + len(its))
                distinct += its
            trials.append((place, *span, *row))
        db = sqlite3.connect(":memory:")
        try:
            each_statement(db, _PACKED_SCHEMA)
            insert_many(db, f"trials(place, first, last, {_TRIAL})", trials)
            insert_many(db, f"checks({_CHECK})", distinct)
            db.commit()
            return PackedShare(db.serialize(), self.verdicts)
        finally:
            db.close()


@dataclass(frozen=True, slots=True)
class PackedShare:
    """A share's rows as an SQLite database image (`EncodedShare.packed`), copied into
    the store, and what a summary reads of them: no row crosses as a Python object."""

    image: bytes
    verdicts: ShareVerdicts


def _placed(rows: list[tuple[Any, ...]], first: int = 0) -> list[tuple[Any, ...]]:
    return [(first + place, *row) for place, row in enumerate(rows)]


def _placed_checks(checks: list[list[tuple[Any, ...]]], first: int = 0) -> list[tuple[Any, ...]]:
    return [(first + place, *check) for place, its in enumerate(checks) for check in its]


@writes("writing regraded trials")
def insert_share(db: sqlite3.Connection, share: EncodedShare | PackedShare) -> ShareVerdicts:
    """Insert a share's trials and checks (`insert_many`); returns what a summary reads.

    The rowids are those SQLite would give one insert at a time (the largest so far,
    plus one), taken under the write lock the caller's transaction holds. A packed share
    is attached to the store's connection until `detach_shares` (SQLite detaches nothing
    inside a transaction)."""
    db.execute("SAVEPOINT share")
    try:
        first = db.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM main.trials").fetchone()[0]
        if isinstance(share, PackedShare):
            _copy_packed(db, share, first)
        else:
            insert_many(db, f"main.trials(id, {_TRIAL})", _placed(share.rows, first))
            insert_many(
                db,
                f"main.checks(trial_rowid, {_CHECK})",
                _placed_checks(share.checks, first),
            )
        db.execute("RELEASE share")
        return share.verdicts
    except BaseException:
        with contextlib.suppress(sqlite3.Error):  # a full disk may have ended it already
            db.execute("ROLLBACK TO share")
            db.execute("RELEASE share")
        raise


def _copy_packed(db: sqlite3.Connection, share: PackedShare, first: int) -> None:
    """Copy a packed share's tables into the store's, in SQL."""
    if not _attached(db):
        db.execute(f"ATTACH ':memory:' AS {_ATTACHED}")
    db.deserialize(share.image, name=_ATTACHED)
    db.execute(
        f"INSERT INTO main.trials(id, {_TRIAL}) SELECT place + ?, {_TRIAL}"
        f" FROM {_ATTACHED}.trials ORDER BY place",
        (first,),
    )
    db.execute(
        f"INSERT INTO main.checks(trial_rowid, {_CHECK}) SELECT t.place + ?, {_CHECKS_OF}"
        f" FROM {_ATTACHED}.trials AS t JOIN {_ATTACHED}.checks AS c"
        " ON c.rowid BETWEEN t.first AND t.last ORDER BY t.place, c.rowid",
        (first,),
    )


@writes("detaching regraded shares")
def detach_shares(db: sqlite3.Connection) -> None:
    """Detach the packed shares' database from the store's connection, if attached (out
    of a transaction)."""
    if _attached(db):
        db.execute(f"DETACH {_ATTACHED}")


def _attached(db: sqlite3.Connection) -> bool:
    return any(row[1] == _ATTACHED for row in db.execute("PRAGMA database_list"))
