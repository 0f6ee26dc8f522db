"""The judge cache: every judgment stored under the hash of what decided it.

The key is the rubric version, the judge's fingerprint and the exact view (or pair of
views) it read, so `regrade`, `replay` of the same behaviour, a second report or a second
calibration make no new judge call, and a changed rubric, judge or input misses, as it
must. Judgments live in the store's `judgments` table (one SQLite file for a project's
runs and their judgments); identical requests in flight at once wait for one call
(docs/architecture.md, Judges).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from proctor.core.jsonvalues import digest
from proctor.store.caches import Judgments

if TYPE_CHECKING:
    from proctor.store.sqlite import Store


def judgment_key(kind: str, rubric_version: str, judge: str, inputs: Any) -> str:
    return digest({"kind": kind, "rubric": rubric_version, "judge": judge, "inputs": inputs}, 32)


class JudgeCache:
    """Judgments by key, in memory and (with a store) on disk; counts hits and misses."""

    def __init__(self, store: Store | None = None) -> None:
        self.table = None if store is None else Judgments(store)
        self.memory: dict[str, dict[str, Any]] = {}
        self.pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> dict[str, Any] | None:
        if key in self.memory:
            return self.memory[key]
        found = None if self.table is None else self.table.get(key)
        if found is None:
            return None
        value: dict[str, Any] = json.loads(found)
        self.memory[key] = value
        return value

    def put(self, key: str, judge: str, rubric_version: str, value: dict[str, Any]) -> None:
        self.memory[key] = value
        if self.table is not None:
            self.table.put(key, judge, rubric_version, json.dumps(value, ensure_ascii=False))

    async def fetch(
        self,
        key: str,
        judge: str,
        rubric_version: str,
        compute: Callable[[], Awaitable[dict[str, Any]]],
    ) -> tuple[dict[str, Any], bool]:
        """(value, was cached): the stored value, or `compute()`'s, stored. A JudgeError
        from `compute` is not stored: the next request tries again."""
        found = self.get(key)
        if found is not None:
            self.hits += 1
            return found, True
        waiting = self.pending.get(key)
        if waiting is not None:
            self.hits += 1
            return await asyncio.shield(waiting), True
        self.misses += 1
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[key] = future
        try:
            value = await compute()
        except BaseException as exc:
            if isinstance(exc, Exception):
                future.set_exception(exc)
                future.exception()  # marked retrieved: only waiters re-raise it
            else:
                future.cancel()
            raise
        finally:
            self.pending.pop(key, None)
        future.set_result(value)
        self.put(key, judge, rubric_version, value)
        return value, False

    @property
    def hit_rate(self) -> float | None:
        total = self.hits + self.misses
        return self.hits / total if total else None
