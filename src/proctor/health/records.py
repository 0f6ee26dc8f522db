"""Health reports kept in the store, for `proctor gate --require-health` and the HTML report.

`proctor health` stores its report under the suite's name and content digest; a gate or a
report finds the newest one for a run's suite: the same digest first, else the same
suite name (its tasks whose digest changed since are then not covered by it).

A report is evidence only if `proctor health` wrote it: each is signed with an HMAC-SHA256
over its canonical JSON, keyed by a random secret kept in the store (`meta.health_key`,
made on the first report). A gate given a report (`--health FILE`, or the store's own)
checks the signature with its store's key and the report's internal consistency
(health.verdicts.inconsistencies) before reading a verdict: a hand-written, edited or
foreign report is refused with the reason.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import sqlite3
import time
from typing import TYPE_CHECKING, Any

from proctor.core.jsonvalues import canonical
from proctor.health.verdicts import inconsistencies

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


#: The report's field holding its signature (left out of what is signed).
SIGNATURE = "signature"
_KEY = "health_key"


def health_key(store: Store | None) -> bytes | None:
    """The store's secret for health reports; None when it has none (or no store)."""
    if store is None:
        return None
    row = store.db.execute("SELECT value FROM meta WHERE key = ?", (_KEY,)).fetchone()
    return None if row is None else bytes.fromhex(row[0])


def _mac(key: bytes, report: dict[str, Any]) -> str:
    body = json.loads(json.dumps(report, default=str))  # as it reads back from a file
    body.pop(SIGNATURE, None)
    return hmac.new(key, canonical(body).encode(), hashlib.sha256).hexdigest()


def sign_health(store: Store, report: dict[str, Any]) -> dict[str, Any]:
    """The report with its signature by this store's key (made if the store has none)."""
    key = health_key(store)
    if key is None:
        key = secrets.token_bytes(32)
        store.db.execute("INSERT INTO meta(key, value) VALUES (?, ?)", (_KEY, key.hex()))
    return {**report, SIGNATURE: {"alg": "hmac-sha256", "mac": _mac(key, report)}}


def health_problems(report: dict[str, Any], key: bytes | None) -> list[str]:
    """Why `report` is not evidence a gate may read: unsigned, signed by another key or
    edited since, or contradicting itself. Empty for a report this store's `proctor
    health` wrote."""
    signature = report.get(SIGNATURE)
    mac = signature.get("mac") if isinstance(signature, dict) else None
    if not isinstance(mac, str):
        return ["the health report is not signed: only what `proctor health` wrote counts"]
    if key is None:
        return ["the store holds no health key: run `proctor health` with this --store"]
    if not hmac.compare_digest(mac, _mac(key, report)):
        return [
            "the health report's signature does not match: edited since `proctor health` "
            "wrote it, or written with another store"
        ]
    return [f"the health report contradicts itself: {why}" for why in inconsistencies(report)]


def save_health(store: Store, report: dict[str, Any]) -> int:
    """Store a health report (`HealthReport.to_dict()`), signed by this store's key;
    returns its id."""
    report = sign_health(store, report)
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
