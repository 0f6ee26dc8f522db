"""What every importer of task sets shares: its problems placed in the source file, tasks
built from what it mapped, and the task files written, all of them or none.

An importer (`proctor import adk|tau2|cases`) collects, per entry, `(field path within the
entry, message)` pairs (Found); `located` turns them into `file:line: field: message`
problems. Each task becomes one YAML file named after its id in the output folder,
holding only the fields the importer set. The files are written to a temporary folder
beside the output first and read back with proctor's own task loader; only when every
one loads are they moved into place, so a failure leaves nothing half-imported (the
rubric files an import writes beside them are removed again). A file that exists
already is never overwritten.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from proctor.core.documents import (
    Lines,
    Loc,
    Problem,
    SpecError,
    dump_document,
    format_loc,
    line_of,
)
from proctor.interop.rubric_import import RubricFolder
from proctor.tasks.loader import load_task_file
from proctor.tasks.models import Task


class Found(list[tuple[Loc, str]]):
    """An entry's problems: (the field's path within the entry, the message)."""

    def add(self, loc: Loc, message: str) -> None:
        self.append((loc, message))


def located(path: Path, lines: Lines, prefix: Loc, found: Found) -> list[Problem]:
    """The entry's problems with the file, the line and the field (from the file's root)."""
    return [
        (path, line_of(lines, (*prefix, *loc)), format_loc((*prefix, *loc)), message)
        for loc, message in found
    ]


def build_task(data: dict[str, Any], found: Found, sources: dict[str, Loc]) -> Task | None:
    """The task, or None with what the task model refused added to `found`, at the
    source's field a task field came from (`sources`: task field → source field)."""
    try:
        return Task.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            found.add(sources.get(str(err["loc"][0]), ()), str(err["msg"]))
        return None


def file_name(task_id: str, taken: set[str]) -> str:
    """A file name for the task id, inside the folder it is written to whatever the id
    holds: characters a file system might refuse or read as a path (`/`, `\\`, `:`)
    become `-`, and leading or trailing dots and dashes go (no `..`, no `-name`)."""
    stem = re.sub(r"[^A-Za-z0-9_.-]", "-", task_id).strip(".-") or "task"
    name, n = f"{stem}.yaml", 1
    while name.casefold() in taken:
        n += 1
        name = f"{stem}-{n}.yaml"
    taken.add(name.casefold())
    return name


def task_text(task: Task) -> str:
    return dump_document(task.model_dump(mode="json", exclude_unset=True))


def write_tasks(
    tasks: Sequence[Task], out: Path, rubrics: RubricFolder | None = None
) -> list[Path]:
    """Write each task to `out/<id>.yaml`, and the `rubrics` its tasks use; SpecError
    (nothing written) if any fails."""
    taken: set[str] = set()
    names = [file_name(task.id, taken) for task in tasks]
    clashes = [name for name in names if (out / name).exists()]
    if clashes:
        shown = ", ".join(clashes[:5]) + (" ..." if len(clashes) > 5 else "")
        raise SpecError.one(out, 1, "", f"would overwrite {len(clashes)} file(s): {shown}")
    if out.exists() and not out.is_dir():
        raise SpecError.one(out, 1, "", "not a folder")
    created = rubrics.write() if rubrics is not None else []
    try:
        return _write(tasks, names, out)
    except BaseException:
        for path in created:
            path.unlink(missing_ok=True)
        raise


def _write(tasks: Sequence[Task], names: list[str], out: Path) -> list[Path]:
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-import-", dir=out.parent))
    try:
        for task, name in zip(tasks, names, strict=True):
            (staging / name).write_text(task_text(task), encoding="utf-8")
            load_task_file(staging / name)  # what proctor reads back, or SpecError
        if not out.exists():
            os.replace(staging, out)
            return [out / name for name in names]
        for name in names:
            os.replace(staging / name, out / name)
        return [out / name for name in names]
    finally:
        if staging.exists():
            shutil.rmtree(staging)
