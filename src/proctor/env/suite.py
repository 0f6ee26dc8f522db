"""A suite: task files gathered from folders or file lists, bound to their domains.

A suite's root folder may hold `suite.yaml`, the settings its tasks share (tasks/
settings.py: the default `language`); it is read once per root, and is no task file.

Validation goes beyond each file: duplicate ids, a domain that cannot be found, and tool
names the domain does not have are all reported with file and line. Binding a task to
the domain it names needs the environment, so suites live here, above the task files.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from proctor.core.documents import Loc, Problem, SpecError
from proctor.env.checking import task_problems
from proctor.env.domain import Domain
from proctor.env.domain_finder import DomainNotFound, resolve_domain
from proctor.env.sources import SourceError, source_spec, source_tasks
from proctor.tasks.loader import TASK_SUFFIXES, LoadedTask, load_task_file
from proctor.tasks.models import Task
from proctor.tasks.rubrics import Rubric, load_rubric
from proctor.tasks.settings import SETTINGS_FILE, SuiteSettings, load_settings


@dataclass(frozen=True)
class SuiteTask:
    loaded: LoadedTask
    domain: Domain
    #: The rubrics of the task's `expect.judge`, in order.
    rubrics: tuple[Rubric, ...] = ()
    #: The suite root its domain was looked up to (`task_files`); None for a task of a
    #: suite source or one built in Python.
    root: Path | None = None

    @property
    def task(self) -> Task:
        return self.loaded.task

    @property
    def id(self) -> str:
        return self.loaded.task.id


def suite_digest(task_digests: Mapping[str, str]) -> str:
    """A suite's digest from its tasks' (id → digest): what a run's manifest and a health
    report record, so either can be checked against its task digests."""
    joined = "\n".join(sorted(f"{t}:{d}" for t, d in task_digests.items()))
    return hashlib.sha256(joined.encode()).hexdigest()[:16]


@dataclass
class Suite:
    name: str
    roots: list[Path]
    tasks: list[SuiteTask] = field(default_factory=list)
    files: int = 0  # task files found (and loaded: a suite loads whole or not at all)

    @property
    def digest(self) -> str:
        """Content hash of the suite: changes when any task's content changes."""
        return suite_digest({t.id: t.task.digest for t in self.tasks})

    def unknown(self, ids: Sequence[str]) -> list[str]:
        """The ids among `ids` no task of this suite has (a misspelt `--task`), sorted."""
        return sorted(set(ids) - {t.id for t in self.tasks})

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


def suite_root(path: Path) -> Path:
    """How far up a file's domain is looked for: a folder named on the command line is
    its own root; a file, its folder (the folder above, for a file in `tasks/`, as a
    folder contributes its `tasks/`). Never above what the command line names."""
    if path.is_dir():
        return path
    return path.parent.parent if path.parent.name == "tasks" else path.parent


def task_files(paths: Iterable[str | Path]) -> tuple[list[tuple[Path, Path]], list[Problem]]:
    """(file, root) pairs, and the problems of what could not be gathered: a folder
    contributes its `tasks/` subfolder if it has one. Symbolic links are followed (a
    suite is code its owner laid out); one leading back into a folder it sits in, a broken
    one and a non-regular file are problems, never silently left out."""
    out: list[tuple[Path, Path]] = []
    problems: list[Problem] = []
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            out.append((path, suite_root(path)))
        elif path.is_dir():
            base = path / "tasks" if (path / "tasks").is_dir() else path
            found, trouble = _walk(base)
            out.extend((f, path) for f in found if f != path / SETTINGS_FILE)
            problems.extend(trouble)
        else:
            raise SpecError.one(path, 1, "", "no such file or folder")
    return out, problems


def _walk(base: Path) -> tuple[list[Path], list[Problem]]:
    """Task files below `base`, links followed, in path order."""
    files: list[Path] = []
    problems: list[Problem] = []
    stack = [(base, frozenset({os.path.realpath(base)}))]
    while stack:
        folder, inside = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            problems.append((folder, 1, "", f"cannot list folder: {exc.strerror or exc}"))
            continue
        for entry in entries:
            path = Path(entry.path)
            if entry.is_symlink() and not os.path.exists(path):
                if path.suffix in TASK_SUFFIXES or not path.suffix:
                    problems.append((path, 1, "", f"broken symbolic link to {os.readlink(path)}"))
                continue
            if entry.is_dir():
                real = os.path.realpath(path)
                if real in inside:
                    problems.append(
                        (path, 1, "", f"symbolic link loop: {real} is a folder it sits in")
                    )
                else:
                    stack.append((path, inside | {real}))
            elif path.suffix in TASK_SUFFIXES:
                if entry.is_file():
                    files.append(path)
                else:
                    problems.append((path, 1, "", "not a regular file"))
    return sorted(files), problems


class SuiteLoadError(SpecError):
    """The problems of a suite, and how many of its task files were found and loaded."""

    def __init__(self, problems: list[Problem], found: int, loaded: int) -> None:
        super().__init__(problems)
        self.found = found
        self.loaded = loaded


def load_suite(paths: str | Path | Sequence[str | Path], name: str | None = None) -> Suite:
    """Load, validate and resolve every task under `paths`; all problems raised together
    (a SuiteLoadError that says how many task files were found and loaded). A path may
    also name a suite source (`agentdojo:banking`, env/sources.py)."""
    path_list = [paths] if isinstance(paths, str | Path) else list(paths)
    specs = {str(p): source_spec(p) for p in path_list}
    files, problems = task_files([p for p in path_list if specs[str(p)] is None])
    found: list[tuple[LoadedTask, Domain | None, Path | None]] = []
    for raw, spec in specs.items():
        if spec is not None:
            try:
                built = source_tasks(*spec)
            except SourceError as exc:
                problems.append((Path(raw), 1, "", str(exc)))
                continue
            found.extend((LoadedTask(t, Path(raw), (), {}), d, None) for t, d in built)
    tasks, loaded_files = _bound(files, found, problems)
    if not files and not any(specs.values()) and not problems:
        problems.append(
            (Path(path_list[0]) if path_list else Path("."), 1, "", "no task files found")
        )
    if problems:
        raise SuiteLoadError(problems, len(files), loaded_files)
    label = name or ",".join(map(suite_label, path_list))
    return Suite(label, [Path(p) for p in path_list], tasks, files=len(files))


def load_task_files(files: Sequence[tuple[Path, Path]]) -> list[SuiteTask]:
    """The tasks of some of a suite's files, each (file, the suite root its domain is
    looked up to) as `task_files` gathered them: what a grading worker needs of a suite
    it was handed part of (run/worker_source.py). Checked as `load_suite` checks them,
    but for duplicate ids in other files; problems raised together."""
    problems: list[Problem] = []
    tasks, loaded_files = _bound(files, [], problems)
    if problems:
        raise SuiteLoadError(problems, len(files), loaded_files)
    return tasks


def _bound(
    files: Sequence[tuple[Path, Path]],
    found: list[tuple[LoadedTask, Domain | None, Path | None]],
    problems: list[Problem],
) -> tuple[list[SuiteTask], int]:
    """The tasks of `files` (after those already `found`, from suite sources) bound to
    their domains and rubrics, and how many files loaded; problems added to `problems`."""
    loaded_files = 0
    settings: dict[Path, SuiteSettings | None] = {}
    for file, root in files:
        if root not in settings:
            try:
                settings[root] = load_settings(root)
            except SpecError as exc:
                problems.extend(exc.problems)
                settings[root] = None
        shared = settings[root]
        if shared is None:  # its suite's settings are wrong: reported once, above
            continue
        try:
            loaded_here = load_task_file(file, shared.task_defaults())
            found.extend((loaded, None, root) for loaded in loaded_here)
        except SpecError as exc:
            problems.extend(exc.problems)
            continue
        loaded_files += 1
    seen: dict[str, LoadedTask] = {}
    tasks: list[SuiteTask] = []
    loaded_rubrics: dict[Path, Rubric | None] = {}
    domains: dict[tuple[Path, Path | None, str], Domain | DomainNotFound] = {}  # per folder
    for loaded, given, top in found:
        task, file = loaded.task, loaded.path
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
        domain = given or domains.get(key := (file.parent, top, task.domain))
        if domain is None:
            try:
                domain = domains[key] = resolve_domain(task.domain, file, top)
            except DomainNotFound as exc:
                domain = domains[key] = exc
        if isinstance(domain, DomainNotFound):
            where = loaded.line_at(("domain",)), loaded.field_name(("domain",))
            problems.append((file, *where, str(domain)))
            continue
        rubrics = _rubrics(loaded, domain, loaded_rubrics, problems)
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
        for loc, message in task_problems(domain, task):
            problems.append((file, loaded.line_at(loc), loaded.field_name(loc), message))
        tasks.append(SuiteTask(loaded, domain, rubrics, top))
    return tasks, loaded_files


def suite_label(path: str | Path) -> str:
    """A path's name for a suite: its last part once made absolute (so `.` and `..` name
    the folders they mean), or the path as written for a root such as `/`."""
    return Path(os.path.abspath(path)).name or str(path)


def _rubrics(
    loaded: LoadedTask,
    domain: Domain,
    cache: dict[Path, Rubric | None],
    problems: list[Problem],
) -> tuple[Rubric, ...]:
    """The task's rubrics, read relative to its file (each file once); problems collected."""
    out: list[Rubric] = []
    for i, ref in enumerate(loaded.task.expect.judge):
        loc = ("expect", "judge", i, "rubric")

        def problem(message: str, loc: Loc = loc) -> None:  # a line only when needed
            problems.append((loaded.path, loaded.line_at(loc), loaded.field_name(loc), message))

        path = (loaded.path.parent / ref.rubric).resolve()
        if path not in cache:
            cache[path] = None
            if not path.is_file():
                problem(f"no rubric file {ref.rubric} (looked at {path})")
                continue
            try:
                cache[path] = load_rubric(path)
            except SpecError as exc:
                problems.extend(exc.problems)
        rubric = cache[path]
        if rubric is None:
            continue
        if rubric.subject_tool is not None and rubric.subject_tool not in domain.tools:
            problem(f"rubric {rubric.id} judges unknown tool {rubric.subject_tool!r}")
        elif any(r.id == rubric.id for r in out):
            problem(f"rubric {rubric.id} is named twice")
        elif ("reference" in rubric.shows) != (ref.reference is not None):
            problem(_reference_problem(rubric, ref.reference is not None))
        else:
            out.append(rubric)
    return tuple(out)


def _reference_problem(rubric: Rubric, given: bool) -> str:
    """A reference the judge would never see, or a rubric that shows one the task lacks."""
    if given:
        return f"rubric {rubric.id} does not show `reference`: the judge would never see it"
    return f"rubric {rubric.id} shows the task's `reference`: give it beside `rubric`"
