"""The `calibrations` table: a judge's figures against people's labels, per rubric version
and judge fingerprint, as `proctor calibrate` measured them (docs/architecture.md, Judges;
what a record allows a judge to do is judge/calibration_records.py's business).
"""

from __future__ import annotations

import json
import time
from typing import Any

from proctor.store.sqlite import Store

_SCHEMA = """
CREATE TABLE IF NOT EXISTS calibrations (
    id INTEGER PRIMARY KEY,
    rubric_id TEXT NOT NULL,
    rubric_version TEXT NOT NULL,
    judge TEXT NOT NULL,
    judge_fingerprint TEXT NOT NULL,
    created_at REAL NOT NULL,
    figures TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS calibrations_by_rubric ON calibrations(rubric_id, id);
"""


def _ready(store: Store) -> Store:
    store.ensure("creating the calibrations table", _SCHEMA)
    return store


def save_record(
    store: Store,
    rubric_id: str,
    rubric_version: str,
    judge: str,
    fingerprint: str,
    figures: dict[str, Any],
) -> dict[str, Any]:
    """Store a calibration; returns the record as `records` reads it."""
    now = time.time()
    rowid = _ready(store).write(
        f"recording a calibration of {rubric_id}",
        "INSERT INTO calibrations(rubric_id, rubric_version, judge, judge_fingerprint,"
        " created_at, figures) VALUES (?, ?, ?, ?, ?, ?)",
        (rubric_id, rubric_version, judge, fingerprint, now, json.dumps(figures)),
    )
    return _record((rowid, rubric_id, rubric_version, judge, fingerprint, now, json.dumps(figures)))


def _record(row: tuple[Any, ...]) -> dict[str, Any]:
    rowid, rubric_id, version, judge, fingerprint, created, figures = row
    return {
        "id": rowid,
        "rubric_id": rubric_id,
        "rubric_version": version,
        "judge": judge,
        "judge_fingerprint": fingerprint,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(created)),
        "figures": json.loads(figures),
    }


def records(store: Store, rubric_id: str) -> list[dict[str, Any]]:
    """Every calibration of a rubric (any version, any judge), newest first."""
    rows = _ready(store).select(
        f"the calibrations of {rubric_id}",
        "SELECT id, rubric_id, rubric_version, judge, judge_fingerprint, created_at, figures"
        " FROM calibrations WHERE rubric_id = ? ORDER BY id DESC",
        (rubric_id,),
    )
    return [_record(row) for row in rows]
