"""Statistics of one run: pass@k, pass^k, the success rate and its interval, power.

Agents are stochastic, so a single trial per task says little. These are the formulas of
docs/architecture.md (Metrics): the unbiased pass@k estimator (Chen et al. 2021),
tau-bench's pass^k, Wilson score intervals, and the task-clustered interval of the success
rate: trials of one task share its difficulty, so they are not independent, and an
interval that counts them as such claims a precision the run does not have.

Only the standard library is used: the module is imported by the CLI and reports, must
load in a few milliseconds, and must give the same answers wherever it runs. Paired
statistics of two runs are `proctor.stats.paired`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from proctor.stats.distributions import beta_quantile, normal_quantile, t_quantile

__all__ = [
    "MIN_TASKS",
    "RateInterval",
    "bounded_mean_interval",
    "clopper_pearson",
    "complete_k",
    "design_effect",
    "icc_anova",
    "mean",
    "mean_over_tasks",
    "mean_pass_curves",
    "minimal_detectable_effect",
    "pass_at_k",
    "pass_at_k_tasks",
    "pass_curves",
    "pass_hat_k",
    "pass_hat_k_tasks",
    "percentile",
    "percentiles",
    "score_interval",
    "task_rate",
    "tasks_covering",
    "tasks_needed",
    "wilson_interval",
]

#: Fewer paired tasks than this cannot show anything at 5%: McNemar's smallest p, 2/2^5.
MIN_TASKS = 6

TaskCounts = Sequence[tuple[int, int]]
"""Per-task `(n, c)` pairs: valid trials and trials passed."""


def _check_counts(n: int, c: int, k: int) -> None:
    """Reject inputs for which the combinatorial estimators are undefined."""
    if n < 0 or c < 0 or k < 0:
        raise ValueError(f"n, c and k must be non-negative (n={n}, c={c}, k={k})")
    if c > n:
        raise ValueError(f"c={c} successes exceed n={n} trials")
    if k < 1:
        raise ValueError(f"k must be at least 1 (k={k})")
    if k > n:
        raise ValueError(f"k={k} exceeds n={n} trials; pass@k needs at least k trials")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Chance that at least one of k trials drawn from n (c passing) passes.

    Unbiased estimator 1 − C(n−c, k)/C(n, k) (Chen et al. 2021). The numerator is formed in
    exact integers so the only rounding is the final division.
    """
    _check_counts(n, c, k)
    total = math.comb(n, k)
    return (total - math.comb(n - c, k)) / total


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Chance that all k trials drawn from n (c passing) pass: C(c, k)/C(n, k).

    This is tau-bench's pass^k, which measures consistency rather than best-of-k capability.
    """
    _check_counts(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def pass_curves(n: int, c: int, k_max: int) -> tuple[list[float], list[float]]:
    """pass@k and pass^k of one task for every k from 1 to `k_max` (<= n), in O(k_max).

    Each binomial ratio is a running product, one factor per k:
    C(n−c, k)/C(n, k) = Π_{i<k} (n−c−i)/(n−i) and C(c, k)/C(n, k) = Π_{i<k} (c−i)/(n−i),
    so the whole curve costs what one exact `pass_at_k` of large n costs per k. Each
    factor lies in [0, 1]: the products lose no more than k roundings (relative error
    k·2⁻⁵³; tests/test_stats.py holds them to the exact integer formulas).
    """
    if k_max < 1:
        return [], []
    _check_counts(n, c, k_max)
    fail_all = hold_all = 1.0
    at, hat = [], []
    for i in range(k_max):
        fail_all *= (n - c - i) / (n - i) if n - c > i else 0.0
        hold_all *= (c - i) / (n - i) if c > i else 0.0
        at.append(1.0 - fail_all)
        hat.append(hold_all)
    return at, hat


def mean_pass_curves(counts: TaskCounts, k_max: int) -> tuple[list[float], list[float]]:
    """Task-averaged pass@k and pass^k for k from 1 to `k_max`, which every task with a
    trial must support (k_max <= complete_k: see `mean_over_tasks`); O(tasks · k_max)."""
    tasks = _tasks(counts)
    if not tasks or k_max < 1:
        return [], []
    made: dict[tuple[int, int], tuple[list[float], list[float]]] = {}  # tasks often agree
    curves = [made.get(t) or made.setdefault(t, pass_curves(*t, k_max)) for t in tasks]

    def mean(part: int) -> list[float]:  # each k's column over the tasks, summed exactly
        columns = zip(*(curve[part] for curve in curves), strict=True)
        return [math.fsum(column) / len(tasks) for column in columns]

    return mean(0), mean(1)


def _tasks(counts: TaskCounts) -> list[tuple[int, int]]:
    """The tasks with at least one trial: a task without one has no data at any k."""
    return [(n, c) for n, c in counts if n > 0]


def complete_k(counts: TaskCounts) -> int:
    """The largest k every task (with a trial) supports: its smallest trial count.

    pass@k and pass^k are averaged over one set of tasks only up to this k; beyond it a
    task with fewer trials would leave the average, which could then rise with k.
    """
    tasks = _tasks(counts)
    return min(n for n, _ in tasks) if tasks else 0


def tasks_covering(counts: TaskCounts, k: int) -> int:
    """How many tasks have at least k trials (the coverage of an incomplete pass@k)."""
    return sum(1 for n, _ in _tasks(counts) if n >= k)


def mean_over_tasks(
    counts: TaskCounts, k: int, fn: Callable[[int, int, int], float]
) -> float | None:
    """Average `fn(n, c, k)` over the tasks, or None unless every task has k trials.

    A figure over a subset of tasks is not comparable with one over all of them (pass^5
    of the easy tasks can exceed pass^4 of all), so an incomplete k has no value here;
    `tasks_covering` says how far it got. None also without tasks: "no data" is not 0.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1 (k={k})")
    tasks = _tasks(counts)
    if not tasks or k > complete_k(tasks):
        return None
    return math.fsum(fn(n, c, k) for n, c in tasks) / len(tasks)


def pass_at_k_tasks(counts: TaskCounts, k: int) -> float | None:
    """Task-averaged pass@k; see `mean_over_tasks` for when it is defined."""
    return mean_over_tasks(counts, k, pass_at_k)


def pass_hat_k_tasks(counts: TaskCounts, k: int) -> float | None:
    """Task-averaged pass^k; see `mean_over_tasks` for when it is defined."""
    return mean_over_tasks(counts, k, pass_hat_k)


def score_interval(p: float, n: float, z: float) -> tuple[float, float]:
    """Wilson's score interval for a proportion p observed on n units, at quantile z.

    n may be fractional (an effective sample size). The interval always contains p, stays
    inside [0, 1] and keeps a width at p = 0 and p = 1, where agent runs often are.
    """
    z2 = z * z
    denom = 1.0 + z2 / n
    center = (p + z2 / (2.0 * n)) / denom
    half = z / denom * math.sqrt(max(p * (1.0 - p), 0.0) / n + z2 / (4.0 * n * n))
    # The bounds at p = 0 and p = 1 are exactly 0 and 1; pin them against rounding.
    low = 0.0 if p <= 0.0 else min(p, max(0.0, center - half))
    high = 1.0 if p >= 1.0 else max(p, min(1.0, center + half))
    return (low, high)


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1 ({confidence})")
    return normal_quantile(0.5 + confidence / 2.0)


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for `successes` of n independent trials; n == 0 gives (0, 1)."""
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n (successes={successes}, n={n})")
    z = _z(confidence)
    return (0.0, 1.0) if n == 0 else score_interval(successes / n, n, z)


class RateInterval(NamedTuple):
    """A mean over tasks of per-task values in [0, 1], with its interval.

    `effective_n` is the number of independent units the tasks are worth; `method` says
    which interval was used: `clustered` (docs/architecture.md, Metrics), `task` (a single
    task: its own trials, nothing about other tasks) or `too_few` (two tasks: [0, 1]).
    """

    value: float | None
    low: float
    high: float
    se: float | None
    tasks: int
    effective_n: float | None
    method: str


def clopper_pearson(p: float, n: float, confidence: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval for a proportion p of n units, n may be
    fractional: the Beta quantiles at x = p·n. Wider than Wilson's, never narrower than
    the binomial allows; it holds its level where few units failed."""
    alpha = 1.0 - confidence
    x = p * n
    low = 0.0 if x <= 0.0 else beta_quantile(alpha / 2.0, x, n - x + 1.0)
    high = 1.0 if x >= n else beta_quantile(1.0 - alpha / 2.0, x + 1.0, n - x)
    return (low, high)


def bounded_mean_interval(
    values: Sequence[float], units: Sequence[int], confidence: float = 0.95
) -> RateInterval:
    """Interval of the mean over tasks of per-task values in [0, 1], clustered by task.

    `values[i]` is task i's mean over its `units[i]` trials (its pass rate, say). This is
    Korn and Graubard's interval (1998) for a proportion from clustered data; the formulas
    and the coverage they reach are in docs/architecture.md (Metrics). In short: the
    variance of the mean is the spread between tasks, Var = s²/T, floored at 1/(4T(T+1));
    the effective sample size n_eff = p(1 − p)/Var is kept between T (a task's trials all
    alike) and T²/Σ(1/n_i) (trials independent); it is scaled by (z/t_{T−1})² because the
    variance came from T tasks; and the Clopper-Pearson interval on it is the answer. One
    trial per task takes the same path (n_eff = T): Wilson's interval, used there before,
    covered 89.8% at 11 tasks, rate 0.95; and an all-pass run gets the same interval
    whatever its trials per task. A single task gets the Wilson interval of its own
    trials (`task`: it says nothing about other tasks); two tasks, [0, 1] (`too_few`).
    """
    z = _z(confidence)
    tasks = len(values)
    if tasks != len(units) or any(u < 1 for u in units):
        raise ValueError("every task needs a value and at least one unit")
    if any(not 0.0 <= v <= 1.0 for v in values):
        raise ValueError("per-task values must lie in [0, 1]")
    if tasks == 0:
        return RateInterval(None, 0.0, 1.0, None, 0, None, "none")
    p = math.fsum(values) / tasks
    if tasks == 1:
        n = float(units[0])
        low, high = score_interval(p, n, z)
        return RateInterval(p, low, high, math.sqrt(p * (1.0 - p) / n), 1, n, "task")
    spread = math.fsum((v - p) ** 2 for v in values) / (tasks - 1) / tasks
    if tasks == 2:
        return RateInterval(p, 0.0, 1.0, math.sqrt(spread), 2, None, "too_few")
    var = max(spread, 1.0 / (4.0 * tasks * (tasks + 1)))
    # T times the harmonic mean of the trial counts: never above their sum (rounding aside)
    n_max = min(tasks * tasks / math.fsum(1.0 / u for u in units), float(sum(units)))
    n_eff = min(max(p * (1.0 - p) / var, float(tasks)), n_max)
    t = t_quantile(0.5 + confidence / 2.0, tasks - 1)
    low, high = clopper_pearson(p, n_eff * (z / t) ** 2, confidence)
    return RateInterval(p, low, high, math.sqrt(spread), tasks, n_eff, "clustered")


def task_rate(counts: TaskCounts, confidence: float = 0.95) -> RateInterval:
    """The success rate of a run: the mean over tasks of each task's pass rate c/n.

    Every task weighs the same whatever its trial count (the definition used everywhere:
    terminal, JSON, reports, compare, gates); tasks without a valid trial are left out.
    The interval is `bounded_mean_interval`'s.
    """
    for n, c in counts:
        if n < 0 or c < 0 or c > n:
            raise ValueError(f"need 0 <= c <= n for every task (n={n}, c={c})")
    tasks = _tasks(counts)
    return bounded_mean_interval([c / n for n, c in tasks], [n for n, _ in tasks], confidence)


def percentile(values: Iterable[float], q: float) -> float | None:
    """q-th percentile (0..100) with linear interpolation, matching numpy's default.

    This is Hyndman & Fan type 7, computed the way numpy does it so reports agree with
    numpy-based analyses to the last bit. None for empty input; NaN if any value is NaN.
    """
    return percentiles(values, (q,))[0]


def percentiles(values: Iterable[float], qs: Sequence[float]) -> list[float | None]:
    """`percentile` of the same values at each of `qs`, the values read and sorted once."""
    for q in qs:
        if not 0.0 <= q <= 100.0:
            raise ValueError(f"q must be within [0, 100] (q={q})")
    data = [float(v) for v in values]
    if not data:
        return [None for _ in qs]
    if any(map(math.isnan, data)):
        return [math.nan for _ in qs]
    data.sort()
    return [_interpolated(data, q) for q in qs]


def _interpolated(data: list[float], q: float) -> float:
    """The q-th percentile of sorted, NaN-free `data` (numpy's linear method)."""
    index = (len(data) - 1) * (q / 100.0)
    lo = math.floor(index)
    hi = min(lo + 1, len(data) - 1)
    gamma = index - lo
    a, b = data[lo], data[hi]
    diff = b - a
    if gamma >= 0.5:
        return b - diff * (1.0 - gamma)
    return a + diff * gamma


def mean(values: Iterable[float]) -> float | None:
    """Arithmetic mean (compensated summation); None for empty input, not a fake 0."""
    data = [float(v) for v in values]
    if not data:
        return None
    return math.fsum(data) / len(data)


# --- power of a task-clustered design --------------------------------------------------


def design_effect(trials: int, icc: float) -> float:
    """1 + (m − 1)·ICC: how much m correlated trials per task inflate the variance."""
    if trials < 1:
        raise ValueError(f"trials must be at least 1 ({trials})")
    if not 0.0 <= icc <= 1.0:
        raise ValueError(f"icc must be within [0, 1] ({icc})")
    return 1.0 + (trials - 1) * icc


def _detects(
    rate: float, drop: float, tasks: int, trials: int, icc: float, alpha: float, power: float
) -> bool:
    """Whether compare (`paired.rate_difference`) finds `drop` from `rate` with probability
    `power` at two-sided `alpha`, on two runs of `tasks` × `trials` that share task
    difficulty p_i (mean `rate`, intraclass correlation `icc`); the candidate passes with
    p_i·(1 − drop/rate).

    One trial per task: compare's interval (Tango's score) excludes 0 exactly when
    McNemar's asymptotic test rejects; with ψ = P(regressed) + P(improved) its power is
    reached when √T·drop >= z_{1−α/2}·√ψ + z_power·√(ψ − drop²) (Connor 1987).
    Several trials: a task's difference of means has variance
    E[p(1−p) + q(1−q)]/m + (drop/rate)²·Var(p), the interval adds 2·max(1/m, drop)² to the
    sum of squares of its T − 1 degrees of freedom, and the quantile sum is
    t_{1−α/2} + t_power·√(1 + t²_{1−α/2}/(2(T − 1))) (the interval's end varies with its s,
    estimated on T − 1 degrees of freedom: Var(s) ≈ s²/(2(T − 1))).
    """
    shrink = 1.0 - drop / rate
    var_p = icc * rate * (1.0 - rate)
    second = var_p + rate * rate  # E[p²]
    if trials == 1:
        moved = (rate - shrink * second) + shrink * (rate - second)
        z_alpha, z_power = normal_quantile(1.0 - alpha / 2.0), normal_quantile(power)
        needed = z_alpha * math.sqrt(moved) + z_power * math.sqrt(max(moved - drop * drop, 0.0))
        return drop * math.sqrt(tasks) >= needed
    t = t_quantile(1.0 - alpha / 2.0, tasks - 1)
    z = t + t_quantile(power, tasks - 1) * math.sqrt(1.0 + t * t / (2.0 * (tasks - 1)))
    within = (rate - second + shrink * rate - shrink * shrink * second) / trials
    var_d = within + (drop / rate) ** 2 * var_p
    step = max(1.0 / trials, drop)
    var = var_d + 2.0 * step * step / (tasks - 1)
    return drop >= z * math.sqrt(var / tasks)


def _check_design(trials: int, icc: float, alpha: float, power: float) -> None:
    design_effect(trials, icc)  # validates trials and icc
    if not 0.0 < alpha < 1.0 or not 0.0 < power < 1.0:
        raise ValueError(f"alpha and power must be strictly between 0 and 1 ({alpha}, {power})")


def minimal_detectable_effect(
    rate: float,
    tasks: int,
    trials: int,
    *,
    icc: float = 0.0,
    alpha: float = 0.05,
    power: float = 0.8,
) -> float | None:
    """Smallest drop from `rate` that proctor's compare detects with probability `power`.

    The compare's interval (`paired.rate_difference`) on two runs of this size that share
    task difficulty with intraclass correlation `icc` (`_detects`), found by bisection to
    1e-6. None when no drop from `rate` is detectable: below MIN_TASKS tasks, where
    compare concludes nothing, or when even a drop to 0 would be missed.
    tests/test_stats_paired.py checks the promise by simulating the compare itself.
    """
    if tasks < 1 or not 0.0 <= rate <= 1.0:
        raise ValueError(f"need tasks >= 1 and a rate in [0, 1] ({tasks}, {rate})")
    _check_design(trials, icc, alpha, power)
    if tasks < MIN_TASKS or rate == 0.0:
        return None
    if not _detects(rate, rate, tasks, trials, icc, alpha, power):
        return None
    low, high = 0.0, rate
    while high - low > 1e-6:
        mid = 0.5 * (low + high)
        found = _detects(rate, mid, tasks, trials, icc, alpha, power)
        low, high = (low, mid) if found else (mid, high)
    return high


def tasks_needed(
    baseline: float,
    effect: float,
    trials: int,
    *,
    icc: float = 0.0,
    alpha: float = 0.05,
    power: float = 0.8,
) -> int:
    """Tasks two runs on the same tasks need for compare to find a change from `baseline`
    to `baseline + effect` with probability `power` (`proctor power`).

    The smallest T (at least MIN_TASKS) whose paired design detects the change under the
    stated `icc` (`_detects`, the model behind the minimal detectable effect), by doubling
    then bisection. A rise is a drop of the failure rate: pass and fail swap, and the
    paired interval with them. With one trial per task, ICC 0 (tasks share no difficulty)
    needs the most tasks; tests/test_stats_paired.py checks the figure by simulating compare.
    """
    target = baseline + effect
    if not 0.0 <= baseline <= 1.0 or not 0.0 <= target <= 1.0:
        raise ValueError(
            f"baseline and baseline + effect must be rates in [0, 1] ({baseline}, {target})"
        )
    if effect == 0:
        raise ValueError("effect must not be 0")
    _check_design(trials, icc, alpha, power)
    rate, drop = (baseline, -effect) if effect < 0 else (1.0 - baseline, effect)

    def enough(tasks: int) -> bool:
        return _detects(rate, drop, tasks, trials, icc, alpha, power)

    high = MIN_TASKS
    while not enough(high):
        high *= 2
    low = high // 2
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if enough(mid) else (mid, high)
    return max(high, MIN_TASKS)


def icc_anova(per_task: TaskCounts) -> float | None:
    """One-way ANOVA estimate of the intraclass correlation of trial verdicts within tasks.

    (MSB − MSW) / (MSB + (n0 − 1)·MSW) with n0 = (N − Σn²/N)/(G − 1) for unequal trial
    counts, clipped to [0, 1]. None when it is undefined: fewer than two tasks, one trial
    per task, or no variation at all.
    """
    clusters = [(n, c) for n, c in per_task if n > 0]
    g = len(clusters)
    total = sum(n for n, _ in clusters)
    if g < 2 or total == g:
        return None
    passed = sum(c for _, c in clusters)
    between_ss = math.fsum(c * c / n for n, c in clusters) - passed * passed / total
    within_ss = passed - math.fsum(c * c / n for n, c in clusters)
    msb = between_ss / (g - 1)
    msw = within_ss / (total - g)
    n0 = (total - sum(n * n for n, _ in clusters) / total) / (g - 1)
    denominator = msb + (n0 - 1.0) * msw
    if denominator <= 0.0:
        return None
    return min(1.0, max(0.0, (msb - msw) / denominator))
