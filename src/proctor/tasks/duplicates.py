"""Duplicate and near-duplicate tasks: the same test under another id.

A copied task counts twice in every rate and, split across dev and holdout, leaks the
holdout. Two tasks are compared when everything the agent starts from is equal (domain,
identity, initial state, offered tools, faults, simulated user); they are duplicates when
their prompts are equal after case and whitespace folding, near-duplicates when the
prompts are at least `NEAR` similar (difflib ratio).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from difflib import SequenceMatcher
from typing import Any

from proctor.core.documents import Problem
from proctor.core.jsonvalues import digest
from proctor.tasks.loader import LoadedTask

NEAR = 0.9


def _setting(t: LoadedTask, starts: Mapping[str, Any]) -> str:
    task = t.task
    return digest(
        {
            "domain": task.domain,
            "identity": task.identity.model_dump(),
            "initial_state": starts.get(task.id, task.initial_state),
            "tools": task.tools,
            "faults": [f.model_dump() for f in task.faults],
            "user": task.user.model_dump(),
        }
    )


def _prompt(t: LoadedTask) -> str:
    return re.sub(r"\s+", " ", t.task.prompt).strip().casefold()


def _similarity(a: str, b: str, near: float) -> float:
    """difflib's ratio, skipped (0.0) when its cheap upper bounds are already below `near`."""
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    if matcher.real_quick_ratio() < near or matcher.quick_ratio() < near:
        return 0.0
    return matcher.ratio()


def duplicate_tasks(
    tasks: Sequence[LoadedTask], near: float = NEAR, starts: Mapping[str, Any] | None = None
) -> list[Problem]:
    """One problem (file, line, field, message) per task that repeats an earlier one.

    `starts` gives, by task id, what a task starts from when its domain builds that
    rather than taking the task's `initial_state` (env/domain.py: `starting_point`).
    """
    groups: dict[str, list[LoadedTask]] = defaultdict(list)
    for t in tasks:
        groups[_setting(t, starts or {})].append(t)
    problems = []
    for members in groups.values():
        prompts = [_prompt(t) for t in members]
        for j, later in enumerate(members):
            for i in range(j):
                if prompts[i] == prompts[j]:
                    kind = "duplicate"
                elif (ratio := _similarity(prompts[i], prompts[j], near)) >= near:
                    kind = f"near-duplicate ({ratio:.0%} similar prompt)"
                else:
                    continue
                first = members[i]
                problems.append(
                    (
                        later.path,
                        later.line_at(("prompt",)),
                        later.field_name(("prompt",)),
                        f"task {later.task.id!r} is a {kind} of {first.task.id!r} "
                        f"({first.path}:{first.line}) with the same starting state",
                    )
                )
                break
    return problems
