"""The model user's replies cached on the conversation so far (`--user-cache`).

The key is the user model's fingerprint, the prompt version, the trial's user seed and
every message the model was shown, so a re-run whose agent says the same things replays
the same user byte for byte and makes no model call; an agent that says something else
misses, and the model answers anew. `require` (for CI) makes a miss an error: the run
must replay what was recorded. Replies live in the store's SQLite file, next to the
judgments (docs/architecture.md, Simulated users).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from proctor.agents.agent import InfrastructureError
from proctor.store.caches import UserReplies

if TYPE_CHECKING:
    from proctor.store.sqlite import Store

CacheMode = Literal["use", "require", "off"]
CACHE_MODES: tuple[CacheMode, ...] = ("use", "require", "off")


class UserCacheMiss(InfrastructureError):
    """`--user-cache require` and no stored reply: the trial is the harness's `error`."""


class UserCache:
    """Replies by key, in the store (or in memory without one); counts hits and misses.
    Trials ask from several threads at once: one lock around the table."""

    def __init__(self, store: Store | None, mode: CacheMode = "use") -> None:
        self.table = None if store is None else UserReplies(store)
        self.mode = mode
        self.memory: dict[str, str] = {}
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()

    def _get(self, key: str) -> str | None:
        if key in self.memory or self.table is None:
            return self.memory.get(key)
        return self.table.get(key)

    def fetch(self, key: str, compute: Callable[[], str]) -> tuple[str, bool]:
        with self._lock:
            found = self._get(key)
            if found is not None:
                self.hits += 1
                return found, True
            self.misses += 1
        if self.mode == "require":
            raise UserCacheMiss(
                "--user-cache require: no recorded user reply for this conversation "
                "(the agent said something the recorded run's agent did not)"
            )
        value = compute()
        with self._lock:
            self.memory[key] = value
            if self.table is not None:
                self.table.put(key, value)
        return value, False
