"""What is derived from a task once, not once per trial.

A regrade grades each task's trials one after another with the same (frozen) task
object, and many graders first derive something from the task alone: the tools it
names, its claim phrases, its patterns' evidence; each trial of a task starts from the
same state (env/domain.py). `per_object` remembers such a value by
the identity of the objects it was derived from. Identity, not equality: a task copied
with changes (`model_copy(update=...)`) is another object, so it never reads a value
derived from its original; each remembered entry keeps its objects alive, so an id is
not reused while it is remembered.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

R = TypeVar("R")

#: Entries a memo holds before it starts again (a suite's tasks, several times over).
MAX_ENTRIES = 4096


def per_object(fn: Callable[..., R]) -> Callable[..., R]:
    """`fn`, a pure function of immutable objects, remembered by their identities. Its
    value is shared between callers: it must not be changed."""
    memo: dict[int | tuple[int, ...], tuple[tuple[Any, ...], R]] = {}

    @wraps(fn)
    def remembered(*args: Any) -> R:
        key = id(args[0]) if len(args) == 1 else tuple(map(id, args))
        hit = memo.get(key)
        if hit is not None:  # its objects are alive in the entry: these very objects
            return hit[1]
        if len(memo) >= MAX_ENTRIES:
            memo.clear()
        value = fn(*args)
        memo[key] = (args, value)
        return value

    return remembered
