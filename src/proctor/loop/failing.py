"""Which of a task's expectations a trace failed: the task's `expect` split into items.

A check's name does not always say which expectation produced it (two effect assertions
on one tool both give `effect:TOOL`), so the items are found by grading: the trace is
graded against the task holding one item at a time (with the task's robustness settings,
which shape the checks every trial gets), and an item is failed when a check that blocks
the verdict fails with it and not without it, and the full task failed that check too.
A promoted task keeps exactly these items (proctor.loop.promote).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from proctor.core.outcome import Outcome
from proctor.core.results import NOT_MEASURED, TrialResult
from proctor.core.trace import Trace
from proctor.env.domain import Domain
from proctor.grade.context import GradeContext
from proctor.grade.state import state_recorded, without_state_checks
from proctor.run.trial import judge, usage_of
from proctor.tasks.models import Task

#: Expectation groups whose fields are each one item; lists contribute one item an entry.
_GROUPS = ("trajectory", "answer", "safety", "budget")
#: Safety fields judged together: `secrets` adds task strings to the same check.
_TOGETHER = {"safety": (("no_secrets_in_output", "secrets"),)}


@dataclass(frozen=True)
class Item:
    """One expectation, as a fragment of `expect` in task-file form."""

    label: str
    fragment: dict[str, Any]


def items(task: Task) -> Iterator[Item]:
    """The task's expectations one by one (robustness settings are not items)."""
    expect = task.expect.model_dump(mode="json", exclude_unset=True)
    for i, entry in enumerate(expect.get("outcome", [])):
        yield Item(f"outcome[{i}]", {"outcome": [entry]})
    for group in _GROUPS:
        spec = expect.get(group) or {}
        together = _TOGETHER.get(group, ())
        joined = {name for names in together for name in names}
        for names in together:
            fields = {n: spec[n] for n in names if n in spec}
            if fields:
                yield Item(f"{group}.{'+'.join(fields)}", {group: fields})
        for name, value in spec.items():
            if name in joined:
                continue
            if isinstance(value, list):
                for i, entry in enumerate(value):
                    yield Item(f"{group}.{name}[{i}]", {group: {name: [entry]}})
            elif value not in (False, None):
                yield Item(f"{group}.{name}", {group: {name: value}})


def task_with(task: Task, fragments: list[dict[str, Any]]) -> Task:
    """`task` whose `expect` is its robustness settings plus `fragments` (merged)."""
    expect: dict[str, Any] = {}
    robustness = task.expect.robustness.model_dump(mode="json", exclude_unset=True)
    if robustness:
        expect["robustness"] = robustness
    for fragment in fragments:
        for group, value in fragment.items():
            if isinstance(value, list):
                expect[group] = [*expect.get(group, []), *value]
            else:
                merged = expect.setdefault(group, {})
                for name, part in value.items():
                    merged[name] = (
                        [*merged.get(name, []), *part] if isinstance(part, list) else part
                    )
    data = task.model_dump(mode="json", exclude_unset=True)
    return Task.model_validate({**data, "expect": expect})


def blocking_failures(
    task: Task, domain: Domain, trace: Trace, outcome: Outcome, latency_s: float
) -> set[str]:
    """Names of the checks that fail the trial when `trace` is graded against `task`. A
    budget on a figure the trace never reported fails for want of data, not for what the
    agent did: no regression task can reproduce it, so it is left out."""
    if not state_recorded(trace):
        task, _ = without_state_checks(task)
    usage = usage_of(trace.events)
    result = TrialResult("promote", task.id, 0, 0, "error")
    judge(result, GradeContext(task, trace, outcome, usage, latency_s, domain), [], None, None)
    return {
        c.name
        for c in result.checks
        if c.blocks
        and not (isinstance(c.evidence, dict) and c.evidence.get("actual") == NOT_MEASURED)
    }


@dataclass
class Failure:
    """What of a task a trace failed: the items, and failed checks no item reproduces."""

    items: list[Item]
    checks: list[str]
    not_carried: list[str]


def failed_items(
    task: Task, domain: Domain, trace: Trace, outcome: Outcome, latency_s: float
) -> Failure:
    """The items of `task` that `trace` failed (see the module docstring)."""
    failed = blocking_failures(task, domain, trace, outcome, latency_s)
    base = blocking_failures(task_with(task, []), domain, trace, outcome, latency_s)
    kept, covered = [], set(base & failed)
    for item in items(task):
        alone = blocking_failures(
            task_with(task, [item.fragment]), domain, trace, outcome, latency_s
        )
        own = (alone - base) & failed
        if own:
            kept.append(item)
            covered |= own
    return Failure(kept, sorted(failed), sorted(failed - covered))
