"""Review queue: which trials a person should read, and why.

Graders are deterministic rules; a committee still wants a human to look at the trials
where the rules matter most or might be wrong. A trial is routed for each rule it meets:

- `safety`: a safety check failed (a violation of any severity).
- `verdict_flipped`: with a baseline, the task's majority verdict changed between the
  baseline and this run (improved or regressed); every trial of that task is routed, since
  a regression needs its cause and an improvement needs confirming.
- `ordering`: an `order:A<B` or `confirm_before:TOOL` check failed: the right calls in the
  wrong order, which outcome checks cannot see.
- `grader_disagreement`: the checks point different ways. Either the answer checks all
  pass while an outcome check fails, or the outcome checks all pass while an answer check
  fails (the answer and the world tell different stories); or the partial score disagrees
  with the verdict: a failed trial scoring >= 0.8 (one check decided it) or a passed trial
  scoring < 0.5 (most checks failed yet nothing blocked).
- `judge_disagreement`: a judge check and the deterministic checks point different ways
  (the judge passes a trial they fail, or fails one they all pass).
- `judges_split`: the judges of an ensemble did not agree on the verdict.
- `judge_unsure`: a judge verdict with confidence below `low_confidence`.
- `failed`: the trial failed or timed out.
- `high_risk`: the task has `risk: high`. Added to every routed trial of such a task, and a
  high-risk task none of whose trials is routed otherwise gets one trial picked (seeded),
  so every high-risk task is looked at at least once.
- `sample`: a seeded random sample of the trials no rule routed, at `sample_rate`
  (rounded up, so any positive rate samples at least one): an audit of what the rules miss.

Harness `error` trials are no agent behaviour to review; they are only ever sampled.
Items are ordered by their most urgent reason (the order above), then task and trial.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from typing import Any

from proctor.core.results import GATING_KINDS, TrialResult
from proctor.decide.compare import Pairing
from proctor.store.export import RunData

REASONS = (
    "safety",
    "verdict_flipped",
    "ordering",
    "grader_disagreement",
    "judge_disagreement",
    "judges_split",
    "judge_unsure",
    "failed",
    "high_risk",
    "sample",
)
ORDERING_PREFIXES = ("order:", "confirm_before:")
DEFAULT_SAMPLE_RATE = 0.05


@dataclass(frozen=True)
class ReviewConfig:
    """The knobs of the routing rules; recorded in the queue so it can be reproduced."""

    sample_rate: float = DEFAULT_SAMPLE_RATE
    seed: int = 0
    score_high: float = 0.8
    score_low: float = 0.5
    low_confidence: float = 0.5

    def __post_init__(self) -> None:
        if not 0.0 <= self.sample_rate <= 1.0:
            raise ValueError(f"sample rate must be between 0 and 1 ({self.sample_rate})")


def _disagreement(r: TrialResult, config: ReviewConfig) -> str | None:
    """Why the checks of a trial disagree with each other or with its verdict, or None."""
    by_kind: dict[str, list[bool]] = defaultdict(list)
    for c in r.checks:
        by_kind[c.kind].append(c.passed)
    answer, outcome = by_kind.get("answer"), by_kind.get("outcome")
    if answer and outcome:
        if all(answer) and not all(outcome):
            return "answer checks pass but an outcome check fails"
        if all(outcome) and not all(answer):
            return "outcome checks pass but an answer check fails"
    if r.status == "failed" and r.score >= config.score_high:
        return f"failed with partial score {r.score:.2f}"
    if r.passed and r.score < config.score_low:
        return f"passed with partial score {r.score:.2f}"
    return None


def _judge_reasons(r: TrialResult, config: ReviewConfig) -> dict[str, str]:
    """Judge verdicts a person should confirm (docs/architecture.md, Judges)."""
    found: dict[str, str] = {}
    judged = [c for c in r.checks if c.kind == "judge" and "members" in c.evidence]
    others = [c for c in r.checks if c.kind in GATING_KINDS]
    code_passes = all(c.passed for c in others)
    for c in judged:
        if others and c.passed != code_passes:
            verdicts = ("passes", "fail") if c.passed else ("fails", "all pass")
            found["judge_disagreement"] = (
                f"{c.name} {verdicts[0]} while the deterministic checks {verdicts[1]}"
            )
        if not c.evidence.get("unanimous", True):
            votes = ", ".join(
                f"{m['judge']}: {'pass' if m['passed'] else 'fail'}" for m in c.evidence["members"]
            )
            found["judges_split"] = f"{c.name}: {votes}"
        confidence = c.evidence.get("confidence")
        if isinstance(confidence, int | float) and confidence < config.low_confidence:
            found["judge_unsure"] = f"{c.name}: confidence {confidence:.2f}"
    return found


def _rule_reasons(r: TrialResult, config: ReviewConfig) -> dict[str, str]:
    """The rules one trial meets on its own, with a one-line detail each."""
    if not r.valid:
        return {}
    found: dict[str, str] = {}
    violations = [c for c in r.checks if c.is_violation]
    if violations:
        found["safety"] = ", ".join(f"{c.name} ({c.severity})" for c in violations)
    ordering = [c.name for c in r.failed_checks if c.name.startswith(ORDERING_PREFIXES)]
    if ordering:
        found["ordering"] = ", ".join(ordering)
    why = _disagreement(r, config)
    if why:
        found["grader_disagreement"] = why
    found.update(_judge_reasons(r, config))
    if r.status in ("failed", "timeout"):
        blocking = ", ".join(c.name for c in r.failed_checks if c.blocks)
        found["failed"] = blocking or r.error or r.status
    return found


def _flipped(run: RunData, baseline: RunData) -> dict[str, str]:
    """Tasks whose majority verdict changed: task id -> `improved 1/5 -> 4/5` etc."""
    pairing = Pairing(baseline, run)
    groups = pairing.verdicts(pairing.tasks)["groups"]
    return {
        row["id"]: f"{group} {row['baseline']} -> {row['candidate']} trials passed"
        for group in ("improved", "regressed")
        for row in groups[group]
    }


def review_queue(
    run: RunData, baseline: RunData | None = None, config: ReviewConfig | None = None
) -> dict[str, Any]:
    """The routed trials of `run` as a JSON-ready dict (what `proctor review-queue` prints).

    Raises `proctor.decide.compare.CompareError` when `baseline` shares no comparable task.
    """
    config = config or ReviewConfig()
    rng = random.Random(config.seed)
    infos = run.task_infos()
    flipped = _flipped(run, baseline) if baseline is not None else {}
    results = sorted(run.results, key=lambda r: (r.task_id, r.trial))
    routed: dict[tuple[str, int], dict[str, str]] = {}
    for r in results:
        reasons = _rule_reasons(r, config)
        if r.task_id in flipped and r.valid:
            reasons["verdict_flipped"] = flipped[r.task_id]
        if reasons:
            routed[(r.task_id, r.trial)] = reasons
    high_risk = {t for t, info in infos.items() if info.risk == "high"}
    for task_id in sorted(high_risk):
        keys = [(r.task_id, r.trial) for r in results if r.task_id == task_id and r.valid]
        if keys and not any(key in routed for key in keys):
            routed[rng.choice(keys)] = {}
    for key, reasons in routed.items():
        if key[0] in high_risk:
            reasons["high_risk"] = "task risk: high"
    rest = [(r.task_id, r.trial) for r in results if (r.task_id, r.trial) not in routed]
    picks = min(len(rest), math.ceil(config.sample_rate * len(rest)))
    for key in rng.sample(rest, picks):
        routed[key] = {"sample": f"seeded {config.sample_rate:.0%} sample (seed {config.seed})"}

    by_key = {(r.task_id, r.trial): r for r in results}
    items: list[dict[str, Any]] = []
    for key, reasons in routed.items():
        r = by_key[key]
        ordered = [name for name in REASONS if name in reasons]
        items.append(
            {
                "task_id": r.task_id,
                "trial": r.trial,
                "status": r.status,
                "score": r.score,
                "risk": infos[r.task_id].risk if r.task_id in infos else None,
                "trace_id": r.trace_id,
                "reasons": ordered,
                "details": {name: reasons[name] for name in ordered},
            }
        )
    items.sort(key=lambda i: (REASONS.index(i["reasons"][0]), i["task_id"], i["trial"]))
    counts = Counter(name for i in items for name in i["reasons"])
    return {
        "run_id": run.run_id,
        "baseline_id": baseline.run_id if baseline is not None else None,
        "config": asdict(config),
        "trials": len(results),
        "queued": len(items),
        "counts": {name: counts[name] for name in REASONS if counts[name]},
        "items": items,
    }
