"""Reliability statistics for agent runs: pass@k, pass^k, intervals and spreads.

Agents are stochastic, so a single trial per task says little. These are the exact
formulas the design calls for: the unbiased pass@k estimator (Chen et al. 2021), tau-bench's
pass^k, Wilson score intervals, and a task-clustered standard error (trials of the same task
are correlated, so treating them as independent overstates precision).

Only the standard library's `math` is used: the module is imported by the CLI and reports,
must load in a few milliseconds, and must give the same answers wherever it runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

__all__ = [
    "clustered_se",
    "mean",
    "mean_over_tasks",
    "normal_quantile",
    "pass_at_k",
    "pass_at_k_tasks",
    "pass_hat_k",
    "pass_hat_k_tasks",
    "percentile",
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
