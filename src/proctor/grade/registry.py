"""Graders are small functions registered by a decorator: a name, a version, and the
expectations they need.

A grader takes the GradeContext and returns checks; `applies(task)` says whether the task
declares what the grader checks, and `grade` runs only the graders that apply (one without
`applies` runs on every trial). The versions go into every run manifest, so a change in
grading is visible when two runs are compared. The built-in graders load when grading
starts (or when another grader registers), not when `proctor.grade` is imported, and come
first, in a fixed order. A name registered twice is an error unless the second
registration says `replace=True`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from proctor.core.memo import MAX_ENTRIES
from proctor.core.results import Check
from proctor.grade.context import GradeContext

if TYPE_CHECKING:
    from proctor.tasks.models import Task

GraderFn = Callable[[GradeContext], list[Check]]
Applies = Callable[["Task"], bool]

#: The modules of the built-in graders, in the order their graders run.
BUILTIN = tuple(
    f"proctor.grade.{name}"
    for name in ("answer", "budget", "final_state", "quality", "robustness", "safety", "trajectory")
)


class GraderError(ValueError):
    """A grader registered under a name that is taken, without `replace=True`."""


class GraderCrashed(Exception):
    """A grader raised while grading a trial (the harness's defect); `grader` names it."""

    def __init__(self, grader: str, exc: Exception) -> None:
        super().__init__(f"{grader}: {type(exc).__name__}: {exc}")
        self.grader = grader


@dataclass(frozen=True, slots=True)
class Grader:
    name: str
    version: str
    fn: GraderFn
    applies: Applies | None = None

    def applies_to(self, task: Task) -> bool:
        return self.applies is None or self.applies(task)


#: The graders in the order they run: built-ins by BUILTIN whatever imported them first,
#: then the others as registered; a replacement keeps its name's place.
_GRADERS: dict[str, Grader] = {}
_PLACE: dict[str, tuple[int, int]] = {}
_builtin_loaded = False


def load_builtin_graders() -> None:
    """Import the built-in grader modules (once), which registers their graders."""
    global _builtin_loaded
    if not _builtin_loaded:
        for module in BUILTIN:
            importlib.import_module(module)
        _builtin_loaded = True


def grader(
    name: str, version: str = "1", *, applies: Applies | None = None, replace: bool = False
) -> Callable[[GraderFn], GraderFn]:
    """Register `fn` as the grader called `name`, run on the tasks `applies` accepts."""

    def register(fn: GraderFn) -> GraderFn:
        if fn.__module__ not in BUILTIN:
            load_builtin_graders()  # a name clash with a built-in shows here, not later
        if name in _GRADERS and not replace:
            raise GraderError(
                f"a grader named {name!r} is registered already; pass replace=True to replace it"
            )
        rank = BUILTIN.index(fn.__module__) if fn.__module__ in BUILTIN else len(BUILTIN)
        _PLACE.setdefault(name, (rank, len(_PLACE)))
        _GRADERS[name] = Grader(name, version, fn, applies)
        ordered = sorted(_GRADERS.values(), key=lambda g: _PLACE[g.name])
        _GRADERS.clear()
        _GRADERS.update((g.name, g) for g in ordered)
        return fn

    return register


def graders() -> list[Grader]:
    load_builtin_graders()
    return list(_GRADERS.values())


def grader_versions() -> dict[str, str]:
    return {g.name: g.version for g in graders()}


#: Per task (by identity, as core.memo): the graders it was matched against and those
#: that apply. The trials of a task ask again and again; a grader registered or replaced
#: since changes the graders, so the task is matched again.
_APPLICABLE: dict[int, tuple[Task, tuple[Grader, ...], list[Grader]]] = {}


def applicable(task: Task) -> list[Grader]:
    """The graders that apply to `task`, in the order they run (shared: not to be changed)."""
    if not _builtin_loaded:
        load_builtin_graders()
    current = tuple(_GRADERS.values())
    hit = _APPLICABLE.get(id(task))
    if hit is not None and hit[0] is task and hit[1] == current:  # `==` is `is` on each
        return hit[2]
    if len(_APPLICABLE) >= MAX_ENTRIES:
        _APPLICABLE.clear()
    found = [g for g in current if g.applies is None or g.applies(task)]  # `applies_to`
    _APPLICABLE[id(task)] = (task, current, found)
    return found


def grade(ctx: GradeContext) -> list[Check]:
    """Run the graders that apply to the trial's task on it, in registration order.

    Raises GraderCrashed, naming the grader, when one raises."""
    checks: list[Check] = []
    for g in applicable(ctx.task):
        try:
            checks.extend(g.fn(ctx))
        except Exception as exc:
            raise GraderCrashed(g.name, exc) from exc
    return checks
