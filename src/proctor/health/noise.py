"""The noise floor of a suite: how much its verdicts move between identical runs.

One agent run several times (twice with one seed, as proctor.health.flaky compares them,
and once more per further seed) gives each task several verdicts. A task's **flip rate**
is the chance that two of its verdicts disagree, 2·c·(n − c) / (n·(n − 1)) for c passes
among n valid verdicts. Above a threshold the task is **noisy**, with advice: quarantine
it from gates when its grader is not deterministic (the same trace graded otherwise: more
trials measure the bug, not the agent), else raise its trial count to the k that keeps the
standard error of its pass rate under `SE_TARGET`, or quarantine it when that k is beyond
`MAX_TRIALS`. The suite's minimal detectable effect as run today comes from
proctor.stats.rates on these verdicts; gate rules whose threshold is inside that noise
are named (docs/architecture.md, Suite health).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from proctor.core.results import TrialResult
from proctor.decide.gate import Rule
from proctor.decide.rules import Name, Num, Op
from proctor.health.flaky import FlakyReport
from proctor.stats import rates as stats

#: A task whose verdicts disagree more often than this between identical runs is noisy.
FLIP_THRESHOLD = 0.1
#: The standard error of a task's pass rate that a raised trial count aims for.
SE_TARGET = 0.1
#: Past this many trials a task is quarantined rather than run longer.
MAX_TRIALS = 25
#: Metrics a rate threshold is read on, for the callout of thresholds inside the noise.
RATE_METRICS = frozenset({"task_success_rate", "pooled_success_rate"})


def flip_rate(n: int, c: int) -> float | None:
    """The chance that two of n verdicts with c passes disagree; None below two."""
    if n < 2:
        return None
    return 2.0 * c * (n - c) / (n * (n - 1))


@dataclass
class TaskNoise:
    task_id: str
    verdicts: int
    passes: int
    flip_rate: float | None
    #: Checks whose result differed on the same trace (a nondeterministic grader).
    grader_checks: list[str] = field(default_factory=list)
    advice: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "verdicts": self.verdicts,
            "passes": self.passes,
            "flip_rate": self.flip_rate,
            "grader_checks": self.grader_checks,
            "advice": self.advice,
        }


def advice_for(noise: TaskNoise, trials: int) -> str:
    """Quarantine or a trial count, and why."""
    if noise.grader_checks:
        checks = ", ".join(noise.grader_checks)
        return f"quarantine: its grader is not deterministic (same trace, other {checks})"
    p = noise.passes / noise.verdicts
    needed = max(trials + 1, math.ceil(p * (1.0 - p) / SE_TARGET**2))
    if needed > MAX_TRIALS:
        return f"quarantine: {needed} trials would be needed to measure it"
    return f"raise its trials to {needed} (standard error of its pass rate under {SE_TARGET:g})"


@dataclass
class NoiseReport:
    agent: str
    runs: int
    seeds: list[int]
    trials: int
    threshold: float
    tasks: list[TaskNoise]
    rate: float | None
    icc: float | None
    mde: float | None
    #: Two standard errors of the success rate between identical runs: a threshold this
    #: close to the rate passes or fails by chance.
    band: float | None
    callouts: list[dict[str, Any]] = field(default_factory=list)

    @property
    def noisy(self) -> list[TaskNoise]:
        return [t for t in self.tasks if t.advice is not None]

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "runs": self.runs,
            "seeds": self.seeds,
            "trials": self.trials,
            "threshold": self.threshold,
            "success_rate": self.rate,
            "icc": self.icc,
            "mde": self.mde,
            "noise_band": self.band,
            "noisy_tasks": [t.task_id for t in self.noisy],
            "tasks": [t.to_dict() for t in self.tasks],
            "gate_callouts": self.callouts,
        }


def _grader_checks(flaky: FlakyReport) -> dict[str, list[str]]:
    out: dict[str, set[str]] = {}
    for d in flaky.diffs:
        if d.cause == "grader":
            out.setdefault(d.task_id, set()).update(n.split("#")[0] for n in d.checks)
    return {t: sorted(names) for t, names in out.items()}


def noise_floor(
    task_ids: Sequence[str],
    runs: Sequence[Iterable[TrialResult]],
    flaky: FlakyReport,
    *,
    seeds: list[int],
    trials: int,
    threshold: float = FLIP_THRESHOLD,
) -> NoiseReport:
    """Per-task flip rates over `runs` (trial results of one agent), the noisy tasks with
    advice, the success rate, ICC and minimal detectable effect of one such run."""
    counts = {t: [0, 0] for t in task_ids}
    for run in runs:
        for r in run:
            if r.valid and r.task_id in counts:
                counts[r.task_id][0] += 1
                counts[r.task_id][1] += int(r.passed)
    graders = _grader_checks(flaky)
    tasks = []
    for task_id, (n, c) in counts.items():
        noise = TaskNoise(task_id, n, c, flip_rate(n, c), graders.get(task_id, []))
        if noise.grader_checks or (noise.flip_rate or 0.0) > threshold:
            noise.advice = advice_for(noise, trials)
        tasks.append(noise)
    measured = [(n, c) for n, c in counts.values() if n]
    rate = stats.mean(c / n for n, c in measured)
    icc = stats.icc_anova(measured)
    mde = (
        stats.minimal_detectable_effect(
            rate, len(measured), trials, icc=0.0 if icc is None else icc
        )
        if rate is not None
        else None
    )
    # Between identical runs, a task's trial-mean varies by p(1 − p)/trials; the
    # task-weighted rate by the sum of those over T².
    band = (
        2.0 * math.sqrt(sum((c / n) * (1 - c / n) / trials for n, c in measured)) / len(measured)
        if measured
        else None
    )
    return NoiseReport(
        flaky.agent, len(runs), seeds, trials, threshold, tasks, rate, icc, mde, band
    )


def _threshold(node: Any) -> tuple[str, float] | None:
    """`metric OP number` (or `number OP metric`) on a rate metric: (metric, threshold)."""
    if not isinstance(node, Op) or node.right is None:
        return None
    if node.op not in ("<", "<=", ">", ">=", "=="):
        return None
    left, right = node.left, node.right
    if isinstance(left, Name) and isinstance(right, Num) and left.name in RATE_METRICS:
        return left.name, right.value
    if isinstance(right, Name) and isinstance(left, Num) and right.name in RATE_METRICS:
        return right.name, left.value
    return None


def gate_callouts(
    report: NoiseReport, rules: Sequence[Rule], slices: Mapping[str, set[str]]
) -> list[dict[str, Any]]:
    """The rules whose threshold is inside the noise. `slices`: each rule's source →
    the task ids it gates."""
    out: list[dict[str, Any]] = []
    noisy = {t.task_id for t in report.noisy}
    for rule in rules:
        why = None
        if rule.kind == "non_inferior" and report.rate is not None and report.mde is None:
            why = (
                f"margin {rule.margin:g}: the suite as run detects no drop from its rate "
                f"{report.rate:.3f} at all (too few tasks or trials)"
            )
        elif rule.kind == "non_inferior" and report.mde is not None and rule.margin < report.mde:
            why = (
                f"margin {rule.margin:g} is below the suite's minimal detectable effect "
                f"{report.mde:.3f}: a drop of the margin cannot be told from noise"
            )
        elif rule.kind == "no_regressions":
            flipping = sorted(noisy & slices.get(rule.source, set()))
            if flipping:
                why = f"tasks that flip between identical runs would fail it: {', '.join(flipping)}"
        elif rule.kind == "test" and report.rate is not None and report.band is not None:
            found = _threshold(rule.node)
            if found and abs(report.rate - found[1]) < report.band:
                why = (
                    f"threshold {found[1]:g} is within {report.band:.3f} (two standard errors "
                    f"between identical runs) of the rate {report.rate:.3f}: it passes or fails "
                    "by chance"
                )
        if why:
            out.append({"rule": rule.text, "source": rule.source, "why": why})
    return out
