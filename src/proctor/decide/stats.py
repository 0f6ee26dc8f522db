"""Reliability statistics for agent runs: pass@k, pass^k, intervals, paired tests, power.

Agents are stochastic, so a single trial per task says little. These are the exact
formulas the design calls for: the unbiased pass@k estimator (Chen et al. 2021), tau-bench's
pass^k, Wilson score intervals, and a task-clustered standard error (trials of the same task
are correlated, so treating them as independent overstates precision). For two runs on the
same tasks: paired differences with a t interval and a paired bootstrap over tasks,
McNemar's exact test, and the power analysis of a task-clustered design.

Only the standard library's `math` is used: the module is imported by the CLI and reports,
must load in a few milliseconds, and must give the same answers wherever it runs.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

__all__ = [
    "PairedDifference",
    "bootstrap_mean_interval",
    "clustered_se",
    "design_effect",
    "holm",
    "icc_anova",
    "mcnemar_exact",
    "mean",
    "mean_over_tasks",
    "minimal_detectable_effect",
    "normal_quantile",
    "paired_difference",
    "pass_at_k",
    "pass_at_k_tasks",
    "pass_hat_k",
    "pass_hat_k_tasks",
    "percentile",
    "t_quantile",
    "tasks_needed",
    "wilson_interval",
]

TaskCounts = Sequence[tuple[int, int]]
"""Per-task `(n, c)` pairs: trials run and trials passed."""


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


def mean_over_tasks(
    counts: TaskCounts, k: int, fn: Callable[[int, int, int], float]
) -> float | None:
    """Average `fn(n, c, k)` over tasks, skipping tasks with fewer than k trials.

    A task with n < k cannot support a k-trial estimate, so it is left out rather than
    guessed. Returns None when no task has n >= k, so callers cannot mistake "no data"
    for a score of 0.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1 (k={k})")
    scores = [fn(n, c, k) for n, c in counts if n >= k]
    if not scores:
        return None
    return math.fsum(scores) / len(scores)


def pass_at_k_tasks(counts: TaskCounts, k: int) -> float | None:
    """Task-averaged pass@k; see `mean_over_tasks` for which tasks count."""
    return mean_over_tasks(counts, k, pass_at_k)


def pass_hat_k_tasks(counts: TaskCounts, k: int) -> float | None:
    """Task-averaged pass^k; see `mean_over_tasks` for which tasks count."""
    return mean_over_tasks(counts, k, pass_hat_k)


# Coefficients of Peter Acklam's rational approximation to the inverse normal CDF
# (relative error below 1.15e-9 before refinement).
_A = (
    -3.969683028665376e01,
    2.209460984245205e02,
    -2.759285104469687e02,
    1.383577518672690e02,
    -3.066479806614716e01,
    2.506628277459239e00,
)
_B = (
    -5.447609879822406e01,
    1.615858368580409e02,
    -1.556989798598866e02,
    6.680131188771972e01,
    -1.328068155288572e01,
)
_C = (
    -7.784894002430293e-03,
    -3.223964580411365e-01,
    -2.400758277161838e00,
    -2.549732539343734e00,
    4.374664141464968e00,
    2.938163982698783e00,
)
_D = (
    7.784695709041462e-03,
    3.224671290700398e-01,
    2.445134137142996e00,
    3.754408661907416e00,
)
_P_LOW = 0.02425
_SQRT2 = math.sqrt(2.0)
_SQRT2PI = math.sqrt(2.0 * math.pi)


def _acklam_lower(p: float) -> float:
    """Acklam's approximation for p <= 0.5 (the result is <= 0)."""
    if p < _P_LOW:
        q = math.sqrt(-2.0 * math.log(p))
        num = ((((_C[0] * q + _C[1]) * q + _C[2]) * q + _C[3]) * q + _C[4]) * q + _C[5]
        den = (((_D[0] * q + _D[1]) * q + _D[2]) * q + _D[3]) * q + 1.0
        return num / den
    q = p - 0.5
    r = q * q
    num = (((((_A[0] * r + _A[1]) * r + _A[2]) * r + _A[3]) * r + _A[4]) * r + _A[5]) * q
    den = ((((_B[0] * r + _B[1]) * r + _B[2]) * r + _B[3]) * r + _B[4]) * r + 1.0
    return num / den


def normal_quantile(p: float) -> float:
    """Inverse standard normal CDF, so confidence levels other than 95% are exact.

    Acklam's rational approximation followed by one Halley step against `math.erfc`, which
    brings it to about machine precision. The lower tail is solved and mirrored, because
    1 − p is exact for p >= 0.5 while erfc keeps full relative accuracy in the tail.
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be strictly between 0 and 1 (p={p})")
    lower = min(p, 1.0 - p)
    x = _acklam_lower(lower)
    err = 0.5 * math.erfc(-x / _SQRT2) - lower
    u = err * _SQRT2PI * math.exp(0.5 * x * x)
    x -= u / (1.0 + 0.5 * x * u)
    return x if p <= 0.5 else -x


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion.

    Unlike the normal (Wald) interval it stays inside [0, 1] and is not degenerate at 0 or n
    successes, which are common for small agent benchmarks. n == 0 gives the vacuous (0, 1).
    """
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n (successes={successes}, n={n})")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1 ({confidence})")
    if n == 0:
        return (0.0, 1.0)
    z = normal_quantile(0.5 + confidence / 2.0)
    z2 = z * z
    p = successes / n
    denom = 1.0 + z2 / n
    center = (p + z2 / (2.0 * n)) / denom
    half = z / denom * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n))
    # The bounds at 0 and n successes are exactly 0 and 1; pin them against rounding.
    low = 0.0 if successes == 0 else max(0.0, center - half)
    high = 1.0 if successes == n else min(1.0, center + half)
    return (low, high)


def clustered_se(per_task: TaskCounts) -> float:
    """Task-clustered standard error of the pooled success rate p̂ = Σc / Σn.

    Trials of one task share its difficulty, so they are not independent; a binomial SE
    over all trials would be too small. This is the cluster-robust (sandwich) variance of an
    intercept-only regression on the 0/1 trial outcomes, with each task a cluster:

        e_g = c_g − p̂·n_g                       (residual sum of cluster g)
        Var(p̂) = G/(G−1) · Σ_g e_g² / (Σ_g n_g)²

    where G is the number of tasks with at least one trial (tasks with n_g = 0 contribute no
    observations). Returns the square root, or 0.0 when G < 2 or there are no trials.
    """
    clusters = []
    for n, c in per_task:
        if n < 0 or c < 0 or c > n:
            raise ValueError(f"need 0 <= c <= n for every task (n={n}, c={c})")
        if n > 0:
            clusters.append((n, c))
    g = len(clusters)
    total = sum(n for n, _ in clusters)
    if g < 2 or total == 0:
        return 0.0
    p_hat = sum(c for _, c in clusters) / total
    ss = math.fsum((c - p_hat * n) ** 2 for n, c in clusters)
    var = g / (g - 1) * ss / (total * total)
    return math.sqrt(var)


def percentile(values: Iterable[float], q: float) -> float | None:
    """q-th percentile (0..100) with linear interpolation, matching numpy's default.

    This is Hyndman & Fan type 7, computed the way numpy does it so reports agree with
    numpy-based analyses to the last bit. None for empty input; NaN if any value is NaN.
    """
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"q must be within [0, 100] (q={q})")
    data = [float(v) for v in values]
    if not data:
        return None
    if any(math.isnan(v) for v in data):
        return math.nan
    data.sort()
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


# --- two runs on the same tasks --------------------------------------------------------


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """Lentz's continued fraction for the incomplete beta function (Numerical Recipes 6.4)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 1000):
        m2 = 2 * m
        for num in (
            m * (b - m) * x / ((a - 1.0 + m2) * (a + m2)),
            -(a + m) * (a + b + m) * x / ((a + m2) * (a + 1.0 + m2)),
        ):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-16:
            break
    return h


def _regularized_beta(x: float, a: float, b: float) -> float:
    """I_x(a, b), the CDF of a Beta(a, b) variable; the Student t CDF is built on it."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_continued_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_continued_fraction(b, a, 1.0 - x) / b


def _t_upper_tail(t: float, df: float) -> float:
    """P(T > t) for t >= 0, through whichever beta argument is small (and so exact)."""
    t2 = t * t
    y = t2 / (df + t2)
    if y < 0.5:
        return 0.5 * (1.0 - _regularized_beta(y, 0.5, df / 2.0))
    return 0.5 * _regularized_beta(df / (df + t2), df / 2.0, 0.5)


def t_quantile(p: float, df: float) -> float:
    """Inverse Student t CDF: paired intervals over ~20 tasks need t, not z, to hold 95%.

    Bisection on t against the upper tail (which falls as t grows), for the tail
    min(p, 1 − p), mirrored to the side of 0.5.
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be strictly between 0 and 1 (p={p})")
    if df <= 0:
        raise ValueError(f"df must be positive (df={df})")
    if p == 0.5:
        return 0.0
    tail = min(p, 1.0 - p)
    lo, hi = 0.0, 1.0
    while _t_upper_tail(hi, df) > tail:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if _t_upper_tail(mid, df) > tail:
            lo = mid
        else:
            hi = mid
    t = 0.5 * (lo + hi)
    return t if p > 0.5 else -t


class PairedDifference(NamedTuple):
    """Mean of per-task differences with its task-clustered SE and t interval."""

    mean: float
    se: float | None
    low: float | None
    high: float | None
    tasks: int


def paired_difference(diffs: Sequence[float], confidence: float = 0.95) -> PairedDifference | None:
    """Mean difference over tasks, SE = sd(d)/sqrt(T), interval mean ± t(T−1)·SE.

    Each task contributes one difference (its trials averaged first), so the SE is clustered
    by task by construction. The interval equals the paired t test's (scipy `ttest_rel`).
    None without tasks; SE and interval are None with a single task.
    """
    n = len(diffs)
    if n == 0:
        return None
    m = math.fsum(diffs) / n
    if n < 2:
        return PairedDifference(m, None, None, None, n)
    sd = math.sqrt(math.fsum((d - m) ** 2 for d in diffs) / (n - 1))
    se = sd / math.sqrt(n)
    half = t_quantile(0.5 + confidence / 2.0, n - 1) * se
    return PairedDifference(m, se, m - half, m + half, n)


def bootstrap_mean_interval(
    values: Sequence[float], *, resamples: int = 2000, seed: int = 0, confidence: float = 0.95
) -> tuple[float, float] | None:
    """Percentile interval of the mean, resampling tasks with replacement (seeded).

    A check on the t interval that assumes no normality; the same seed gives the same
    interval, so a report can be reproduced. None without values.
    """
    n = len(values)
    if n == 0:
        return None
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1 ({resamples})")
    rng = random.Random(seed)
    data = list(values)
    means = [math.fsum(rng.choices(data, k=n)) / n for _ in range(resamples)]
    tail = 50.0 * (1.0 - confidence)
    low, high = percentile(means, tail), percentile(means, 100.0 - tail)
    assert low is not None and high is not None
    return (low, high)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p: min(1, 2·P[X <= min(b, c)]), X ~ Binomial(b + c, 1/2).

    b and c are the discordant tasks (passed only in one run). Integer arithmetic keeps
    the tail exact; no discordant tasks give p = 1.
    """
    if b < 0 or c < 0:
        raise ValueError(f"counts must be non-negative (b={b}, c={c})")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
    return min(1.0, 2 * tail / 2**n)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment, in the input order.

    Comparing many slices, some look significant by chance alone; Holm keeps the chance of
    any false alarm at the level without assuming the tests are independent. The i-th
    smallest of m p-values becomes max over j <= i of min(1, (m − j + 1)·p_(j)).
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


# --- power of a task-clustered design --------------------------------------------------


def design_effect(trials: int, icc: float) -> float:
    """1 + (m − 1)·ICC: how much m correlated trials per task inflate the variance."""
    if trials < 1:
        raise ValueError(f"trials must be at least 1 ({trials})")
    if not 0.0 <= icc <= 1.0:
        raise ValueError(f"icc must be within [0, 1] ({icc})")
    return 1.0 + (trials - 1) * icc


def _z_sum(alpha: float, power: float) -> float:
    if not 0.0 < alpha < 1.0 or not 0.0 < power < 1.0:
        raise ValueError(f"alpha and power must be strictly between 0 and 1 ({alpha}, {power})")
    return normal_quantile(1.0 - alpha / 2.0) + normal_quantile(power)


def tasks_needed(
    baseline: float,
    effect: float,
    trials: int,
    *,
    icc: float = 0.0,
    alpha: float = 0.05,
    power: float = 0.8,
) -> int:
    """Tasks per run to detect a change from `baseline` to `baseline + effect`.

    T = ceil((z_{1−α/2} + z_power)² · (p1·q1 + p2·q2) · DE / (m · δ²)), the two-sample
    cluster design (Donner & Klar). Two runs on the *same* tasks need at most this many:
    pairing removes the task-difficulty variance both runs share, so this is conservative.
    """
    p2 = baseline + effect
    if not 0.0 <= baseline <= 1.0 or not 0.0 <= p2 <= 1.0:
        raise ValueError(
            f"baseline and baseline + effect must be rates in [0, 1] ({baseline}, {p2})"
        )
    if effect == 0:
        raise ValueError("effect must not be 0")
    variance = baseline * (1.0 - baseline) + p2 * (1.0 - p2)
    z = _z_sum(alpha, power)
    return max(2, math.ceil(z * z * variance * design_effect(trials, icc) / (trials * effect**2)))


def minimal_detectable_effect(
    rate: float,
    tasks: int,
    trials: int,
    *,
    icc: float = 0.0,
    alpha: float = 0.05,
    power: float = 0.8,
) -> float | None:
    """Smallest drop δ from `rate` that `tasks_needed` says this design detects.

    Solves T = Z²·(p·q + (p−δ)(q+δ))·DE / (m·δ²) for δ, a quadratic:
    (1 + A)·δ² − A·(p − q)·δ − 2A·p·q = 0 with A = Z²·DE/(m·T). A drop is what a release
    gate guards against. None when no drop from `rate` is detectable (δ would exceed p).
    """
    if tasks < 1 or not 0.0 <= rate <= 1.0:
        raise ValueError(f"need tasks >= 1 and a rate in [0, 1] ({tasks}, {rate})")
    z = _z_sum(alpha, power)
    a = z * z * design_effect(trials, icc) / (trials * tasks)
    p, q = rate, 1.0 - rate
    delta = (a * (p - q) + math.sqrt(a * a * (p - q) ** 2 + 8.0 * a * (1.0 + a) * p * q)) / (
        2.0 * (1.0 + a)
    )
    return delta if 0.0 < delta <= p else None


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
