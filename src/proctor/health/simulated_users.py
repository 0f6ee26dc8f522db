"""The simulated user as an instrument of the suite: a control, and its noise floor.

With `proctor health --user-model REF`, the reference agent plays the suite's tasks that
have a `user:` scenario with REF as their user: the control. A simulator that breaks on
the reference (`sim_error`) or fails it where the scripted users let it pass is the
instrument's fault, not an agent's. With `--second-user-model REF2` the same agent plays
a seeded sample of those tasks (`--user-sample`) with each user model: the difference of
the two pass rates, paired by task, with its 95% interval (stats.paired.rate_difference),
is the simulator's noise floor, the change in score that swapping the user model alone
makes (docs/architecture.md, Suite health).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from proctor.core.results import TrialResult
from proctor.decide.summarize import task_counts
from proctor.env.suite import Suite
from proctor.run.simulator import UserPlayer
from proctor.stats.paired import rate_difference
from proctor.stats.rates import task_rate

#: Plays `suite` with the reference agent and `user`, returns its trials.
Play = Callable[[Suite, UserPlayer], list[TrialResult]]


def sample_tasks(ids: Sequence[str], share: float, seed: int) -> list[str]:
    """A seeded share of `ids` (at least one when there is any), in suite order."""
    if not ids:
        return []
    count = max(1, math.ceil(share * len(ids)))
    rank = sorted(ids, key=lambda t: hashlib.sha256(f"{seed}:{t}".encode()).digest())
    chosen = set(rank[:count])
    return [t for t in ids if t in chosen]


def _figures(name: str, results: Sequence[TrialResult]) -> dict[str, Any]:
    sim = sum(r.status == "sim_error" for r in results)
    return {
        "user_model": name,
        "trials": len(results),
        "success_rate": task_rate(list(task_counts(results).values())).value,
        "sim_errors": sim,
        "sim_error_rate": sim / len(results) if results else None,
    }


@dataclass(frozen=True)
class SimulatorHealth:
    """The control run's figures; with a second user model, the sampled tasks, both user
    models' figures on them (first, second) and the difference second − first."""

    tasks: list[str]
    control: dict[str, Any]
    sample: list[str]
    pair: list[dict[str, Any]] | None = None
    difference: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "tasks": self.tasks,
            "control": self.control,
            "sample": self.sample,
            "pair": self.pair,
            "difference": self.difference,
        }


def simulator_health(
    suite: Suite,
    first: UserPlayer,
    second: UserPlayer | None,
    play: Play,
    *,
    share: float = 1.0,
    seed: int = 0,
) -> SimulatorHealth | None:
    """The control and noise floor of the simulator on `suite`'s scenario tasks; None
    when no task has a scenario for a model to play."""
    ids = [t.id for t in suite.tasks if t.task.user.scenario]
    if not ids:
        return None
    control = play(suite.select(ids=ids), first)
    figures = _figures(first.model.name, control)
    if second is None:
        return SimulatorHealth(ids, figures, [])
    sample = sample_tasks(ids, share, seed)
    base = [r for r in control if r.task_id in set(sample)]
    other = play(suite.select(ids=sample), second)
    a, b = task_counts(base), task_counts(other)
    both = [t for t in sample if t in a and t in b]
    diff = rate_difference(
        [a[t][1] / a[t][0] for t in both],
        [b[t][1] / b[t][0] for t in both],
        [a[t][0] for t in both],
        [b[t][0] for t in both],
    )
    difference = (
        None
        if diff is None
        else {"mean": diff.mean, "low": diff.low, "high": diff.high, "tasks": diff.tasks}
    )
    pair = [_figures(first.model.name, base), _figures(second.model.name, other)]
    return SimulatorHealth(ids, figures, sample, pair, difference)
