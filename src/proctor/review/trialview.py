"""What the desk shows of a trial: its task, its trace step by step, the answer, and the
automated verdict (which an item page holds back until the reviewer has labelled).

Steps are `proctor.core.steps`, the wording the report's trace viewer and `proctor show`
use. Tasks are not stored with a run: they are read from the run's task files (the paths
its manifest records, or the desk's `--tasks`), and only a task whose content digest is
the one the run recorded is shown: a changed file would show what the agent never saw.
The suite is loaded as `proctor run` loads it, domains included, so the initial state is
the one the trial started from (the domain's base state under the task's own); when the
suite does not load, the task files alone are read and the state is the task's own. In
blinded mode the model's name is left out of the steps: it would say which run a trial
came from.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from proctor.core.documents import SpecError
from proctor.core.manifest import Manifest
from proctor.core.steps import CheckView, Step, check_views, step
from proctor.core.trace import Trace, TraceEvent
from proctor.env.domain import Domain
from proctor.env.suite import load_suite, task_files
from proctor.store import desk
from proctor.store.sqlite import RunNotFound, Store
from proctor.tasks.loader import load_task_file
from proctor.tasks.models import Task
from proctor.tasks.settings import load_settings

#: A state with at most this many leaves is shown whole.
SMALL_STATE = 24


@dataclass(frozen=True)
class TaskView:
    task_id: str
    prompt: str
    identity: dict[str, Any] | None
    state: Any
    state_note: str
    found: bool  # the task file was found with the digest the run recorded


@dataclass(frozen=True)
class TrialView:
    task_id: str
    trial: int
    status: str
    score: float
    error: str | None
    steps: list[Step]
    answer: str
    checks: list[CheckView]
    trace: Trace


Found = tuple[Task, Domain | None]


def _files_only(paths: list[str]) -> dict[str, list[Found]]:
    found: dict[str, list[Found]] = {}
    try:
        files, _ = task_files(paths)  # what cannot be gathered shows no task
    except SpecError:
        files = []
    for file, root in files:
        try:
            loaded = load_task_file(file, load_settings(root).task_defaults())
        except SpecError:
            continue  # a broken file shows no task; `proctor validate` says why
        for item in loaded:
            found.setdefault(item.task.id, []).append((item.task, None))
    return found


class TaskFiles:
    """Tasks by path, loaded once (a desk serves many pages of the same suite)."""

    def __init__(self, paths: Sequence[str | Path] = ()) -> None:
        self.paths = [str(p) for p in paths]
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, ...], dict[str, list[Found]]] = {}

    def _catalog(self, paths: tuple[str, ...]) -> dict[str, list[Found]]:
        with self._lock:
            if paths not in self._cache:
                here = [p for p in paths if Path(p).exists()]
                try:
                    suite = load_suite(here) if here else None
                except SpecError:
                    suite = None
                if suite is None:
                    self._cache[paths] = _files_only(here)
                else:
                    self._cache[paths] = {t.id: [(t.task, t.domain)] for t in suite.tasks}
            return self._cache[paths]

    def task(self, manifest: Manifest, task_id: str) -> Found | None:
        """The task as the run saw it (with its domain when the suite loads), or None."""
        paths = tuple(self.paths or manifest.suite.paths)
        want = manifest.suite.task_digests.get(task_id)
        found = self._catalog(paths).get(task_id, [])
        return next((pair for pair in found if pair[0].digest == want), None)


def _mentioned(trace: Trace) -> set[str]:
    """Strings a trial's calls and state changes name: argument values and path parts."""
    out: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, str | int) and not isinstance(value, bool):
            out.add(str(value))

    for event in trace.events:
        if event.kind == "tool_proposal":
            walk(event.data.get("args"))
        elif event.kind == "state_change":
            for change in event.data.get("changes") or []:
                out.update(str(change.get("path", "")).replace("[", ".").split("."))
    return out


def _leaves(value: Any) -> int:
    if isinstance(value, dict):
        return sum(_leaves(v) for v in value.values()) or 1
    if isinstance(value, list):
        return sum(_leaves(v) for v in value) or 1
    return 1


def relevant_state(state: dict[str, Any], trace: Trace) -> tuple[Any, str]:
    """The part of an initial state a trial touched, and a note saying what was left out.

    A small state is shown whole. Otherwise: scalars at the top, and of each collection
    (a mapping of entries) the entries whose key a tool call's arguments or a state
    change's path name (`orders.A-100` for a call with `order_id: A-100`).
    """
    total = _leaves(state)
    if total <= SMALL_STATE:
        return state, ""
    named = _mentioned(trace)
    kept: dict[str, Any] = {}
    for key, value in state.items():
        if isinstance(value, dict):
            entries = {k: v for k, v in value.items() if k in named}
            if entries:
                kept[key] = entries
        elif not isinstance(value, list):
            kept[key] = value
    return kept, f"the entries this trial named: {_leaves(kept)} of {total} values shown"


def task_view(found: Found | None, task_id: str, trace: Trace) -> TaskView:
    if found is None:
        prompt = trace.prompt or ""
        return TaskView(task_id, prompt, None, None, "task file not found", False)
    task, domain = found
    start = domain.initial_state(task) if domain is not None else task.initial_state
    state, note = relevant_state(start, trace)
    if domain is None:
        note = "; ".join(filter(None, ["the task's own state (its domain did not load)", note]))
    identity = task.identity.model_dump(exclude_none=True)
    return TaskView(task_id, task.prompt, identity, state, note, True)


def _blind(event: TraceEvent) -> TraceEvent:
    if event.kind == "model_call" and "model" in event.data:
        return replace(event, data={**event.data, "model": "model"})
    return event


def trial_view(store: Store, run_id: str, task_id: str, trial: int, *, blind: bool) -> TrialView:
    """A stored trial as the desk shows it; RunNotFound when there is no such trial."""
    row = desk.trial_row(store, run_id, task_id, trial)
    if row is None:
        raise RunNotFound(f"no trial {task_id}#{trial}")
    status, score, error, checks = row
    trace, answer, _ = store.trace(run_id, task_id, trial)
    events = [_blind(e) for e in trace.events] if blind else trace.events
    steps = [step(e) for e in events if e.kind != "answer"]
    return TrialView(
        task_id,
        trial,
        status,
        score,
        error,
        steps,
        answer or trace.answer,
        check_views(checks, {s.seq for s in steps}),
        trace,
    )
