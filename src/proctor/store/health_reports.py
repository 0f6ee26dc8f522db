"""The `suite_health` table and the key that signs its reports (`meta.health_key`):
`proctor health`'s reports kept in the store by suite name and content digest
(docs/architecture.md, Suite health; signing and checking them is health/stored_reports.py's).
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import time
from typing import Any

from proctor.store.sqlite import Store, reads

_SCHEMA = """
CREATE TABLE IF NOT EXISTS suite_health (
    id INTEGER PRIMARY KEY,
    suite TEXT NOT NULL,
    suite_digest TEXT NOT NULL,
    created_at REAL NOT NULL,
    report TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS suite_health_by_digest ON suite_health(suite_digest, id);
"""
_KEY = "health_key"


def health_key(store: Store | None) -> bytes | None:
    """The store's secret for health reports; None when it has none (or no store)."""
    if store is None:
        return None
    rows = store.select("the health key", "SELECT value FROM meta WHERE key = ?", (_KEY,))
    return None if not rows else bytes.fromhex(rows[0][0])


def new_health_key(store: Store) -> bytes:
    """A random secret, kept as the store's health key (it has none yet)."""
    key = secrets.token_bytes(32)
    store.write(
        "keeping the health key", "INSERT INTO meta(key, value) VALUES (?, ?)", (_KEY, key.hex())
    )
    return key


def add_health(store: Store, report: dict[str, Any]) -> int:
    """Keep a (signed) health report under its suite's name and digest; returns its id."""
    store.ensure("creating the health reports table", _SCHEMA)
    rowid = store.write(
        f"keeping the health report of {report['suite']}",
        "INSERT INTO suite_health(suite, suite_digest, created_at, report) VALUES (?, ?, ?, ?)",
        (report["suite"], report["suite_digest"], time.time(), json.dumps(report, default=str)),
    )
    return int(rowid or 0)


@reads
def find_health(db: sqlite3.Connection, suite: str, digest: str) -> dict[str, Any] | None:
    """The newest report of this suite digest, else of this suite name; None when none
    (or the store predates health reports)."""
    try:
        row = db.execute(
            "SELECT report FROM suite_health WHERE suite_digest = ? OR suite = ?"
            " ORDER BY suite_digest = ? DESC, id DESC LIMIT 1",
            (digest, suite, digest),
        ).fetchone()
    except sqlite3.OperationalError:  # no such table: never checked
        return None
    if row is None:
        return None
    found: dict[str, Any] = json.loads(row[0])
    return found
