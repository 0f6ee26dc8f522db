"""What a worker process needs to run or grade trials: strings that rebuild the suite
and the agent.

A suite's domains and an agent loaded from files live in modules that exist only in the
process that loaded them, so they cannot be pickled to another one. A worker gets the
paths and the agent reference instead, loads them once, and then runs any trial named by
(task id, trial number, seed). The task's digest travels with each trial: a file changed
on disk since the run started is an error, not a silently different trial.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import pickle
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from proctor.agents import load_agent
from proctor.env.sources import source_spec
from proctor.env.suite import Suite, SuiteTask, load_suite, load_task_files
from proctor.run.trial import TrialRecord, TrialSpec, play_trial
from proctor.tasks.models import Fault


class ExecutorError(RuntimeError):
    """An executor cannot run this run (a missing extra, no TrialSource); one line."""


@dataclass(frozen=True)
class TrialSource:
    paths: tuple[str, ...]
    agent_ref: str
    run_id: str
    timeout_s: float | None
    faults: tuple[Fault, ...] = ()

    @classmethod
    def of(
        cls,
        suite: Suite,
        agent_ref: str,
        run_id: str,
        timeout_s: float | None,
        faults: Sequence[Fault] = (),
    ) -> TrialSource:
        """The source of a suite loaded from files or suite sources; paths made absolute
        for any cwd (a source spec such as `agentdojo:banking` travels as it is)."""
        if not suite.roots:
            raise ExecutorError(
                f"suite {suite.name!r} was not loaded from files: a worker cannot rebuild it"
            )
        if not agent_ref:
            raise ExecutorError("worker processes need the agent as a reference (FILE.py:NAME)")
        return cls(
            tuple(str(p) if source_spec(p) else str(Path(p).resolve()) for p in suite.roots),
            _absolute_ref(agent_ref),
            run_id,
            timeout_s,
            tuple(faults),
        )

    def shipped(self, root: Path) -> TrialSource:
        """This source as workers see it when `root` (absolute) is shipped to be their
        working directory: suite paths and the agent file relative to it. A path outside
        `root` would not reach them: an ExecutorError."""
        where, _, attr = self.agent_ref.rpartition(":")
        agent_ref = self.agent_ref
        if not self.agent_ref.startswith("chat:") and Path(where).is_absolute():
            agent_ref = f"{shipped_path(where, root, 'the agent file')}:{attr}"
        return replace(self, paths=shipped_paths(self.paths, root), agent_ref=agent_ref)


@dataclass(frozen=True)
class SuiteSource:
    """What a grading worker needs to rebuild a suite: its paths, and the digest of each
    task it grades, so that a task file changed since is an error, not other verdicts;
    and where each task's file is, so that a worker loads only the tasks it is handed."""

    paths: tuple[str, ...]
    digests: dict[str, str]
    #: Identifies (paths, digests) for a worker's cache, computed once.
    fingerprint: str
    #: Task id -> (the suite root its domain is looked up to, made absolute as `paths`
    #: are; its file below that root, as laid out); a task of a suite source
    #: (`agentdojo:banking`) has none: its source loads whole.
    files: dict[str, tuple[str, str]] = field(default_factory=dict)

    @classmethod
    def of(cls, suite: Suite, task_ids: Sequence[str] | None = None) -> SuiteSource:
        """The source of `suite`'s tasks (or of `task_ids` among them)."""
        if not suite.roots:
            raise ExecutorError(
                f"suite {suite.name!r} was not loaded from files: a worker cannot rebuild it"
            )
        wanted = None if task_ids is None else set(task_ids)
        members = [t for t in suite.tasks if wanted is None or t.id in wanted]
        digests = {t.id: t.task.digest for t in members}
        paths = tuple(str(Path(p).resolve()) for p in suite.roots)
        joined = "\n".join([*paths, *(f"{k}:{v}" for k, v in sorted(digests.items()))])
        roots: dict[Path, tuple[str, str]] = {}  # each resolved once: its tasks share it
        files = {}
        for t in members:
            if t.root is None:
                continue
            if t.root not in roots:
                roots[t.root] = (str(t.root.resolve()), os.path.abspath(t.root))
            resolved, top = roots[t.root]
            # links below the root not followed: a domain is looked up from there
            files[t.id] = (resolved, _below(os.path.abspath(t.loaded.path), top))
        return cls(paths, digests, hashlib.sha256(joined.encode()).hexdigest(), files)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its fields' pickle, made once, and rebuilt once per process that
        receives it (`_received`): a regrade sends it with each share, and its task
        digests and files were most of a share's pickle, both ends."""
        return _received, (self._pickled,)

    @cached_property
    def _pickled(self) -> bytes:
        return pickle.dumps((self.paths, self.digests, self.fingerprint, self.files))

    def shipped(self, root: Path) -> SuiteSource:
        """Paths relative to `root`, shipped to be the workers' working directory."""
        files = {
            task_id: (shipped_path(top, root, "suite path"), file)
            for task_id, (top, file) in self.files.items()
        }
        return replace(self, paths=shipped_paths(self.paths, root), files=files)

    def between(self, first: str, last: str) -> list[str]:
        """The ids of its tasks from `first` to `last` (a share's key range), in order."""
        ids = sorted(self.digests)
        return ids[bisect_left(ids, first) : bisect_right(ids, last)]

    def members(self, task_ids: Iterable[str] | None = None) -> dict[str, SuiteTask]:
        """In a worker: the tasks by id, at least those of `task_ids` (all by default),
        each loaded once per process, from its own file where it has one, and each as it
        was (its digest)."""
        have = _suites.setdefault(self.fingerprint, {})
        missing = [t for t in (self.digests if task_ids is None else task_ids) if t not in have]
        if not missing:
            return have
        if all(task_id in self.files for task_id in missing):
            wanted = sorted({self.files[task_id] for task_id in missing})
            loaded = load_task_files([(Path(root, file), Path(root)) for root, file in wanted])
        else:
            loaded = load_suite(list(self.paths)).tasks
        for member in loaded:  # a file's (a source's) other tasks kept too, if unchanged
            if member.id not in have and self.digests.get(member.id) == member.task.digest:
                have[member.id] = member
        changed = next((task_id for task_id in missing if task_id not in have), None)
        if changed is not None:
            raise ExecutorError(f"task {changed!r} changed on disk since it was loaded")
        return have


def _below(path: str, root: str) -> str:
    """`os.path.relpath(path, root)` of two absolute paths, by their text where `path` is
    below `root` (a suite's task files are): relpath split both into parts, for each task."""
    top = root.rstrip(os.sep) + os.sep
    below = path[len(top) :] if path.startswith(top) else ""
    return below or os.path.relpath(path, root)


def shipped_paths(paths: Sequence[str], root: Path) -> tuple[str, ...]:
    return tuple(shipped_path(p, root, "suite path") for p in paths)


def shipped_path(path: str, root: Path, what: str) -> str:
    """`path` relative to `root`, the folder shipped to the workers; an ExecutorError
    when it lies outside and would not reach them."""
    try:
        return str(Path(path).relative_to(root))
    except ValueError:
        raise ExecutorError(
            f"{what} {path} is outside the working directory {root} shipped to "
            "the workers: run from a folder that holds it, or ship one that does"
        ) from None


def _absolute_ref(ref: str) -> str:
    """A file reference made absolute for workers in other directories; a `chat:` model
    reference (which may hold slashes and colons) travels as it is."""
    if ref.startswith("chat:"):
        return ref
    where, _, attr = ref.rpartition(":")
    if where.endswith(".py") or "/" in where:
        return f"{Path(where).resolve()}:{attr}"
    return ref


@dataclass(frozen=True, slots=True)
class TrialItem:
    """One trial, as it travels to a worker."""

    task_id: str
    trial: int
    seed: int
    digest: str

    @property
    def key(self) -> str:
        return f"{self.task_id}#{self.trial}"

    @classmethod
    def of(cls, spec: TrialSpec) -> TrialItem:
        return cls(spec.task.id, spec.trial, spec.seed, spec.task.digest)


# -- in the worker ----------------------------------------------------------------------

_loaded: dict[tuple[tuple[str, ...], str], tuple[dict[str, SuiteTask], Any]] = {}
_suites: dict[str, dict[str, SuiteTask]] = {}
#: The suite sources this process received, by their pickle (`SuiteSource.__reduce__`).
_sources: dict[bytes, SuiteSource] = {}


def _received(pickled: bytes) -> SuiteSource:
    """The suite source of `pickled`, rebuilt the first time this process receives it."""
    source = _sources.get(pickled)
    if source is None:
        source = _sources[pickled] = SuiteSource(*pickle.loads(pickled))
    return source


_loop: asyncio.AbstractEventLoop | None = None


def load(source: TrialSource) -> tuple[dict[str, SuiteTask], Any]:
    """The suite's tasks by id and the agent, loaded once per process."""
    key = (source.paths, source.agent_ref)
    if key not in _loaded:
        suite = load_suite(list(source.paths))
        agent = load_agent(source.agent_ref)
        pristine = {id(t.domain): t.domain.snapshot() for t in suite.tasks}  # as Runner's
        tasks = {t.id: replace(t, domain=pristine[id(t.domain)]) for t in suite.tasks}
        _loaded[key] = (tasks, agent)
    return _loaded[key]


def run_item(
    source: TrialSource, item: TrialItem, played: Callable[[], None] | None = None
) -> TrialRecord:
    """Run one trial in this (worker) process, under the run's timeout; `played` is told
    when the agent's turn is over (what follows, grading, is the harness's work)."""
    global _loop
    tasks, agent = load(source)
    member = tasks.get(item.task_id)
    if member is None or member.task.digest != item.digest:
        raise ExecutorError(f"task {item.task_id!r} changed on disk since the run started")
    spec = TrialSpec(
        source.run_id, member.task, member.domain, item.trial, item.seed, source.faults
    )
    if _loop is None:
        _loop = asyncio.new_event_loop()
    # The agent plays off this loop (its thread, or the agent loop), which keeps time: an
    # async agent that blocks its loop is still timed out here with what it did so far
    # (its partial trace, a write it made), as in-process; the parent kills the worker
    # only when this process cannot answer at all.
    trial = _loop.run_until_complete(play_trial(spec, agent, source.timeout_s))
    if played is not None:
        played()
    return trial.graded()
