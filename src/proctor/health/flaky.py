"""Flaky tasks: verdicts or checks that differ between two runs with the same seed.

Every trial is seeded (docs/architecture.md, Verdicts: Isolation), so a deterministic
agent run twice with the same seed must give the same trace and the same checks. A task
where they differ has a nondeterministic grader (reads the clock, iterates a set, draws
unseeded random numbers) or a nondeterministic fixture or agent; which one shows in
whether the traces differ too: the same trace with different checks is the grader's
fault. `flaky_tasks` returns data; printing is proctor.report.health_tables.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from proctor.core.jsonvalues import canonical
from proctor.core.results import Check
from proctor.core.trace import Trace
from proctor.env.suite import Suite
from proctor.run.runner import Runner
from proctor.store.sqlite import Store


@dataclass
class TrialDiff:
    """How one trial differed between the runs."""

    task_id: str
    trial: int
    statuses: tuple[str, str]
    #: check name -> [first run, second run]: passed (and score) or `absent`.
    checks: dict[str, list[str]] = field(default_factory=dict)
    #: The first trace event that differs (seq, and each run's event), None when equal.
    trace_diff: dict[str, Any] | None = None

    @property
    def cause(self) -> str:
        """Where the nondeterminism is: the same trace graded differently is the grader."""
        if self.trace_diff is None:
            return "grader"
        return "agent or fixture"

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "trial": self.trial,
            "statuses": list(self.statuses),
            "checks": self.checks,
            "trace_diff": self.trace_diff,
            "cause": self.cause,
        }


@dataclass
class FlakyReport:
    suite: str
    agent: str
    seed: int
    trials: int
    runs: tuple[str, str]
    tasks: int
    diffs: list[TrialDiff]

    @property
    def flaky_tasks(self) -> list[str]:
        return sorted({d.task_id for d in self.diffs})

    def to_dict(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "agent": self.agent,
            "seed": self.seed,
            "trials": self.trials,
            "runs": list(self.runs),
            "tasks": self.tasks,
            "flaky_tasks": self.flaky_tasks,
            "trials_differing": [d.to_dict() for d in self.diffs],
        }


def _check_text(check: Check | None) -> str:
    if check is None:
        return "absent"
    return f"{'pass' if check.passed else 'fail'} {check.score:g}"


def check_differences(first: list[Check], second: list[Check]) -> dict[str, list[str]]:
    """Check name -> the two runs' results, for names whose result differs. A name
    appearing more than once is compared occurrence by occurrence."""

    def keyed(checks: list[Check]) -> dict[str, Check]:
        seen: dict[str, int] = {}
        out = {}
        for c in checks:
            n = seen[c.name] = seen.get(c.name, 0) + 1
            out[c.name if n == 1 else f"{c.name}#{n}"] = c
        return out

    a, b = keyed(first), keyed(second)
    return {
        name: [_check_text(a.get(name)), _check_text(b.get(name))]
        for name in sorted(a.keys() | b.keys())
        if _check_text(a.get(name)) != _check_text(b.get(name))
    }


def first_trace_difference(first: Trace, second: Trace) -> dict[str, Any] | None:
    """The first event (by position) whose kind or data differ; times are ignored."""
    for i in range(max(len(first.events), len(second.events))):
        a = first.events[i] if i < len(first.events) else None
        b = second.events[i] if i < len(second.events) else None
        shown = [None if e is None else {"kind": e.kind, "data": e.data} for e in (a, b)]
        if shown[0] is None or shown[1] is None or canonical(shown[0]) != canonical(shown[1]):
            return {"index": i, "first": shown[0], "second": shown[1]}
    return None


def _traces(store: Store, run_id: str) -> Iterator[tuple[str, int, Trace]]:
    for stored in store.graded_trials(run_id, ()):
        yield stored.result.task_id, stored.result.trial, stored.trace


def flaky_tasks(
    suite: Suite,
    agent: Any,
    *,
    seed: int = 0,
    trials: int = 1,
    concurrency: int = 4,
    store: Store | None = None,
) -> FlakyReport:
    """Run `agent` on `suite` twice with the same seed and compare trial by trial. Both
    runs go into `store` when one is given (`proctor health` reads them again), else into
    a store in memory."""
    own = store is None
    store = Store(":memory:") if store is None else store
    try:
        runs = [
            Runner(
                suite, agent, trials=trials, seed=seed, store=store, concurrency=concurrency
            ).run()
            for _ in range(2)
        ]
        first, second = (
            {(r.task_id, r.trial): r for r in store.trial_results(run.run_id)} for run in runs
        )
        traces = [{(t, n): tr for t, n, tr in _traces(store, run.run_id)} for run in runs]
    finally:
        if own:
            store.close()
    diffs = []
    for key in sorted(first.keys() | second.keys()):
        a, b = first.get(key), second.get(key)
        if a is None or b is None:
            continue
        checks = check_differences(a.checks, b.checks)
        trace_diff = first_trace_difference(traces[0][key], traces[1][key])
        if a.status != b.status or checks:
            diffs.append(TrialDiff(key[0], key[1], (a.status, b.status), checks, trace_diff))
    return FlakyReport(
        suite.name,
        runs[0].manifest.agent.name,
        seed,
        trials,
        (runs[0].run_id, runs[1].run_id),
        len(suite.tasks),
        diffs,
    )
