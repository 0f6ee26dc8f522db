"""Two runs on the same tasks: paired differences, McNemar's exact test, Holm.

Both runs are reduced to one value per task, so every interval here is clustered by task
by construction. Differences of rates (success, pass^k, tool precision: values in
[0, 1]) use Newcombe's square-and-add interval (1998) built on each run's own clustered
interval, which keeps a width when every task moved the same way; other figures (cost,
latency, tokens) the paired t interval. With fewer than MIN_TASKS tasks no two-sided test
can reach 5% (McNemar's smallest p is 2/2^T), so such comparisons are reported as "too
few tasks to conclude" (docs/architecture.md, Metrics).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import NamedTuple

from proctor.decide.distributions import t_quantile
from proctor.decide.stats import bounded_mean_interval, percentile

__all__ = [
    "MIN_TASKS",
    "PairedDifference",
    "bootstrap_mean_interval",
    "holm",
    "mcnemar_exact",
    "paired_difference",
    "rate_difference",
]

#: Fewer paired tasks than this cannot show anything at 5%: 2/2^5 = 0.0625.
MIN_TASKS = 6


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


def _correlation(xs: Sequence[float], ys: Sequence[float]) -> float:
    """The correlation of the two runs' per-task values, continuity-corrected and >= 0.

    For one trial per task this is Newcombe's φ with the correction of his method 11,
    max(AD − BC − N/2, 0) / √(row and column totals): in moments, (cov − 1/(2N)) / (sx·sy).
    Uncorrected, identical runs get φ = 1 and, at a rate of one half, an interval of no
    width; corrected, a handful of agreeing tasks cannot claim that precision.
    """
    n = len(xs)
    mx, my = math.fsum(xs) / n, math.fsum(ys) / n
    sx = math.sqrt(math.fsum((x - mx) ** 2 for x in xs) / n)
    sy = math.sqrt(math.fsum((y - my) ** 2 for y in ys) / n)
    if sx == 0.0 or sy == 0.0:
        return 0.0
    cov = math.fsum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / n
    return min(1.0, max(0.0, (cov - 1.0 / (2.0 * n)) / (sx * sy)))


def rate_difference(
    base: Sequence[float],
    cand: Sequence[float],
    base_units: Sequence[int],
    cand_units: Sequence[int],
    confidence: float = 0.95,
) -> PairedDifference | None:
    """Difference of two rates over the same tasks: Newcombe's square-and-add interval.

    Each run's mean over tasks gets its clustered interval (l, u) from
    `bounded_mean_interval`; with d = p_c − p_b and φ their correlation (`_correlation`):

        low  = d − √((p_c − l_c)² − 2φ(p_c − l_c)(u_b − p_b) + (u_b − p_b)²)
        high = d + √((u_c − p_c)² − 2φ(u_c − p_c)(p_b − l_b) + (p_b − l_b)²)

    (Newcombe 1998, method 10; with φ = 0 it is his interval for independent samples,
    which statsmodels implements). It contains d and stays in [−1, 1]. Below MIN_TASKS
    tasks it is [−1, 1]: no exact test (McNemar, sign-flip) can reject any difference
    there, so the exact interval, the differences none rejects, is every possible one.
    SE is the paired sd(d)/√T.
    """
    n = len(base)
    if n == 0:
        return None
    diffs = [y - x for x, y in zip(base, cand, strict=True)]
    d_mean = math.fsum(diffs) / n
    se = _sd_of_mean(diffs, d_mean) if n > 1 else None
    if n < MIN_TASKS:
        return PairedDifference(d_mean, se, -1.0, 1.0, n)
    b = bounded_mean_interval(base, base_units, confidence)
    c = bounded_mean_interval(cand, cand_units, confidence)
    assert b.value is not None and c.value is not None
    d = c.value - b.value
    phi = _correlation(base, cand)
    down_c, up_b = c.value - c.low, b.high - b.value
    up_c, down_b = c.high - c.value, b.value - b.low
    low = d - math.sqrt(max(down_c**2 - 2 * phi * down_c * up_b + up_b**2, 0.0))
    high = d + math.sqrt(max(up_c**2 - 2 * phi * up_c * down_b + down_b**2, 0.0))
    return PairedDifference(d, se, max(-1.0, low), min(1.0, high), n)


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
