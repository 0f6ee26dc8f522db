"""Task files: one task or a list per YAML/JSON file, and run-wide fault files.

Every problem names file, line and field (core/documents.py maps pydantic's errors back
to lines); a LoadedTask keeps its lines so later checks (unknown tools, duplicate ids)
can still point at one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from proctor.core.documents import (
    Lines,
    Loc,
    Problem,
    SpecError,
    format_loc,
    issues_from_validation,
    line_of,
    read_document,
    read_list_document,
)
from proctor.tasks.models import UNION_TAGS, Fault, Task

TASK_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class LoadedTask:
    """A task with where it came from, so later checks can still point at a line."""

    task: Task
    path: Path
    prefix: Loc
    lines: Lines = field(repr=False, compare=False)

    @property
    def line(self) -> int:
        return line_of(self.lines, self.prefix)

    def line_at(self, loc: Loc) -> int:
        return line_of(self.lines, (*self.prefix, *loc))

    def field_name(self, loc: Loc) -> str:
        return format_loc((*self.prefix, *loc))


def load_task_file(path: str | Path, defaults: Mapping[str, Any] | None = None) -> list[LoadedTask]:
    """Load one file holding a task or a list of tasks; `defaults` (a suite's settings,
    tasks/settings.py) fill the fields a task does not set."""
    path = Path(path)
    data, lines = read_document(path)
    items: list[tuple[Any, Loc]]
    if isinstance(data, list):
        items = [(item, (i,)) for i, item in enumerate(data)]
    elif isinstance(data, dict):
        items = [(data, ())]
    else:
        raise SpecError.one(path, 1, "", "a task file holds a mapping or a list of mappings")
    tasks: list[LoadedTask] = []
    problems: list[Problem] = []
    for item, prefix in items:
        if not isinstance(item, dict):
            problems.append(
                (path, line_of(lines, prefix), format_loc(prefix), "a task is a mapping")
            )
            continue
        try:
            given = {**(defaults or {}), **item}
            tasks.append(LoadedTask(Task.model_validate(given), path, prefix, lines))
        except ValidationError as exc:
            problems.extend(issues_from_validation(path, exc, item, lines, prefix, UNION_TAGS))
    if problems:
        raise SpecError(problems)
    return tasks


_FAULT_LIST = TypeAdapter(list[Fault])


def load_faults(path: str | Path) -> list[Fault]:
    """A run-wide fault file (`--faults`): a list of faults, or `{faults: [...]}`."""
    path = Path(path)
    data, lines, prefix = read_list_document(path, "faults")
    try:
        return _FAULT_LIST.validate_python(data)
    except ValidationError as exc:
        problems = issues_from_validation(path, exc, data, lines, prefix, UNION_TAGS)
        raise SpecError(problems) from None
