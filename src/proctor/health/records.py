"""Health reports kept in the store, for `proctor gate --require-health` and the HTML report.

`proctor health` stores its report under the suite's name and content digest; a gate or a
report finds the newest one for a run's suite: the same digest first, else the same
suite name (its tasks whose digest changed since are then not covered by it).
"""

from __future__ import annotations

import json
import sqlite3
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from proctor.store.sqlite import Store

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


def save_health(store: Store, report: dict[str, Any]) -> int:
    """Store a health report (`HealthReport.to_dict()`); returns its id."""
    store.db.executescript(_SCHEMA)
    cursor = store.db.execute(
        "INSERT INTO suite_health(suite, suite_digest, created_at, report) VALUES (?, ?, ?, ?)",
        (report["suite"], report["suite_digest"], time.time(), json.dumps(report, default=str)),
    )
    return int(cursor.lastrowid or 0)


def find_health(store: Store, suite: str, digest: str) -> dict[str, Any] | None:
    """The newest report of this suite digest, else of this suite name; None when none
    (or the store predates health reports)."""
    try:
        row = store.db.execute(
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
