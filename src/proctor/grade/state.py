"""Traces without a final state: imported sessions that did not record it.

Such a trace carries a `note` event saying so; its trial is graded (on import, and again
by `regrade`) without the task's final-state path assertions, which it cannot support.
"""

from __future__ import annotations

from proctor.core.memo import per_object
from proctor.core.trace import Trace
from proctor.tasks.models import PathAssertion, Task

#: A `note` field saying the source had no final state (exports then leave it out too).
STATE_NOTE = "final_state"


def state_recorded(trace: Trace) -> bool:
    return not any(e.kind == "note" and STATE_NOTE in e.data for e in trace.events)


def without_state_checks(task: Task) -> tuple[Task, list[str]]:
    """The task less its final-state path assertions, and their names (as checks). One
    copy per task, whatever the number of its sessions: what graders derive from a task
    once (core.memo) is then derived once for the copy too, not once per trial."""
    copy, dropped = _without_state_checks(task)
    return copy, list(dropped)


@per_object
def _without_state_checks(task: Task) -> tuple[Task, tuple[str, ...]]:
    kept = [a for a in task.expect.outcome if not isinstance(a, PathAssertion)]
    dropped = tuple(f"state:{a.path}" for a in task.expect.outcome if isinstance(a, PathAssertion))
    if not dropped:
        return task, ()
    expect = task.expect.model_copy(update={"outcome": kept})
    return task.model_copy(update={"expect": expect}), dropped
