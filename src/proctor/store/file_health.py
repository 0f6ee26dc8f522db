"""A store's health: checked when it is opened, and every SQLite failure said in one line.

A store is a file other tools, full disks and crashes can damage. Opening one checks, in
this order and without trusting the file: its SQLite header (a truncated or foreign
file), its schema (a proctor store, of a version this proctor knows), and, before
anything is written into it, SQLite's `quick_check` of every page. A store that fails is
never written to; read commands still serve what can be read, and say which run cannot.
SQLite's own errors become StoreError subclasses whose text is one line for the user.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable
from pathlib import Path

_HEADER = b"SQLite format 3\x00"
# sqlite3 result codes (the primary code is the low byte of an extended one).
_BUSY, _LOCKED, _READONLY, _IOERR, _CORRUPT, _FULL, _CANTOPEN, _NOTADB = 5, 6, 8, 10, 11, 13, 14, 26


class StoreError(Exception):
    """A store cannot be used as asked; `str()` is one line for the user."""


class StoreDamaged(StoreError):
    """The file is not an intact proctor store (or one of its runs cannot be read)."""


class StoreBusy(StoreError):
    """Another process held the store's write lock for longer than this one waits."""


class StoreFull(StoreError):
    """The disk (or the store's size limit) is full."""


#: Store files this process has open, by (device, inode): how many connections.
_OPEN: Counter[tuple[int, int]] = Counter()


def _file_key(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


def check_unopened(path: Path) -> None:
    """`check_file`, unless this process has the file open as a store already.

    Closing any descriptor of a file drops every POSIX lock the process holds on it,
    SQLite's included: a header read beside a live connection would let another process,
    closing its own connection, delete the WAL under this one's writes (and lose them).
    A file this process has open was checked when it was first opened.
    """
    if _OPEN[_file_key(path) or (-1, -1)] == 0:
        check_file(path)


def opened(path: Path) -> Callable[[], None]:
    """Count the store at `path` as open in this process until the returned function
    (idempotent) is called."""
    key = _file_key(path)
    if key is None:
        return lambda: None
    _OPEN[key] += 1
    done = False

    def close() -> None:
        nonlocal done
        if not done:
            done = True
            _OPEN[key] -= 1
            if _OPEN[key] <= 0:
                del _OPEN[key]

    return close


def check_file(path: Path) -> None:
    """Refuse a file that is not a whole SQLite database, before SQLite reads it (see
    `check_unopened`: never beside a live connection of this process)."""
    try:
        size = path.stat().st_size
        with path.open("rb") as file:
            head = file.read(100)
    except OSError as exc:
        raise StoreError(f"{path}: cannot read the store: {exc.strerror or exc}") from None
    if size == 0:
        return  # a new, empty store
    if len(head) < 100 or head[:16] != _HEADER:
        raise StoreDamaged(f"{path}: not a SQLite database (no SQLite header): not a proctor store")
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    pages = int.from_bytes(head[28:32], "big")
    counted = head[92:96] == head[24:28]  # the header's page count is current
    wal = path.with_name(path.name + "-wal")
    pending = wal.exists() and wal.stat().st_size > 0  # a crash mid-checkpoint: SQLite recovers
    if counted and not pending and size < pages * page:
        raise StoreDamaged(
            f"{path}: truncated: {size:,} bytes of the {pages * page:,} its header records"
        )


def schema_version(db: sqlite3.Connection, path: Path, known: int) -> int:
    """The store's schema version (0 for a new, empty file); refuses what is not ours."""
    try:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master")}
        if not tables:
            return 0
        if not {"meta", "runs", "trials"} <= tables:
            listed = ", ".join(sorted(tables)[:5])
            raise StoreDamaged(f"{path}: not a proctor store (its tables: {listed})")
        row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.DatabaseError as exc:
        raise damage(exc, path, "reading its schema") from None
    text = row[0] if row else None
    if not isinstance(text, str) or not text.isdigit():
        raise StoreDamaged(f"{path}: damaged: its schema version is {text!r}, not a number")
    version = int(text)
    if version > known:
        raise StoreError(
            f"{path}: written by a newer proctor (store schema {version}; this proctor "
            f"reads up to {known}): upgrade proctor to use it"
        )
    return version


def check_pages(db: sqlite3.Connection, path: Path) -> None:
    """SQLite's `quick_check` of every page (about a second per GB): before any write."""
    try:
        rows = db.execute("PRAGMA quick_check(3)").fetchall()
    except sqlite3.DatabaseError as exc:
        if is_busy(exc):
            raise damage(exc, path, "checking its pages") from None
        rows = [(str(exc),)]
    if rows != [("ok",)]:
        first = "; ".join(str(row[0]) for row in rows)[:200]
        raise StoreDamaged(
            f"{path} failed its integrity check ({first}): proctor writes nothing into it; "
            "read commands still serve the runs that can be read"
        )


def damage(exc: sqlite3.Error, path: Path, doing: str) -> StoreError:
    """SQLite's error as a StoreError saying what was being done, in one line."""
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if code == _FULL:
        return StoreFull(f"{path}: the disk is full ({detail}) while {doing}")
    if code in (_BUSY, _LOCKED):
        return StoreBusy(f"{path}: another process holds the store's write lock ({doing})")
    if code == _READONLY:
        return StoreError(f"{path}: the store is read-only ({doing})")
    if code in (_CORRUPT, _NOTADB):
        return StoreDamaged(f"{path}: damaged ({detail}) while {doing}")
    if code in (_IOERR, _CANTOPEN):
        return StoreError(f"{path}: cannot use the store ({detail}) while {doing}")
    return StoreError(f"{path}: {detail} while {doing}")


def is_busy(exc: sqlite3.Error) -> bool:
    return getattr(exc, "sqlite_errorcode", 0) & 0xFF in (_BUSY, _LOCKED)
