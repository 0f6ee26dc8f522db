"""The review desk's tables, in the store beside the runs (docs/architecture.md, review/).

Reviewers (only a hash of each sign-in token), their sessions, review items (a trial, or
a blinded pair of a candidate and a baseline trial of one task), assignments of items to
reviewers, labels and adjudications. The tables have their own migration
(`meta.desk_schema_version`): a store written before the desk gains them the first time
the desk opens it, and the run tables of `sqlite.py` are left alone. A store whose desk
tables carry a newer version than this proctor knows is refused (StoreError), read or
written, like a newer store: never rewritten down.

Labels and adjudications are read and written by `labels.py`. Each web request uses its
own thread's connection (`Connections`): WAL lets readers run beside the one writer, and a
writer that finds the file busy waits (`busy_timeout`) instead of failing.

Every page reads with an index: trials and items page by key (`after`), not by offset, and
counts are SQL aggregates, so a run of 100,000 trials is never loaded to show a page.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proctor.core.results import Check
from proctor.store.file_health import StoreDamaged, StoreError
from proctor.store.sqlite import Store, each_statement, reads, transaction, writes

#: 2: `reviewers.removed_at` and `reviewers.link_expires_at`; 3: `labels.informed`.
DESK_SCHEMA_VERSION = 3
BUSY_TIMEOUT_MS = 30_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS reviewers (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    token_hash TEXT NOT NULL UNIQUE,
    adjudicator INTEGER NOT NULL,
    created_at REAL NOT NULL,
    removed_at REAL,
    link_expires_at REAL
);
CREATE TABLE IF NOT EXISTS review_sessions (
    token_hash TEXT PRIMARY KEY,
    reviewer_id INTEGER NOT NULL REFERENCES reviewers(id) ON DELETE CASCADE,
    expires_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS review_items (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    position INTEGER NOT NULL,
    task_id TEXT NOT NULL,
    trial INTEGER NOT NULL,
    other_run_id TEXT NOT NULL,
    other_trial INTEGER NOT NULL,
    swap INTEGER NOT NULL,
    reasons TEXT NOT NULL,
    needed INTEGER NOT NULL,
    labelled INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    UNIQUE (run_id, task_id, trial, other_run_id)
);
CREATE INDEX IF NOT EXISTS review_items_by_position ON review_items(run_id, position);
CREATE INDEX IF NOT EXISTS review_items_progress ON review_items(run_id, needed, labelled);
CREATE INDEX IF NOT EXISTS review_items_partner ON review_items(other_run_id, task_id, other_trial);
CREATE TABLE IF NOT EXISTS assignments (
    id INTEGER PRIMARY KEY,
    item_id INTEGER NOT NULL REFERENCES review_items(id),
    reviewer_id INTEGER NOT NULL REFERENCES reviewers(id),
    assigned_at REAL NOT NULL,
    UNIQUE (item_id, reviewer_id)
);
CREATE TABLE IF NOT EXISTS labels (
    id INTEGER PRIMARY KEY,
    assignment_id INTEGER NOT NULL REFERENCES assignments(id),
    reviewer_id INTEGER NOT NULL REFERENCES reviewers(id),
    run_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    trial INTEGER NOT NULL,
    value TEXT NOT NULL,
    passed INTEGER,
    reason TEXT NOT NULL,
    note TEXT NOT NULL,
    ambiguous INTEGER NOT NULL,
    rubric_version TEXT NOT NULL,
    created_at REAL NOT NULL,
    informed INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS labels_by_trial ON labels(run_id, task_id, trial, reviewer_id);
CREATE INDEX IF NOT EXISTS labels_by_assignment ON labels(assignment_id);
CREATE TABLE IF NOT EXISTS adjudications (
    id INTEGER PRIMARY KEY,
    reviewer_id INTEGER NOT NULL REFERENCES reviewers(id),
    run_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    trial INTEGER NOT NULL,
    value TEXT NOT NULL,
    passed INTEGER NOT NULL,
    reason TEXT NOT NULL,
    note TEXT NOT NULL,
    rubric_version TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS adjudications_by_trial ON adjudications(run_id, task_id, trial);
"""


#: How long a sign-in link works when nobody says (`add-reviewer --link-hours`).
DEFAULT_LINK_HOURS = 72


def _path(db: sqlite3.Connection) -> str:
    return str(db.execute("PRAGMA database_list").fetchone()[2] or ":memory:")


def _version(db: sqlite3.Connection) -> int:
    """The version of the store's desk tables (0: none yet); StoreError for one newer than
    this proctor reads, StoreDamaged for one that is no number."""
    row = db.execute("SELECT value FROM meta WHERE key = 'desk_schema_version'").fetchone()
    if row is None:
        return 0
    text = row[0]
    if not isinstance(text, str) or not (text.isascii() and text.isdigit()):
        raise StoreDamaged(f"{_path(db)}: damaged: its desk schema version is {text!r}")
    version = int(text)
    if version > DESK_SCHEMA_VERSION:
        raise StoreError(
            f"{_path(db)}: its review desk was written by a newer proctor (desk schema "
            f"{version}; this proctor reads up to {DESK_SCHEMA_VERSION}): upgrade proctor"
        )
    return version


#: The version of the store's desk tables, read from the store.
desk_version = reads(_version)


@reads
def present(db: sqlite3.Connection) -> bool:
    """Whether the desk's tables exist (a store the desk never opened has none, and a
    store opened read-only (`report`, `show`, `compare`) cannot be given them); refuses
    newer ones as `_version` does."""
    row = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'adjudications'"
    ).fetchone()
    if row is None:
        return False
    _version(db)  # refuses a newer one
    return True


@writes("creating the review desk's tables")
def migrate(db: sqlite3.Connection) -> None:
    """Create the desk's tables in a store, or bring older ones up to this version (in
    one transaction), and record it; a newer version is refused before anything is
    written."""
    version = _version(db)
    if version == DESK_SCHEMA_VERSION:
        return
    with transaction(db):
        each_statement(db, _SCHEMA)
        columns = {row[1] for row in db.execute("PRAGMA table_info(reviewers)")}
        if "removed_at" not in columns:  # a version 1 desk
            db.execute("ALTER TABLE reviewers ADD COLUMN removed_at REAL")
            db.execute("ALTER TABLE reviewers ADD COLUMN link_expires_at REAL")
            # links made before links expired: they get the default time from now
            db.execute(
                "UPDATE reviewers SET link_expires_at = ?",
                (time.time() + DEFAULT_LINK_HOURS * 3600,),
            )
        columns = {row[1] for row in db.execute("PRAGMA table_info(labels)")}
        if "informed" not in columns:  # before version 3: whether the verdict was seen is
            # unknown, and every label counts as given blind (as it was counted then)
            db.execute("ALTER TABLE labels ADD COLUMN informed INTEGER NOT NULL DEFAULT 0")
        db.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES ('desk_schema_version', ?)",
            (str(DESK_SCHEMA_VERSION),),
        )


@writes("making the desk's pair seed")
def pair_seed(db: sqlite3.Connection) -> int:
    """The desk's secret seed for the order of blinded pairs: 128 random bits, made the
    first time it is asked for and kept in the store's meta (only the store's owner can
    read it; a reviewer who knows the code and `--seed`'s default cannot)."""
    with transaction(db):
        row = db.execute("SELECT value FROM meta WHERE key = 'desk_pair_seed'").fetchone()
        if row is None:
            row = (str(secrets.randbits(128)),)
            db.execute("INSERT INTO meta(key, value) VALUES ('desk_pair_seed', ?)", row)
    return int(row[0])


class Connections:
    """One store connection per thread (web requests run on a thread pool): a connection
    is never shared, so one thread's transaction cannot swallow another's writes. The
    file's pages are checked by the first connection only: the check reads the whole
    file, and threads come and go with the pool (a page served by a new thread would
    otherwise cost a read of the store)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._local = threading.local()
        self._checked = False

    def get(self) -> Store:
        store: Store | None = getattr(self._local, "store", None)
        if store is None:
            store = self._local.store = Store(self.path, pages_checked=self._checked)
            self._checked = True
            store._db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        return store


@dataclass(frozen=True, slots=True)
class Reviewer:
    id: int
    name: str
    adjudicator: bool


@dataclass(frozen=True, slots=True)
class Item:
    """A queued trial; with `other_run_id`, a blinded pair with that run's trial."""

    id: int
    run_id: str
    position: int
    task_id: str
    trial: int
    other_run_id: str
    other_trial: int
    swap: bool
    reasons: dict[str, str]
    needed: int

    @property
    def is_pair(self) -> bool:
        return bool(self.other_run_id)

    def trials(self) -> list[tuple[str, str, int]]:
        """(run, task, trial) of what a reviewer labels, in the order the page shows them."""
        own = [(self.run_id, self.task_id, self.trial)]
        if not self.is_pair:
            return own
        other = (self.other_run_id, self.task_id, self.other_trial)
        return [other, *own] if self.swap else [*own, other]


@dataclass(frozen=True, slots=True)
class NewItem:
    task_id: str
    trial: int
    reasons: dict[str, str]
    needed: int
    other_run_id: str = ""
    other_trial: int = -1
    swap: bool = False


@dataclass(frozen=True, slots=True)
class Assignment:
    id: int
    item_id: int
    reviewer_id: int


# -- reviewers and sessions ---------------------------------------------------------------


@writes("adding a reviewer")
def add_reviewer(
    db: sqlite3.Connection, name: str, token_hash: str, adjudicator: bool, link_ttl_s: float
) -> bool:
    """Add a reviewer, or give an existing (or removed) one a new token whose link works
    for `link_ttl_s` (their sessions end); True if new."""
    expires = time.time() + link_ttl_s
    row = db.execute("SELECT id FROM reviewers WHERE name = ?", (name,)).fetchone()
    if row is None:
        db.execute(
            "INSERT INTO reviewers(name, token_hash, adjudicator, created_at, link_expires_at)"
            " VALUES (?,?,?,?,?)",
            (name, token_hash, int(adjudicator), time.time(), expires),
        )
        return True
    with transaction(db):
        db.execute(
            "UPDATE reviewers SET token_hash = ?, adjudicator = ?, link_expires_at = ?,"
            " removed_at = NULL WHERE id = ?",
            (token_hash, int(adjudicator), expires, row[0]),
        )
        db.execute("DELETE FROM review_sessions WHERE reviewer_id = ?", (row[0],))
    return False


@writes("removing a reviewer")
def remove_reviewer(db: sqlite3.Connection, name: str) -> bool:
    """Take a reviewer off the desk: their link and sessions stop working and their
    unlabelled assignments go back to the queue; their labels stay (they are data).
    False when there is no such reviewer, or they were removed already."""
    with transaction(db):
        row = db.execute(
            "SELECT id FROM reviewers WHERE name = ? AND removed_at IS NULL", (name,)
        ).fetchone()
        if row is not None:
            # no token hashes to this: SHA-256 hashes are 64 hex digits
            db.execute(
                "UPDATE reviewers SET removed_at = ?, token_hash = 'removed:' || id,"
                " link_expires_at = NULL WHERE id = ?",
                (time.time(), row[0]),
            )
            db.execute("DELETE FROM review_sessions WHERE reviewer_id = ?", (row[0],))
            db.execute(
                "DELETE FROM assignments WHERE reviewer_id = ?"
                " AND NOT EXISTS (SELECT 1 FROM labels l WHERE l.assignment_id = assignments.id)",
                (row[0],),
            )
    return row is not None


@dataclass(frozen=True, slots=True)
class ReviewerRow:
    """A reviewer as `proctor review list-reviewers` shows them."""

    name: str
    adjudicator: bool
    created_at: float
    removed_at: float | None
    link_expires_at: float | None
    labels: int
    sessions: int


@reads
def reviewers(db: sqlite3.Connection) -> list[ReviewerRow]:
    """Every reviewer, removed ones too, by name, with their labels and open sessions."""
    rows = db.execute(
        "SELECT r.name, r.adjudicator, r.created_at, r.removed_at, r.link_expires_at,"
        " (SELECT COUNT(DISTINCT l.assignment_id) FROM labels l WHERE l.reviewer_id = r.id),"
        " (SELECT COUNT(*) FROM review_sessions s WHERE s.reviewer_id = r.id"
        "  AND s.expires_at > ?)"
        " FROM reviewers r ORDER BY r.name",
        (time.time(),),
    ).fetchall()
    return [ReviewerRow(n, bool(a), c, rm, x, labels, s) for n, a, c, rm, x, labels, s in rows]


@reads
def reviewer_by_token(db: sqlite3.Connection, token_hash: str) -> Reviewer | None:
    """The reviewer whose link this is, while it works (not expired, not removed)."""
    row = db.execute(
        "SELECT id, name, adjudicator FROM reviewers WHERE token_hash = ?"
        " AND removed_at IS NULL AND link_expires_at > ?",
        (token_hash, time.time()),
    ).fetchone()
    return Reviewer(row[0], row[1], bool(row[2])) if row else None


@writes("opening a review session")
def open_session(db: sqlite3.Connection, token_hash: str, reviewer_id: int, ttl_s: float) -> None:
    """Open a session (and forget the sessions that have expired)."""
    now = time.time()
    db.execute("DELETE FROM review_sessions WHERE expires_at <= ?", (now,))
    db.execute(
        "INSERT INTO review_sessions(token_hash, reviewer_id, expires_at) VALUES (?,?,?)",
        (token_hash, reviewer_id, now + ttl_s),
    )


@reads
def session_reviewer(db: sqlite3.Connection, token_hash: str) -> Reviewer | None:
    row = db.execute(
        "SELECT r.id, r.name, r.adjudicator FROM review_sessions s"
        " JOIN reviewers r ON r.id = s.reviewer_id WHERE s.token_hash = ? AND s.expires_at > ?"
        " AND r.removed_at IS NULL",
        (token_hash, time.time()),
    ).fetchone()
    return Reviewer(row[0], row[1], bool(row[2])) if row else None


@writes("closing a review session")
def close_session(db: sqlite3.Connection, token_hash: str) -> None:
    db.execute("DELETE FROM review_sessions WHERE token_hash = ?", (token_hash,))


# -- items and assignments ----------------------------------------------------------------

_ITEM = (
    "SELECT id, run_id, position, task_id, trial, other_run_id, other_trial, swap, reasons,"
    " needed FROM review_items"
)


def _item(row: tuple[Any, ...]) -> Item:
    item_id, run_id, position, task_id, trial, other_run, other_trial, swap, reasons, needed = row
    return Item(
        item_id,
        run_id,
        position,
        task_id,
        trial,
        other_run,
        other_trial,
        bool(swap),
        json.loads(reasons),
        needed,
    )


@writes("queueing review items")
def add_items(db: sqlite3.Connection, run_id: str, items: list[NewItem]) -> int:
    """Queue `items` after the run's existing ones; items already queued are kept as they
    are (their labels stay meaningful). Returns how many were added."""
    with transaction(db):
        (last,) = db.execute(
            "SELECT COALESCE(MAX(position), -1) FROM review_items WHERE run_id = ?", (run_id,)
        ).fetchone()
        added = 0
        now = time.time()
        for item in items:
            cursor = db.execute(
                "INSERT OR IGNORE INTO review_items(run_id, position, task_id, trial,"
                " other_run_id, other_trial, swap, reasons, needed, created_at)"
                " VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    run_id,
                    last + 1 + added,
                    item.task_id,
                    item.trial,
                    item.other_run_id,
                    item.other_trial,
                    int(item.swap),
                    json.dumps(item.reasons),
                    item.needed,
                    now,
                ),
            )
            added += cursor.rowcount
    return added


@reads
def item(db: sqlite3.Connection, item_id: int) -> Item | None:
    row = db.execute(f"{_ITEM} WHERE id = ?", (item_id,)).fetchone()
    return _item(row) if row else None


@reads
def items_page(
    db: sqlite3.Connection, run_id: str, reviewer_id: int, after: int, limit: int
) -> list[tuple[Item, int, bool]]:
    """Items after queue position `after`: (item, reviewers who labelled it, labelled by
    `reviewer_id`)."""
    rows = db.execute(
        "SELECT i.id, i.run_id, i.position, i.task_id, i.trial, i.other_run_id, i.other_trial,"
        " i.swap, i.reasons, i.needed, i.labelled,"
        " EXISTS (SELECT 1 FROM assignments a JOIN labels l ON l.assignment_id = a.id"
        "   WHERE a.item_id = i.id AND a.reviewer_id = ?)"
        " FROM review_items i WHERE i.run_id = ? AND i.position > ?"
        " ORDER BY i.position LIMIT ?",
        (reviewer_id, run_id, after, limit),
    ).fetchall()
    return [(_item(r[:10]), r[10], bool(r[11])) for r in rows]


@reads
def queue_counts(db: sqlite3.Connection, run_id: str) -> dict[str, int]:
    """Items, labels wanted, and items with all their labels, for a run's queue (from an
    index: `labelled` counts the reviewers who labelled, kept by `labels.add_labels`)."""
    items, wanted, done = db.execute(
        "SELECT COUNT(*), COALESCE(SUM(needed), 0), COALESCE(SUM(labelled >= needed), 0)"
        " FROM review_items WHERE run_id = ?",
        (run_id,),
    ).fetchone()
    return {"items": items, "labels_wanted": wanted, "items_done": done}


@reads
def run_status(db: sqlite3.Connection, run_id: str) -> str | None:
    """A run's status by its exact id (pages name runs by the ids the desk printed)."""
    row = db.execute("SELECT status FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    return row[0] if row else None


@reads
def run_manifest(db: sqlite3.Connection, run_id: str) -> dict[str, Any]:
    """A run's manifest alone: a page needs it, not the run's summary (megabytes)."""
    (text,) = db.execute("SELECT manifest FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    manifest: dict[str, Any] = json.loads(text)
    return manifest


@reads
def queued_runs(db: sqlite3.Connection) -> list[tuple[str, int]]:
    """Runs with a review queue, newest first, with their item counts."""
    return db.execute(
        "SELECT i.run_id, COUNT(*) FROM review_items i JOIN runs r ON r.run_id = i.run_id"
        " GROUP BY i.run_id ORDER BY MAX(r.created_at) DESC"
    ).fetchall()


@reads
def assignment(db: sqlite3.Connection, assignment_id: int) -> Assignment | None:
    row = db.execute(
        "SELECT id, item_id, reviewer_id FROM assignments WHERE id = ?", (assignment_id,)
    ).fetchone()
    return Assignment(*row) if row else None


def _assignment_of(db: sqlite3.Connection, item_id: int, reviewer_id: int) -> Assignment | None:
    row = db.execute(
        "SELECT id, item_id, reviewer_id FROM assignments WHERE item_id = ? AND reviewer_id = ?",
        (item_id, reviewer_id),
    ).fetchone()
    return Assignment(*row) if row else None


#: A reviewer's assignment to an item, if she has one.
assignment_of = reads(_assignment_of)

_OPEN_SEAT = (
    "NOT EXISTS (SELECT 1 FROM assignments a WHERE a.item_id = i.id AND a.reviewer_id = ?)"
    " AND (SELECT COUNT(*) FROM assignments a WHERE a.item_id = i.id) < i.needed"
)


@reads
def claim_possible(db: sqlite3.Connection, item_id: int, reviewer_id: int) -> bool:
    """Whether the item still wants a reviewer, and one other than `reviewer_id`'s past."""
    row = db.execute(
        f"SELECT 1 FROM review_items i WHERE i.id = ? AND {_OPEN_SEAT}", (item_id, reviewer_id)
    ).fetchone()
    return row is not None


@writes("claiming a review item")
def claim(db: sqlite3.Connection, run_id: str, reviewer_id: int, item_id: int | None) -> int | None:
    """Assign the reviewer an item: `item_id`, or else their oldest unlabelled assignment,
    or else the first item in queue order that still wants a reviewer and that they have
    not had. Returns the assignment id, or None when there is nothing to take.

    Counting and inserting happen in one write transaction, so two reviewers claiming at
    once cannot both take an item's last seat.
    """
    with transaction(db):
        found: int | None
        if item_id is not None:
            mine = _assignment_of(db, item_id, reviewer_id)
            if mine is not None:
                return mine.id
            row = db.execute(
                f"SELECT i.id FROM review_items i WHERE i.id = ? AND i.run_id = ? AND {_OPEN_SEAT}",
                (item_id, run_id, reviewer_id),
            ).fetchone()
            found = row[0] if row else None
        else:
            row = db.execute(
                "SELECT a.id FROM assignments a JOIN review_items i ON i.id = a.item_id"
                " WHERE i.run_id = ? AND a.reviewer_id = ?"
                " AND NOT EXISTS (SELECT 1 FROM labels l WHERE l.assignment_id = a.id)"
                " ORDER BY i.position LIMIT 1",
                (run_id, reviewer_id),
            ).fetchone()
            if row is not None:
                return int(row[0])
            row = db.execute(
                f"SELECT i.id FROM review_items i WHERE i.run_id = ? AND {_OPEN_SEAT}"
                " ORDER BY i.position LIMIT 1",
                (run_id, reviewer_id),
            ).fetchone()
            found = row[0] if row else None
        if found is None:
            return None
        new = db.execute(
            "INSERT INTO assignments(item_id, reviewer_id, assigned_at) VALUES (?,?,?)",
            (found, reviewer_id, time.time()),
        ).lastrowid
        return new


@writes("releasing a review item")
def release(db: sqlite3.Connection, assignment_id: int) -> bool:
    """Give an unlabelled assignment back to the queue; a labelled one stays."""
    cursor = db.execute(
        "DELETE FROM assignments WHERE id = ?"
        " AND NOT EXISTS (SELECT 1 FROM labels l WHERE l.assignment_id = ?)",
        (assignment_id, assignment_id),
    )
    return cursor.rowcount == 1


# -- where a trial stands for one reviewer -----------------------------------------------


@dataclass(frozen=True, slots=True)
class Standing:
    """A trial as one reviewer stands to it (what `proctor.review.access` decides on)."""

    queued: bool  # an item shows it: someone may still label it
    paired: bool  # a blinded pair shows it
    involved: bool  # the reviewer holds an assignment on an item that shows it
    labelled: bool  # the reviewer labelled it, or adjudicated it


_SHOWS = (
    "((i.run_id = :run AND i.task_id = :task AND i.trial = :trial) OR"
    " (i.other_run_id = :run AND i.task_id = :task AND i.other_trial = :trial))"
)


@reads
def standing(
    db: sqlite3.Connection, reviewer_id: int, run_id: str, task_id: str, trial: int
) -> Standing:
    """Where trial `task_id#trial` of `run_id` stands for `reviewer_id` (from indexes)."""
    args = {"run": run_id, "task": task_id, "trial": trial, "me": reviewer_id}
    row = db.execute(
        f"SELECT EXISTS (SELECT 1 FROM review_items i WHERE {_SHOWS}),"
        f" EXISTS (SELECT 1 FROM review_items i WHERE {_SHOWS} AND i.other_run_id != ''),"
        " EXISTS (SELECT 1 FROM review_items i JOIN assignments a ON a.item_id = i.id"
        f"  WHERE a.reviewer_id = :me AND {_SHOWS}),"
        " EXISTS (SELECT 1 FROM labels WHERE run_id = :run AND task_id = :task"
        "  AND trial = :trial AND reviewer_id = :me)"
        " OR EXISTS (SELECT 1 FROM adjudications WHERE run_id = :run AND task_id = :task"
        "  AND trial = :trial AND reviewer_id = :me)",
        args,
    ).fetchone()
    return Standing(*(bool(x) for x in row))


@reads
def involved_trials(db: sqlite3.Connection, reviewer_id: int, run_id: str) -> set[tuple[str, int]]:
    """The trials of `run_id` that items the reviewer holds an assignment on show."""
    held = "FROM review_items i JOIN assignments a ON a.item_id = i.id WHERE a.reviewer_id = :me"
    rows = db.execute(
        f"SELECT i.task_id, i.trial {held} AND i.run_id = :run"
        f" UNION SELECT i.task_id, i.other_trial {held} AND i.other_run_id = :run",
        {"run": run_id, "me": reviewer_id},
    ).fetchall()
    return {(task, trial) for task, trial in rows}


# -- trials, read a page at a time --------------------------------------------------------


@reads
def trials_page(
    db: sqlite3.Connection, run_id: str, after: tuple[str, int], limit: int, status: str | None
) -> list[tuple[str, int, str, float]]:
    """(task, trial, status, score) after the key `after`, in key order."""
    where = " AND status = ?" if status else ""
    args: tuple[Any, ...] = (run_id, *after, *((status,) if status else ()), limit)
    return db.execute(
        "SELECT task_id, trial, status, score FROM trials"
        f" WHERE run_id = ? AND (task_id, trial) > (?, ?){where}"
        " ORDER BY task_id, trial LIMIT ?",
        args,
    ).fetchall()


@reads
def status_counts(db: sqlite3.Connection, run_id: str) -> dict[str, int]:
    return dict(
        db.execute(
            "SELECT status, COUNT(*) FROM trials WHERE run_id = ? GROUP BY status", (run_id,)
        ).fetchall()
    )


@reads
def trial_row(
    db: sqlite3.Connection, run_id: str, task_id: str, trial: int
) -> tuple[str, float, str | None, list[Check]] | None:
    """A trial's status, score, error and checks (in grading order; a regraded trial's
    may be its source's rows: `checks_of`), or None."""
    row = db.execute(
        "SELECT COALESCE(checks_of, id), status, score, error FROM trials"
        " WHERE run_id = ? AND task_id = ? AND trial = ?",
        (run_id, task_id, trial),
    ).fetchone()
    if row is None:
        return None
    checks = [
        Check(name, kind, bool(passed), score, severity, json.loads(evidence))
        for name, kind, passed, score, severity, evidence in db.execute(
            "SELECT name, kind, passed, score, severity, evidence FROM checks"
            " WHERE trial_rowid = ? ORDER BY idx",
            (row[0],),
        )
    ]
    return row[1], row[2], row[3], checks
