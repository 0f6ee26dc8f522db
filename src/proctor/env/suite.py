"""A suite: task files gathered from folders or file lists, bound to their domains.

Validation goes beyond each file: duplicate ids, a domain that cannot be found, and tool
names the domain does not have are all reported with file and line. Binding a task to
the domain it names needs the environment, so suites live here, above the task files.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from proctor.core.documents import Problem, SpecError
from proctor.env.domain import Domain
from proctor.env.loading import DomainNotFound, resolve_domain
from proctor.tasks.loader import TASK_SUFFIXES, LoadedTask, load_task_file
from proctor.tasks.models import Task


@dataclass(frozen=True)
class SuiteTask:
    loaded: LoadedTask
    domain: Domain

    @property
    def task(self) -> Task:
        return self.loaded.task

    @property
    def id(self) -> str:
        return self.loaded.task.id


@dataclass
class Suite:
    name: str
    roots: list[Path]
    tasks: list[SuiteTask] = field(default_factory=list)

    @property
    def digest(self) -> str:
        """Content hash of the suite: changes when any task's content changes."""
        joined = "\n".join(sorted(f"{t.id}:{t.task.digest}" for t in self.tasks))
        return hashlib.sha256(joined.encode()).hexdigest()[:16]

    def select(
        self,
        *,
        tags: Sequence[str] = (),
        suite: str | None = None,
        split: str | None = None,
        ids: Sequence[str] = (),
    ) -> Suite:
        """The tasks having any of `tags`, in `suite`, in `split`, and among `ids`."""
        kept = [
            t
            for t in self.tasks
            if (not tags or set(tags) & set(t.task.tags))
            and (suite is None or suite in t.task.suites)
            and (split is None or t.task.split == split)
            and (not ids or t.id in ids)
        ]
        return Suite(self.name, self.roots, kept)

    @classmethod
    def from_tasks(cls, name: str, tasks: Sequence[Task], domains: Sequence[Domain]) -> Suite:
        """A suite built in Python (tests, benchmarks, generated tasks), not from files."""
        by_name = {d.name: d for d in domains}
        members = []
        for task in tasks:
            if task.domain not in by_name:
                raise ValueError(f"task {task.id!r}: no domain {task.domain!r} given")
            members.append(
                SuiteTask(LoadedTask(task, Path(f"<{name}>"), (), {}), by_name[task.domain])
            )
        return cls(name, [], members)

    @property
    def domains(self) -> dict[str, Domain]:
        return {t.domain.name: t.domain for t in self.tasks}


def task_files(paths: Iterable[str | Path]) -> list[tuple[Path, Path | None]]:
    """(file, root) pairs: a folder contributes its `tasks/` subfolder if it has one.

    The root bounds the upward search for the domain; a file named on its own has none.
    """
    out: list[tuple[Path, Path | None]] = []
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            out.append((path, None))
        elif path.is_dir():
            base = path / "tasks" if (path / "tasks").is_dir() else path
            files = sorted(p for p in base.rglob("*") if p.suffix in TASK_SUFFIXES and p.is_file())
            out.extend((f, path) for f in files)
        else:
            raise SpecError.one(path, 1, "", "no such file or folder")
    return out


def load_suite(paths: str | Path | Sequence[str | Path], name: str | None = None) -> Suite:
    """Load, validate and resolve every task under `paths`; all problems raised together."""
    path_list = [paths] if isinstance(paths, str | Path) else list(paths)
    files = task_files(path_list)
    problems: list[Problem] = []
    seen: dict[str, LoadedTask] = {}
    tasks: list[SuiteTask] = []
    for file, root in files:
        try:
            loaded_tasks = load_task_file(file)
        except SpecError as exc:
            problems.extend(exc.problems)
            continue
        for loaded in loaded_tasks:
            task = loaded.task
            if task.id in seen:
                first = seen[task.id]
                problems.append(
                    (
                        file,
                        loaded.line_at(("id",)),
                        loaded.field_name(("id",)),
                        f"duplicate task id {task.id!r} (first in {first.path}:{first.line})",
                    )
                )
                continue
            seen[task.id] = loaded
            try:
                domain = resolve_domain(task.domain, file, root)
            except DomainNotFound as exc:
                problems.append(
                    (file, loaded.line_at(("domain",)), loaded.field_name(("domain",)), str(exc))
                )
                continue
            for loc, tool in task.referenced_tools():
                if tool not in domain.tools:
                    problems.append(
                        (
                            file,
                            loaded.line_at(loc),
                            loaded.field_name(loc),
                            f"unknown tool {tool!r} in domain {domain.name!r}",
                        )
                    )
            tasks.append(SuiteTask(loaded, domain))
    if problems:
        raise SpecError(problems)
    if not files:
        raise SpecError.one(
            Path(path_list[0]) if path_list else Path("."), 1, "", "no task files found"
        )
    label = name or ",".join(map(suite_label, path_list))
    return Suite(label, [Path(p) for p in path_list], tasks)


def suite_label(path: str | Path) -> str:
    """A path's name for a suite: its last part once made absolute (so `.` and `..` name
    the folders they mean), or the path as written for a root such as `/`."""
    return Path(os.path.abspath(path)).name or str(path)
