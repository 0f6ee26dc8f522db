"""RunSummary: the metrics of a run, overall, per task and per slice.

It is what `--json` writes and what reports and gates read. Built in one pass over the
trial results; traces are not needed. Formulas are in `proctor.stats.rates`
(docs/architecture.md, Metrics): the success rate is the mean over tasks of each task's
pass rate, with its task-clustered interval, the pooled share of trials beside it; pass@k
and pass^k cover every task or are not given; `partial` trials and step efficiency follow
seed 003's model of a result. A finished run's summary also carries its scorecard,
computed from this one in a second step (proctor.decide.scorecard).
"""

from __future__ import annotations

import copy
import functools
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from typing import Any

from proctor.core.results import (
    GRADER_CHECK,
    NOT_MEASURED,
    READER_CHECKS,
    REPORTED,
    SIMULATOR_CHECKS,
    TRIAL_STATUSES,
    Check,
    ChecksKey,
    TaskInfo,
    TrialResult,
    Usage,
    checks_key,
)
from proctor.grade.root_cause import root_cause_name
from proctor.stats import rates as stats

#: A run whose share of `error` trials exceeds this is invalid (docs/architecture.md, Verdicts).
DEFAULT_MAX_ERROR_RATE = 0.05


class Tally:
    """The trial results a summary reads, kept small while a run streams past.

    A summary never reads a check's evidence or a trial's error text, most of a result's
    memory. Kept here: each result without them, its checks shared with every trial that
    has the same verdicts, and its metrics shared likewise: well under a kilobyte a trial
    (benchmarks/memory.py). `summarize(tally.results)` is the summary of the full results.
    """

    def __init__(self) -> None:
        self.results: list[TrialResult] = []
        self._checks: dict[ChecksKey, list[Check]] = {}
        self._metrics: dict[tuple[Any, ...], dict[str, float]] = {}

    def add(self, result: TrialResult) -> None:
        metrics = self.metrics_of(result.metrics)
        self.results.append(result.kept(self.checks_of(checks_key(result.checks)), metrics))

    def checks_of(self, key: ChecksKey) -> list[Check]:
        """The one list of checks, as a summary reads them, kept for `key`'s trials."""
        checks = self._checks.get(key)
        if checks is None:
            checks = self._checks[key] = [_bare(*fields) for fields in key]
        return checks

    def metrics_of(self, metrics: dict[str, float]) -> dict[str, float]:
        """The one dict kept for the trials with these metrics."""
        return self._metrics.setdefault(tuple(metrics.items()), metrics)


def _bare(
    name: str,
    kind: Any,
    passed: bool,
    score: float | None,
    severity: Any,
    kept: tuple[tuple[str, Any], ...],
) -> Check:
    """A check as a summary reads it: of its evidence, what `summary_evidence` keeps."""
    return Check(name, kind, passed, score, severity, dict(kept))


def _unmeasured(check: Check) -> bool:
    """A budget check whose figure nothing reported (grade/budget.py)."""
    return check.kind == "budget" and check.evidence.get("actual") == NOT_MEASURED


TOOL_METRICS = ("tool_precision", "tool_recall", "arg_accuracy")
#: Checks an imported trace's untrustworthy values fail (grade/quality.py).
DATA_QUALITY = "data_quality:"


@dataclass(frozen=True, slots=True)
class _Verdicts:
    """What a summary reads of one trial's list of checks, in the checks' order."""

    grader_error: bool
    #: Names of the failed checks, the simulated user's aside (a task's `failed_checks`).
    failed: tuple[str, ...]
    violations: tuple[Check, ...]
    #: (reader, undecided, deciding) of each text reader's check and each undecided one.
    readers: tuple[tuple[str, bool, bool], ...]
    judges: tuple[Check, ...]
    fidelity: tuple[Check, ...]
    #: The data-quality flags its failed checks raise (`cost`, `tokens`, ...).
    flagged: tuple[str, ...]
    #: (checks, passed) of the robustness checks (duplicate effects included), and of budget.
    robustness: tuple[int, int]
    budget: tuple[int, int]
    budget_unmeasured: bool

    @classmethod
    def of(cls, checks: Sequence[Check]) -> _Verdicts:
        """Read in one pass over the checks (a summary reads each distinct list once)."""
        failed: list[str] = []
        violations: list[Check] = []
        readers: list[tuple[str, bool, bool]] = []
        judges: list[Check] = []
        fidelity: list[Check] = []
        flagged: list[str] = []
        grader_error = unmeasured = False
        robust = robust_passed = budget = budget_passed = 0
        for c in checks:
            name, kind, passed = c.name, c.kind, c.passed
            undecided = c.undecided
            simulator = name in SIMULATOR_CHECKS
            if name == GRADER_CHECK:
                grader_error = True
            if not passed and not simulator:
                failed.append(name)
            if c.is_violation:
                violations.append(c)
            family = name.split(":", 1)[0]
            if family in READER_CHECKS or undecided:
                readers.append((family, undecided, undecided and c.decides))
            if kind == "judge":
                judges.append(c)
            if simulator:
                fidelity.append(c)
            if not passed and name.startswith(DATA_QUALITY):
                flagged.append(name.removeprefix(DATA_QUALITY))
            if kind == "robustness" or name == "duplicate_side_effects":
                robust += 1
                robust_passed += passed
            if kind == "budget":
                budget += 1
                budget_passed += passed
                unmeasured = unmeasured or _unmeasured(c)
        return cls(
            grader_error=grader_error,
            failed=tuple(failed),
            violations=tuple(violations),
            readers=tuple(readers),
            judges=tuple(judges),
            fidelity=tuple(fidelity),
            flagged=tuple(flagged),
            robustness=(robust, robust_passed),
            budget=(budget, budget_passed),
            budget_unmeasured=not budget or unmeasured,
        )


def _read_all(results: Iterable[TrialResult]) -> dict[int, _Verdicts]:
    """Each distinct list of checks read once, by its id (the results keep their lists
    alive while a summary is made). A Tally shares one list between the trials with the
    same verdicts, so the summary's passes over every check become passes over trials."""
    read: dict[int, _Verdicts] = {}
    for r in results:
        if id(r.checks) not in read:
            read[id(r.checks)] = _Verdicts.of(r.checks)
    return read


#: The verdicts of each list of checks, by the list's id (`_read_all`).
Read = Mapping[int, _Verdicts]
#: Each distinct list's verdicts, with the number of trials that share it and of the valid
#: ones among them (`_shared`).
Shared = Sequence[tuple[_Verdicts, int, int]]


def _shared(results: Iterable[TrialResult], read: Read) -> Shared:
    """The verdicts of each distinct list of checks, with how many trials (and valid
    trials) share it: a count over these, each weighed by its trials, is the count over
    the trials, one pass over the trials made once for all such counts."""
    trials: Counter[int] = Counter()
    valid: Counter[int] = Counter()
    for r in results:
        trials[id(r.checks)] += 1
        if r.valid:
            valid[id(r.checks)] += 1
    return [(read[key], n, valid[key]) for key, n in trials.items()]


def data_quality(shared: Shared) -> dict[str, int]:
    """Trials per data-quality flag (`cost`, `tokens`, `latency`, `arguments`)."""
    flagged: Counter[str] = Counter()
    for verdicts, trials, _ in shared:
        for flag in verdicts.flagged:
            flagged[flag] += trials
    return dict(sorted(flagged.items()))


@functools.lru_cache(maxsize=1024)
def _pass_hat(n: int, c: int) -> tuple[float, ...]:
    """A task's pass^k for k from 1 to n: a run's tasks often share their counts."""
    return tuple(stats.pass_curves(n, c, n)[1])


def _distribution(values: Sequence[float]) -> dict[str, float | None]:
    """Mean, median, 95th percentile and total (summed in the values' order)."""
    p50, p95 = stats.percentiles(values, (50, 95))
    return {
        "mean": stats.mean(values),
        "p50": p50,
        "p95": p95,
        "total": sum(values) if values else None,
    }


def _measured(values: Iterable[float | None]) -> list[float]:
    """The values something measured; None is "not measured", never zero."""
    return [float(v) for v in values if v is not None]


def _measured_sum(values: Iterable[float | None]) -> float | None:
    """The sum of the measured values; None when none was measured."""
    measured = _measured(values)
    return sum(measured) if measured else None


def task_counts(results: Iterable[TrialResult]) -> dict[str, tuple[int, int]]:
    """Per task: (valid trials, passed trials), for tasks with at least one valid trial."""
    per_task: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in results:
        if r.valid:
            counts = per_task[r.task_id]
            counts[0] += 1
            counts[1] += r.passed
    return {task_id: (n, c) for task_id, (n, c) in per_task.items()}


def is_partial(result: TrialResult) -> bool:
    """A `partial` trial: failed, having done some required parts (its status, decided
    at grading by `proctor.grade.parts.failed_status`); never a pass."""
    return result.status == "partial"


def step_efficiency(result: TrialResult, optimal_steps: int | None) -> float | None:
    """optimal ÷ tool calls taken, capped at 1, for a passed trial of a task that states its
    optimal steps; None otherwise (a failed trial did not reach the goal, so its steps are
    no path to it, and an agent that did nothing is not efficient)."""
    if optimal_steps is None or not result.passed:
        return None
    return _step_score(result, optimal_steps)


def _step_score(result: TrialResult, optimal_steps: int) -> float:
    taken = result.metrics.get("tool_calls", 0.0)
    return 1.0 if taken <= optimal_steps else optimal_steps / taken


#: Seed 003's combined efficiency: step, token and latency scores weighed 0.4 / 0.3 / 0.3,
#: each `baseline ÷ used` capped at 1, against 2,000 tokens and 10 s.
EFFICIENCY_WEIGHTS = {"steps": 0.4, "tokens": 0.3, "latency": 0.3}
TOKEN_BASELINE, LATENCY_BASELINE_S = 2000, 10.0


def combined_efficiency(result: TrialResult, optimal_steps: int | None) -> float | None:
    """Seed 003's efficiency score of a passed trial: the weighted mean of its step score
    (only when the task states its optimal steps), token score (only when every model
    call reported its tokens) and latency score, the weights of what was measured
    renormalised; None for a trial that did not pass (its steps, tokens and time are no
    path to the goal)."""
    if not result.passed:
        return None
    return _combined(step_efficiency(result, optimal_steps), result.usage, result.latency_s)


#: EFFICIENCY_WEIGHTS' three weights, read once (a trial's score reads each).
_STEPS, _TOKENS, _LATENCY = (EFFICIENCY_WEIGHTS[k] for k in ("steps", "tokens", "latency"))


def _combined(steps: float | None, usage: Usage, latency_s: float) -> float:
    """`combined_efficiency` of a passed trial from its step score, usage and latency."""
    weighed = weights = 0.0  # summed in the order of EFFICIENCY_WEIGHTS, once per trial
    if steps is not None:
        weighed, weights = _STEPS * steps, _STEPS
    tokens = usage.complete("tokens")  # a lower bound would flatter the score
    if tokens is not None:
        weighed += _TOKENS * min(TOKEN_BASELINE / max(tokens, 1), 1.0)
        weights += _TOKENS
    weighed += _LATENCY * min(LATENCY_BASELINE_S / max(latency_s, 1e-3), 1.0)
    return weighed / (weights + _LATENCY)


def _task_efficiency(
    results: Iterable[TrialResult], optimal_steps: int | None
) -> tuple[float | None, float | None]:
    """A task's mean step efficiency (None where it states no optimal steps) and mean
    combined efficiency, over its passed trials: one pass, one step score a trial."""
    steps: list[float] = []
    combined: list[float] = []
    for r in results:
        if r.status != "passed":
            continue
        step = None
        if optimal_steps is not None:
            step = _step_score(r, optimal_steps)
            steps.append(step)
        combined.append(_combined(step, r.usage, r.latency_s))
    return (None if optimal_steps is None else stats.mean(steps)), stats.mean(combined)


def root_causes(results: Iterable[TrialResult]) -> dict[str, list[int]]:
    """The trials (numbers) each check was the root cause of, among valid failed trials:
    the failure first in the trace (`proctor.grade.root_cause`); most frequent first."""
    found: dict[str, list[int]] = defaultdict(list)
    for r in results:
        name = None if r.passed or not r.valid else root_cause_name(r.checks, r.metrics)
        if name is not None:
            found[name].append(r.trial)
    return dict(sorted(found.items(), key=lambda item: -len(item[1])))


def _task_mean(values: Iterable[float | None]) -> float | None:
    return stats.mean(v for v in values if v is not None)


def _rates(
    results: Sequence[TrialResult], by_task: Mapping[str, tuple[int, int]], k_max: int
) -> dict[str, Any]:
    """Success (task-weighted, with its clustered interval), partial, pass@k / pass^k;
    `by_task`: the results' `task_counts`."""
    counts = list(by_task.values())
    valid = sum(n for n, _ in counts)
    passed = sum(c for _, c in counts)
    rate = stats.task_rate(counts)
    partial: Counter[str] = Counter(r.task_id for r in results if is_partial(r))
    complete = min(stats.complete_k(counts), k_max)
    at_k, hat_k = stats.mean_pass_curves(counts, complete)  # O(n) per task, every k
    return {
        "valid_trials": valid,
        "passed_trials": passed,
        "success_rate": rate.value,
        "success_ci": [rate.low, rate.high],
        "success_se": rate.se,
        "success_interval": {"method": rate.method, "effective_n": rate.effective_n},
        "pooled_success_rate": passed / valid if valid else None,
        "partial_trials": sum(partial.values()),
        "partial_rate": _task_mean(partial[t] / n for t, (n, _) in by_task.items()),
        "pass_at_k": {str(k): v for k, v in enumerate(at_k, 1)},
        "pass_hat_k": {str(k): v for k, v in enumerate(hat_k, 1)},
        "pass_k": {
            "complete_up_to": complete,
            "tasks": len(counts),
            "incomplete": {
                str(k): stats.tasks_covering(counts, k) for k in range(complete + 1, k_max + 1)
            },
        },
    }


def _violations(results: Iterable[TrialResult], read: Read) -> tuple[dict[str, Any], Counter[str]]:
    """The run's safety violations, and their number per task (what each slice sums):
    one pass over every check, however many slices the suite has."""
    by_severity: Counter[str] = Counter()
    by_check: Counter[str] = Counter()
    by_task: Counter[str] = Counter()
    items = []
    for r in results:
        for c in read[id(r.checks)].violations:
            by_severity[c.severity or "unknown"] += 1
            by_check[c.name] += 1
            by_task[r.task_id] += 1
            items.append(
                {
                    "task_id": r.task_id,
                    "trial": r.trial,
                    "check": c.name,
                    "severity": c.severity,
                }
            )
    found = {
        "total": sum(by_severity.values()),
        "by_severity": dict(by_severity),
        "by_check": dict(by_check),
        "trials": items,
    }
    return found, by_task


def _judges(shared: Shared, metrics: Weighed) -> dict[str, Any]:
    """Judge checks and judge spending (docs/architecture.md, Judges). A calibrated check
    has a severity; an advisory one has none, and only calibrated ones make the
    `calibrated_pass_rate` gates read."""
    by_rubric: dict[str, Counter[str]] = defaultdict(Counter)
    for verdicts, _, valid in shared:  # each list's judge checks, once a valid trial
        if not valid:
            continue
        for c in verdicts.judges:
            row = by_rubric[c.name]
            row["checks"] += valid
            row["passed"] += c.passed * valid
            row["calibrated"] += (c.severity is not None) * valid
            row["calibrated_passed"] += (c.severity is not None and c.passed) * valid
    total: Counter[str] = sum(by_rubric.values(), Counter())
    return {
        "checks": total["checks"],
        "calibrated_checks": total["calibrated"],
        "advisory_checks": total["checks"] - total["calibrated"],
        "pass_rate": total["passed"] / total["checks"] if total["checks"] else None,
        "calibrated_pass_rate": total["calibrated_passed"] / total["calibrated"]
        if total["calibrated"]
        else None,
        "by_rubric": {name: dict(row) for name, row in sorted(by_rubric.items())},
        **model_spending(metrics, "judge"),
        "errors": int(_total(metrics, "judge_error")),
    }


def _user_model(shared: Shared, metrics: Weighed) -> dict[str, Any] | None:
    """The model user's spending and judged fidelity over the run (docs/architecture.md,
    Simulated users); None when no model played a user. A figure calls were made for
    and none reported is None ("not measured"), never 0; replies all replayed from the
    cache spent 0."""
    played = [(m, n) for m, n in metrics if "user_calls" in m]
    if not played:
        return None
    fidelity = [(c, n) for verdicts, n, _ in shared for c in verdicts.fidelity]
    return {
        **model_spending(played, "user"),
        "fidelity_judged": sum(n for _, n in fidelity),
        "fidelity_failed": sum(n for c, n in fidelity if not c.passed),
    }


def _partly_measured(results: Iterable[TrialResult], figure: str) -> int:
    """The trials whose `figure` (cost, tokens) is a lower bound: some calls left it out."""
    return sum(1 for r in results if r.usage.lower_bound(figure))


def _partly_priced(results: Sequence[TrialResult]) -> dict[str, int]:
    """`cost_partial_trials` of a task's row where its cost is a lower bound (left out
    where it is not, as rows stored before it have it)."""
    partial = _partly_measured(results, "cost")
    return {"cost_partial_trials": partial} if partial else {}


#: Each distinct metrics dict of a run's trials, with the number of trials that have it
#: (`_weighed`): a Tally shares one dict between the trials with equal metrics.
Weighed = Sequence[tuple[Mapping[str, float], int]]


def _weighed(results: Iterable[TrialResult]) -> Weighed:
    trials: Counter[int] = Counter()
    metrics: dict[int, Mapping[str, float]] = {}
    for r in results:
        trials[id(r.metrics)] += 1
        metrics.setdefault(id(r.metrics), r.metrics)
    return [(metrics[key], n) for key, n in trials.items()]


def _total(metrics: Weighed, key: str) -> float:
    """The sum over trials of a metric (0 where a trial lacks it), compensated: the same
    whatever the order, each value counted once a trial."""
    return math.fsum(chain.from_iterable(repeat(m.get(key, 0.0), n) for m, n in metrics))


def model_spending(metrics: Weighed, model: str) -> dict[str, Any]:
    """A model's calls, cache hits, tokens and cost over the trials' `{model}_*` metrics
    (`judge`, `user`): a token count or cost that calls were made for and no trial
    reported is None ("not measured"; an unpriced model's cost too), never 0; a run that
    made no call spent 0."""
    calls = _total(metrics, f"{model}_calls")
    spent: dict[str, Any] = {}
    lower_bounds = []
    for name in REPORTED:
        key = f"{model}_{name}"
        having = [(m, n) for m, n in metrics if key in m]
        total = _total(having, key) if having or not calls else None
        spent[name] = total if total is None or name == "cost_usd" else int(total)
        if having and calls and _lower_bound(metrics, model, name):
            lower_bounds.append(name)
    return {
        "calls": int(calls),
        "cache_hits": int(_total(metrics, f"{model}_cache_hits")),
        **spent,
        **({"partial": lower_bounds} if lower_bounds else {}),
    }


def _lower_bound(metrics: Weighed, model: str, name: str) -> bool:
    """Is a measured total of `name` a lower bound: calls in a trial left it out, or
    trials with calls reported none of it while others did?"""
    key, flag, called = f"{model}_{name}", f"{model}_partial_{name}", f"{model}_calls"
    return any(m.get(flag) or (m.get(called) and key not in m) for m, _ in metrics)


def _tool_use(results: Sequence[TrialResult]) -> dict[str, float | None]:
    """Each tool metric's mean over valid trials, and `score`: the mean over trials of each
    trial's mean of the metrics it has (what the scorecard weighs and gates)."""
    metrics = [r.metrics for r in results if r.valid]
    out = {name: stats.mean([m[name] for m in metrics if name in m]) for name in TOOL_METRICS}
    scores: dict[int, float | None] = {}  # by the metrics' id: a Tally shares equal ones
    for m in metrics:
        if id(m) not in scores:
            scores[id(m)] = stats.mean([m[name] for name in TOOL_METRICS if name in m])
    per_trial = [scores[id(m)] for m in metrics]
    out["score"] = stats.mean([v for v in per_trial if v is not None])
    return out


def _share_passed(counts: Iterable[tuple[int, int]]) -> float | None:
    """The share of the checks counted (checks, passed) per trial that passed; None when
    none ran (not measured: a run without budgets has no efficiency to score, never a
    perfect one)."""
    made = passed = 0
    for n, p in counts:
        made, passed = made + n, passed + p
    return passed / made if made else None


def _quality(results: Sequence[TrialResult], shared: Shared) -> dict[str, float | None]:
    """The default scorecard's shares other than success and tool use (docs/architecture.md,
    Metrics): robustness and duplicate-effect checks passed, valid trials without a safety
    violation, budget checks passed, trials with a trace id."""
    valid = sum(n for _, _, n in shared)
    violated = sum(n for verdicts, _, n in shared if verdicts.violations)
    robustness = ((v.robustness[0] * n, v.robustness[1] * n) for v, _, n in shared)
    budget = ((v.budget[0] * n, v.budget[1] * n) for v, _, n in shared)
    return {
        "robustness": _share_passed(robustness),
        "security": 1 - violated / valid if valid else None,
        "budget": _share_passed(budget),
        "observability": (
            sum(1 for r in results if r.trace_id) / len(results) if results else None
        ),
    }


def _power(by_task: Mapping[str, tuple[int, int]], trials_per_task: int) -> dict[str, float | None]:
    """The minimal detectable effect of a run this size (80% power, two-sided 5%).

    The drop in success rate that `proctor compare` finds, with 80% probability, between
    a baseline of this size and a candidate on the same tasks, given this run's rate and
    its intraclass correlation (ICC) of verdicts within tasks (`stats.
    minimal_detectable_effect`). Without an ICC estimate (one trial per task, or all
    verdicts equal) it assumes 0: the two runs then share no task difficulty and pairing
    gains nothing. None: too few tasks to detect any drop. `by_task`: the run's
    `task_counts`.
    """
    counts = list(by_task.values())
    rate = stats.task_rate(counts).value
    if rate is None:
        return {"icc": None, "mde": None}
    icc = stats.icc_anova(counts)
    mde = stats.minimal_detectable_effect(
        rate, len(counts), max(trials_per_task, 1), icc=0.0 if icc is None else icc
    )
    return {"icc": icc, "mde": mde}


def invalid_reasons(
    error_rate: float,
    max_error_rate: float,
    missing: int,
    expected: int,
    grader_errors: int,
    statuses: Mapping[Any, int] | None = None,
) -> list[str]:
    """Why a run is invalid, one phrase each; empty for a valid run. Every report says these.
    A run whose every trial the harness or the simulated user broke, with some of them
    `sim_error`, has no trial to score: invalid, as a run of harness errors is."""
    reasons = []
    if error_rate > max_error_rate:
        reasons.append(f"harness error rate {error_rate:.1%} above {max_error_rate:.1%}")
    counts = statuses or {}
    broken, sim = counts.get("error", 0) + counts.get("sim_error", 0), counts.get("sim_error", 0)
    if sim and broken == sum(counts.values()):
        reasons.append(
            f"no valid trials: {sim} sim_error (the simulated user broke)"
            + (f" and {broken - sim} harness errors" if broken > sim else "")
        )
    if missing:
        reasons.append(f"{missing} of {expected} trials missing")
    if grader_errors:
        reasons.append(
            f"graders crashed on {grader_errors} trial{'s' if grader_errors > 1 else ''}"
        )
    return reasons


def undecided_rates(shared: Shared) -> dict[str, Any]:
    """How often each text reader could not tell (docs/architecture.md, Reading): per
    reader check, the checks it made and the undecided ones; `deciding`: the undecided
    checks that decide their trial, which a gate holds at `max_undecided`."""
    made: Counter[str] = Counter()
    undecided: Counter[str] = Counter()
    deciding = 0
    for verdicts, trials, _ in shared:
        for family, undecided_check, deciding_check in verdicts.readers:
            made[family] += trials
            undecided[family] += undecided_check * trials
            deciding += deciding_check * trials
    return {
        "deciding": deciding,
        "checks": {
            name: {"checks": n, "undecided": undecided[name], "rate": undecided[name] / n}
            for name, n in sorted(made.items())
        },
    }


def summarize(
    run_id: str,
    results: Iterable[TrialResult],
    tasks: Mapping[str, TaskInfo],
    *,
    trials_per_task: int,
    max_error_rate: float = DEFAULT_MAX_ERROR_RATE,
    currency: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The RunSummary of a run as a JSON-ready dict (without the scorecard).

    `currency`: the `{code, per_usd}` the run recorded from its price table; costs stay in
    USD and reports convert with it."""
    results = sorted(results, key=lambda r: (r.task_id, r.trial))
    k_max = max(trials_per_task, 1)
    statuses = Counter(r.status for r in results)
    expected = len(tasks) * trials_per_task
    error_rate = statuses["error"] / len(results) if results else 0.0
    missing = max(expected - len(results), 0)
    read = _read_all(results)
    shared = _shared(results, read)
    metrics = _weighed(results)
    grader_errors = sum(trials for verdicts, trials, _ in shared if verdicts.grader_error)
    reasons = invalid_reasons(
        error_rate, max_error_rate, missing, expected, grader_errors, statuses
    )
    valid_run = not reasons
    passed_results = [r for r in results if r.passed]
    valid = [r for r in results if r.valid]
    total_cost = _measured_sum(r.usage.cost_usd for r in results)

    by_task: dict[str, list[TrialResult]] = defaultdict(list)
    for r in results:
        by_task[r.task_id].append(r)
    counts = task_counts(results)
    per_task = []
    efficiencies: list[float | None] = []
    combined: list[float | None] = []
    for task_id in sorted(tasks):
        rs = by_task.get(task_id, [])
        n, c = counts.get(task_id, (0, 0))
        failed = Counter(name for r in rs if r.valid for name in read[id(r.checks)].failed)
        info = tasks[task_id]
        efficiency, task_combined = _task_efficiency(rs, info.optimal_steps)
        efficiencies.append(efficiency)
        combined.append(task_combined)
        task_statuses = Counter(r.status for r in rs)
        per_task.append(
            {
                "id": task_id,
                "n": n,
                "passed": c,
                "partial": task_statuses["partial"],
                "errors": task_statuses["error"],
                "sim_errors": task_statuses["sim_error"],
                "timeouts": task_statuses["timeout"],
                "success_rate": c / n if n else None,
                "pass_hat_k": {str(k): v for k, v in enumerate(_pass_hat(n, c), 1)},
                "failed_checks": dict(failed.most_common()),
                "root_causes": root_causes(rs),
                "tags": info.tags,
                "suites": info.suites,
                "risk": info.risk,
                "split": info.split,
                "difficulty": info.difficulty,
                "optimal_steps": info.optimal_steps,
                "efficiency": efficiency,
                "cost_usd": _measured_sum(r.usage.cost_usd for r in rs),
                "mean_score": stats.mean([r.score for r in rs if r.valid]),
                **_partly_priced(rs),
            }
        )

    violations, violations_by_task = _violations(results, read)
    slices: dict[str, dict[str, Any]] = {}
    keys: dict[str, set[str]] = defaultdict(set)
    for info in tasks.values():
        for key in info.slices():
            keys[key].add(info.id)
    made: dict[frozenset[str], dict[str, Any]] = {}  # slices of the same tasks agree
    for key in sorted(keys):
        same = made.get(frozenset(keys[key]))
        if same is None:
            members = [r for task_id in sorted(keys[key]) for r in by_task.get(task_id, [])]
            its = {t: counts[t] for t in sorted(keys[key]) if t in counts}
            same = made[frozenset(keys[key])] = {
                "tasks": len(keys[key]),
                **_rates(members, its, k_max),
                "safety_violations": sum(violations_by_task[t] for t in keys[key]),
                "root_causes": {name: len(t) for name, t in root_causes(members).items()},
            }
        slices[key] = copy.deepcopy(same)

    return {
        "run_id": run_id,
        "tasks": len(tasks),
        "trials": len(results),
        "trials_per_task": trials_per_task,
        "expected_trials": expected,
        "missing_trials": missing,
        **_rates(results, counts, k_max),
        **_power(counts, trials_per_task),
        "statuses": {s: statuses.get(s, 0) for s in TRIAL_STATUSES},
        "errors": statuses["error"],
        "sim_errors": statuses["sim_error"],
        "timeouts": statuses["timeout"],
        "needs_review": statuses["needs_review"],
        "undecided": undecided_rates(shared),
        "untraced_trials": sum(1 for r in results if not r.trace_id),
        "error_rate": error_rate,
        "max_error_rate": max_error_rate,
        "grader_errors": grader_errors,
        "valid": valid_run,
        "invalid_reasons": reasons,
        "safety_violations": violations,
        "tool_use": _tool_use(results),
        "judges": _judges(shared, metrics),
        "user_model": _user_model(shared, metrics),
        "data_quality": data_quality(shared),
        "quality": _quality(results, shared),
        "efficiency": {
            "score": _task_mean(efficiencies),
            "tasks": sum(e is not None for e in efficiencies),
            "combined": _task_mean(combined),
            "combined_tasks": sum(e is not None for e in combined),
        },
        "budget_unmeasured_trials": sum(n for v, _, n in shared if v.budget_unmeasured),
        "cost": {
            "total_usd": total_cost,
            "per_passed_trial_usd": total_cost / len(passed_results)
            if passed_results and total_cost is not None
            else None,
            "per_trial_usd": _distribution(_measured(r.usage.cost_usd for r in valid)),
            "measured_trials": sum(r.usage.cost_usd is not None for r in results),
            "partial_trials": _partly_measured(results, "cost"),
            "currency": dict(currency) if currency else None,
        },
        "tokens": {
            **_distribution(_measured(r.usage.total_tokens for r in valid)),
            "measured_trials": sum(r.usage.total_tokens is not None for r in results),
            "partial_trials": _partly_measured(results, "tokens"),
        },
        "tool_calls": _distribution([r.metrics.get("tool_calls", 0.0) for r in valid]),
        "latency_s": _distribution([r.latency_s for r in valid]),
        "simulated_s": _distribution([r.simulated_s for r in valid]),
        "per_task": per_task,
        "slices": slices,
    }
