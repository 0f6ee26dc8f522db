"""Two runs on the same tasks: paired differences, McNemar's exact test, Holm.

Both runs are reduced to one value per task, so every interval here is clustered by task
by construction. Differences of rates (success, pass^k, tool precision: values in
[0, 1]) use `rate_difference`: Tango's score interval with one trial per task, else an
adjusted paired t on per-task differences; both keep their level when few tasks moved
and a width when none did. Other figures (cost, latency, tokens) get the plain paired t
interval. With fewer than MIN_TASKS tasks no two-sided test
can reach 5% (McNemar's smallest p is 2/2^T), so such comparisons are reported as "too
few tasks to conclude" (docs/architecture.md, Metrics).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import NamedTuple

from proctor.stats.distributions import normal_quantile, t_quantile
from proctor.stats.rates import MIN_TASKS, percentiles

__all__ = [
    "MIN_TASKS",
    "PairedDifference",
    "bootstrap_mean_interval",
    "holm",
    "mcnemar_exact",
    "paired_difference",
    "paired_proportion_interval",
    "rate_difference",
    "tango_score",
]


class PairedDifference(NamedTuple):
    """Mean of per-task differences (candidate − baseline), its SE and interval."""

    mean: float
    se: float | None
    low: float | None
    high: float | None
    tasks: int

    @property
    def conclusive(self) -> bool:
        """Enough tasks for the interval to mean something (MIN_TASKS)."""
        return self.tasks >= MIN_TASKS and self.low is not None


def _sd_of_mean(diffs: Sequence[float], mean: float) -> float:
    n = len(diffs)
    return math.sqrt(math.fsum((d - mean) ** 2 for d in diffs) / (n - 1)) / math.sqrt(n)


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
    se = _sd_of_mean(diffs, m)
    half = t_quantile(0.5 + confidence / 2.0, n - 1) * se
    return PairedDifference(m, se, m - half, m + half, n)


def tango_score(improved: int, regressed: int, tasks: int, delta: float) -> float:
    """Tango's (1998) score statistic for H0: p(candidate) − p(baseline) = delta, paired 0/1.

    With x12 = `improved` (passed only in the candidate), x21 = `regressed`, n = `tasks`:
    Z = (x12 − x21 − n·delta) / √(n·(2·p̃21 + delta·(1 − delta))), where p̃21 is the
    maximum-likelihood P(regressed) under H0, the positive root of
    2n·p² + (−x12 − x21 + (2n − x12 + x21)·delta)·p − x21·delta·(1 − delta) = 0
    (Tango 1998, Stat. Med. 17:891, eq. 3-4). At delta = 0 it is McNemar's
    (x12 − x21)/√(x12 + x21). Decreasing in delta; ±inf where the variance vanishes.
    """
    n = float(tasks)
    b = -improved - regressed + (2.0 * n - improved + regressed) * delta
    c = -regressed * delta * (1.0 - delta)
    # √(b² − 8nc) scaled by its larger term, so that b² cannot underflow near delta = 0
    scale = max(abs(b), math.sqrt(8.0 * n * abs(c)))
    root = (
        0.0
        if scale == 0.0
        else scale * math.sqrt(max((b / scale) ** 2 - 8.0 * n * (c / scale) / scale, 0.0))
    )
    p21 = (-b + root) / (4.0 * n)
    numerator = improved - regressed - n * delta
    variance = n * (2.0 * max(p21, 0.0) + delta * (1.0 - delta))
    if variance <= 0.0:
        return 0.0 if numerator == 0 else math.copysign(math.inf, numerator)
    return numerator / math.sqrt(variance)


def paired_proportion_interval(
    improved: int, regressed: int, tasks: int, confidence: float = 0.95
) -> tuple[float, float]:
    """Tango's score interval for a difference of paired proportions (one trial per task).

    The deltas whose score statistic (`tango_score`) lies within ±z, found by bisection to
    1e-10. It excludes 0 exactly when McNemar's asymptotic test rejects, so it finds what
    the paired t finds (the exact test does not), keeps its level over the grid of
    docs/architecture.md (Metrics), and never leaves [−1, 1]. Newcombe (1998, method 10)
    and Agresti-Min are its peers; Tango's is the one that inverts a single test.
    """
    if improved < 0 or regressed < 0 or improved + regressed > tasks:
        raise ValueError(f"need 0 <= improved + regressed <= tasks ({improved}, {regressed})")
    z = normal_quantile(0.5 + confidence / 2.0)
    estimate = (improved - regressed) / tasks

    def root(target: float, lo: float, hi: float) -> float:
        # the delta in [lo, hi] where the (decreasing) score crosses target
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            if tango_score(improved, regressed, tasks, mid) > target:
                lo = mid
            else:
                hi = mid
            if hi - lo < 1e-10:
                break
        return 0.5 * (lo + hi)

    return (root(z, -1.0, estimate), root(-z, estimate, 1.0))


def rate_difference(
    base: Sequence[float],
    cand: Sequence[float],
    base_units: Sequence[int],
    cand_units: Sequence[int],
    confidence: float = 0.95,
) -> PairedDifference | None:
    """Difference of two rates over the same tasks: a paired interval on per-task
    differences d_i = cand_i − base_i.

    One trial per task on both sides (every d_i is −1, 0 or 1): Tango's score interval
    (`paired_proportion_interval`), which finds what McNemar's asymptotic test finds.
    Otherwise an adjusted paired t. With d̄ the mean, a² = max(mean of 1/m_i², d̄²)
    (m_i the fewer units, trials, behind task i's two values: 1/m_i is the smallest step
    its difference can take; one task with fewer trials does not set the step of all) and
    k the tasks whose difference is not 0:

        w = min(1, 3 / k)                           the floor's weight
        s² = (Σ(d_i − d̄)² + 2w·a²) / (T − 1)      one more task up by a, one down by a
        centre = d̄ + Σ(d_i − d̄)³ / (6 s² T²)      Johnson's (1978) skewness correction
        interval = centre ± t_{T−1} · s / √T

    The two pseudo-tasks stand in for the spread the data cannot show when at most three
    tasks moved: without them runs where no task moved get [0, 0] and ten tasks that all
    fell from 5/5 to 0/5 get [−1, −1]. Once more tasks moved, their own spread carries
    the variance and the floor fades (3/k): at full weight it halved the power of a
    10-task suite against the paired t where the t holds its level. Without the skewness
    term, drops carried by a few tasks are missed. docs/architecture.md (Metrics) gives
    coverage and power over a grid. The interval contains d̄ and stays in [−1, 1]. Below
    MIN_TASKS tasks it is [−1, 1]: no exact test (McNemar, sign-flip) can reject any
    difference there. SE is the plain paired sd(d)/√T.
    """
    n = len(base)
    if n == 0:
        return None
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1 ({confidence})")
    if any(u < 1 for u in (*base_units, *cand_units)):
        raise ValueError("every task needs at least one unit on both sides")
    diffs = [y - x for x, y in zip(base, cand, strict=True)]
    d_mean = math.fsum(diffs) / n
    se = _sd_of_mean(diffs, d_mean) if n > 1 else None
    if n < MIN_TASKS:
        return PairedDifference(d_mean, se, -1.0, 1.0, n)
    if all(u == 1 for u in (*base_units, *cand_units)):
        improved = sum(1 for d in diffs if d > 0.0)
        regressed = sum(1 for d in diffs if d < 0.0)
        low, high = paired_proportion_interval(improved, regressed, n, confidence)
        return PairedDifference(d_mean, se, min(low, d_mean), max(high, d_mean), n)
    steps = math.fsum(1.0 / min(b, c) ** 2 for b, c in zip(base_units, cand_units, strict=True))
    moved = sum(1 for d in diffs if d != 0.0)
    pseudo = 2.0 * min(1.0, 3.0 / max(moved, 1)) * max(steps / n, d_mean * d_mean)
    var = (math.fsum((d - d_mean) ** 2 for d in diffs) + pseudo) / (n - 1)
    centre = d_mean + math.fsum((d - d_mean) ** 3 for d in diffs) / (6.0 * var * n * n)
    half = t_quantile(0.5 + confidence / 2.0, n - 1) * math.sqrt(var / n)
    low = max(-1.0, min(centre - half, d_mean))
    high = min(1.0, max(centre + half, d_mean))
    return PairedDifference(d_mean, se, low, high, n)


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
    low, high = percentiles(means, (tail, 100.0 - tail))
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
