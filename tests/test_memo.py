"""Values derived from a task once: remembered by identity, never across a changed copy."""

from __future__ import annotations

import pytest

from proctor import Task
from proctor.core import memo
from proctor.core.memo import per_object
from proctor.grade.tool_use import expected_tools


def task(tool: str) -> Task:
    return Task.model_validate(
        {
            "id": "t",
            "domain": "d",
            "prompt": "p",
            "expect": {"trajectory": {"required": [{"tool": tool}]}},
        }
    )


def test_a_changed_copy_of_a_task_is_derived_again() -> None:
    original = task("orders.get")
    assert expected_tools(original) == {"orders.get"}
    trajectory = original.expect.trajectory
    assert trajectory is not None
    changed = original.model_copy(
        update={
            "expect": original.expect.model_copy(
                update={"trajectory": trajectory.model_copy(update={"allowed": ["orders.cancel"]})}
            )
        }
    )
    assert expected_tools(changed) == {"orders.get", "orders.cancel"}
    assert expected_tools(original) == {"orders.get"}


def test_equal_objects_are_not_one_entry_and_the_memo_is_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(memo, "MAX_ENTRIES", 3)
    calls: list[int] = []

    @per_object
    def size(items: list[int]) -> int:
        calls.append(len(items))
        return len(items)

    first, equal = [1, 2], [1, 2]
    assert size(first) == size(first) == 2 and calls == [2]
    assert size(equal) == 2 and calls == [2, 2]  # equal, but another object
    kept = [[i] for i in range(5)]
    for items in kept:
        size(items)
    size(first)
    assert calls[-1] == 2 and len(calls) == 8  # forgotten when the memo started again
