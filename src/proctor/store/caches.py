"""The tables of model answers cached by key: the judge's judgments and a model user's
replies (docs/architecture.md, Judges; and Simulated users).

Each is a row per key holding the answer's text; what a key is, and when a cached answer
may be used, is the cache's business (judge/cache.py, run/usercache.py). Writes hold the
store's lock: agent threads cache a user reply while the runner writes a trial.
"""

from __future__ import annotations

import time

from proctor.store.sqlite import Store

_JUDGMENTS = """
CREATE TABLE IF NOT EXISTS judgments (
    key TEXT PRIMARY KEY,
    judge TEXT NOT NULL,
    rubric_version TEXT NOT NULL,
    created_at REAL NOT NULL,
    value TEXT NOT NULL
);
"""
_USER_REPLIES = """
CREATE TABLE IF NOT EXISTS user_replies (
    key TEXT PRIMARY KEY,
    created_at REAL NOT NULL,
    value TEXT NOT NULL
);
"""


def _value(store: Store, table: str, key: str) -> str | None:
    rows = store.select(f"the {table} cache", f"SELECT value FROM {table} WHERE key = ?", (key,))
    return None if not rows else str(rows[0][0])


class Judgments:
    """The `judgments` table: a judgment's JSON text by key, with its judge and rubric."""

    def __init__(self, store: Store) -> None:
        self.store = store
        store.ensure("creating the judge cache", _JUDGMENTS)

    def get(self, key: str) -> str | None:
        return _value(self.store, "judgments", key)

    def put(self, key: str, judge: str, rubric_version: str, value: str) -> None:
        self.store.write(
            "caching a judgment",
            "INSERT OR REPLACE INTO judgments(key, judge, rubric_version, created_at, value)"
            " VALUES (?, ?, ?, ?, ?)",
            (key, judge, rubric_version, time.time(), value),
        )


class UserReplies:
    """The `user_replies` table: a model user's reply by key."""

    def __init__(self, store: Store) -> None:
        self.store = store
        store.ensure("creating the user reply cache", _USER_REPLIES)

    def get(self, key: str) -> str | None:
        return _value(self.store, "user_replies", key)

    def put(self, key: str, value: str) -> None:
        self.store.write(
            "caching a user reply",
            "INSERT OR REPLACE INTO user_replies(key, created_at, value) VALUES (?, ?, ?)",
            (key, time.time(), value),
        )
