"""Review queue: which trials a person should read, and why.

Graders are deterministic rules; a committee still wants a human to look at the trials
where the rules matter most or might be wrong. A trial is routed for each rule it meets:

- `reader_undecided`: a text reader could not tell on a check (docs/architecture.md,
  Reading); its trial is `needs_review` when the check decides.
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
- `high_risk`: the task has `risk: high`.
- `slice_drift`: with a baseline, the task is in a slice (tag, suite, risk, split) whose
  success rate moved by `drift` or more (the mean over the slice's paired tasks of the
  per-task difference): a shift in one slice is where a new failure cluster shows.
- `grader_changed`: with a baseline, a grader is new or has another version (or the judge
  model changed), and the trial has checks of that grader's kind (`judge` for the judge;
  every trial when no check has a grader's name as its kind): a changed grader is not
  trusted until people have read what it decided.

The last three cover tasks: the reason is added to every routed trial it concerns, and a
task none of whose concerned trials is routed otherwise gets one of them picked (seeded),
so each such task is looked at at least once.
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

from proctor.core.results import GATING_KINDS, UNDECIDED, TrialResult
from proctor.core.runs import RunData
from proctor.decide.compare import SUCCESS, Pairing, paired_metric

REASONS = (
    "reader_undecided",
    "safety",
    "verdict_flipped",
    "ordering",
    "grader_disagreement",
    "judge_disagreement",
    "judges_split",
    "judge_unsure",
    "failed",
    "high_risk",
    "slice_drift",
    "grader_changed",
    "sample",
)
ORDERING_PREFIXES = ("order:", "confirm_before:")
DEFAULT_SAMPLE_RATE = 0.05
DEFAULT_DRIFT = 0.10
Key = tuple[str, int]


@dataclass(frozen=True)
class ReviewConfig:
    """The knobs of the routing rules; recorded in the queue so it can be reproduced."""

    sample_rate: float = DEFAULT_SAMPLE_RATE
    seed: int = 0
    score_high: float = 0.8
    score_low: float = 0.5
    low_confidence: float = 0.5
    drift: float = DEFAULT_DRIFT

    def __post_init__(self) -> None:
        if not 0.0 <= self.sample_rate <= 1.0:
            raise ValueError(f"sample rate must be between 0 and 1 ({self.sample_rate})")
        if not 0.0 < self.drift <= 1.0:
            raise ValueError(f"drift must be above 0 and at most 1 ({self.drift})")


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
    if r.status in ("partial", "failed") and r.score >= config.score_high:
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
    """The rules one trial meets on its own, with a one-line detail each. A trial whose
    text reader could not tell is queued (`reader_undecided`) whatever its status."""
    found: dict[str, str] = {}
    unread = [c for c in r.checks if c.undecided]
    if unread:
        found["reader_undecided"] = ", ".join(
            f"{c.name}: {c.evidence.get(UNDECIDED)}" for c in unread[:3]
        )
    if not r.valid:
        return found
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
    if r.status in ("partial", "failed", "timeout"):
        blocking = ", ".join(c.name for c in r.failed_checks if c.blocks)
        found["failed"] = blocking or r.error or r.status
    return found


def _flipped(pairing: Pairing) -> dict[str, str]:
    """Tasks whose majority verdict changed: task id -> `improved 1/5 -> 4/5` etc."""
    groups = pairing.verdicts(pairing.tasks)["groups"]
    return {
        row["id"]: f"{group} {row['baseline']} -> {row['candidate']} trials passed"
        for group in ("improved", "regressed")
        for row in groups[group]
    }


def _drifted(pairing: Pairing, drift: float) -> dict[str, str]:
    """Tasks in a slice whose success moved by `drift` or more: task id -> the slices."""
    success = paired_metric(SUCCESS)
    assert success is not None
    moved: dict[str, list[str]] = defaultdict(list)
    for key in sorted({key for t in pairing.tasks for key in pairing.infos[t].slices()}):
        tasks = [t for t in pairing.tasks if key in pairing.infos[t].slices()]
        pairs = [
            (success.per_task(pairing.base_trials[t]), success.per_task(pairing.cand_trials[t]))
            for t in tasks
        ]
        base = [b for b, _ in pairs if b is not None]
        cand = [c for _, c in pairs if c is not None]
        if not base or not cand:
            continue
        b, c = sum(base) / len(base), sum(cand) / len(cand)
        if abs(c - b) >= drift:
            for t in tasks:
                moved[t].append(f"{key} {b:.0%} -> {c:.0%}")
    return {t: "; ".join(found) for t, found in moved.items()}


def _changed_graders(run: RunData, baseline: RunData) -> dict[str, str]:
    """Check kind -> what changed, for graders new since the baseline or of another
    version, and for a changed judge model (kind `judge`)."""
    old, new = baseline.manifest.grader_versions, run.manifest.grader_versions
    out = {
        name: f"grader {name}: version {old[name]} -> {v}" if name in old else f"new grader {name}"
        for name, v in sorted(new.items())
        if old.get(name) != v
    }
    judges = baseline.manifest.judge_model, run.manifest.judge_model
    if judges[1] and judges[0] != judges[1]:
        out["judge"] = f"judge {judges[0] or 'none'} -> {judges[1]}"
    return out


def _grader_cover(results: list[TrialResult], changed: dict[str, str]) -> dict[Key, str]:
    """The trials a changed grader decided, with what changed."""
    kinds = {c.kind for r in results for c in r.checks}
    out: dict[Key, list[str]] = defaultdict(list)
    for name, detail in changed.items():
        for r in results:
            if r.valid and (name not in kinds or any(c.kind == name for c in r.checks)):
                out[(r.task_id, r.trial)].append(detail)
    return {key: "; ".join(found) for key, found in out.items()}


def _cover(
    routed: dict[Key, dict[str, str]], rng: random.Random, reason: str, trials: dict[Key, str]
) -> None:
    """Route `trials` (key -> detail) for `reason`: the reason goes to each one routed
    already, and a task none of whose `trials` is routed gets one of them picked."""
    by_task: dict[str, list[Key]] = defaultdict(list)
    for key in sorted(trials):
        by_task[key[0]].append(key)
    for keys in by_task.values():
        if not any(key in routed for key in keys):
            routed[rng.choice(keys)] = {}
    for key, reasons in routed.items():
        if key in trials:
            reasons[reason] = trials[key]


def review_queue(
    run: RunData, baseline: RunData | None = None, config: ReviewConfig | None = None
) -> dict[str, Any]:
    """The routed trials of `run` as a JSON-ready dict (what `proctor review-queue` prints).

    Raises `proctor.decide.compare.CompareError` when `baseline` shares no comparable task.
    """
    config = config or ReviewConfig()
    rng = random.Random(config.seed)
    infos = run.task_infos()
    pairing = Pairing(baseline, run) if baseline is not None else None
    flipped = _flipped(pairing) if pairing is not None else {}
    results = sorted(run.results, key=lambda r: (r.task_id, r.trial))
    routed: dict[Key, dict[str, str]] = {}
    for r in results:
        reasons = _rule_reasons(r, config)
        if r.task_id in flipped and r.valid:
            reasons["verdict_flipped"] = flipped[r.task_id]
        if reasons:
            routed[(r.task_id, r.trial)] = reasons
    valid = [(r.task_id, r.trial) for r in results if r.valid]
    high_risk = {t for t, info in infos.items() if info.risk == "high"}
    _cover(routed, rng, "high_risk", {k: "task risk: high" for k in valid if k[0] in high_risk})
    if baseline is not None and pairing is not None:
        drifted = _drifted(pairing, config.drift)
        _cover(routed, rng, "slice_drift", {k: drifted[k[0]] for k in valid if k[0] in drifted})
        changed = _changed_graders(run, baseline)
        _cover(routed, rng, "grader_changed", _grader_cover(results, changed))
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
