"""Drift: has production moved away from the offline baseline, beyond chance?

A difference between two rates or two distributions is read with a test, not by eye:

- **rates** (success, escalation, abandonment ...): Fisher's exact test on the 2×2 table
  of (events, non-events) in production and in the baseline; two-sided, summing the
  hypergeometric probabilities of every table no more likely than the observed one.
- **latency and cost per session**: the Mann–Whitney U test (two-sided), with the normal
  approximation corrected for ties and for continuity; it compares the whole
  distributions, so one slow outlier does not decide it as it would a mean.

Across the many figures and slices a monitor tests, p-values are Holm-adjusted
(proctor.stats.paired.holm) before anything is called drift.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

#: Relative slack when comparing table probabilities, against rounding.
_REL = 1e-7


def _log_hypergeom(a: int, row1: int, row2: int, col1: int) -> float:
    """log P(top-left cell = a) for fixed margins (rows row1, row2; first column col1)."""
    return (
        math.lgamma(row1 + 1)
        - math.lgamma(a + 1)
        - math.lgamma(row1 - a + 1)
        + math.lgamma(row2 + 1)
        - math.lgamma(col1 - a + 1)
        - math.lgamma(row2 - col1 + a + 1)
        - math.lgamma(row1 + row2 + 1)
        + math.lgamma(col1 + 1)
        + math.lgamma(row1 + row2 - col1 + 1)
    )


def fisher_exact(k1: int, n1: int, k2: int, n2: int) -> float:
    """Two-sided p-value that k1/n1 and k2/n2 come from the same rate."""
    if not (0 <= k1 <= n1 and 0 <= k2 <= n2):
        raise ValueError("counts must satisfy 0 <= k <= n")
    col1 = k1 + k2
    low, high = max(0, col1 - n2), min(col1, n1)
    observed = _log_hypergeom(k1, n1, n2, col1)
    total = 0.0
    for a in range(low, high + 1):
        logp = _log_hypergeom(a, n1, n2, col1)
        if logp <= observed + _REL * max(1.0, abs(observed)):
            total += math.exp(logp)
    return min(1.0, total)


def _normal_sf(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2))


def mann_whitney(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Two-sided p-value that x and y come from the same distribution (None when either
    is empty, or every value is the same: nothing to rank)."""
    n1, n2 = len(x), len(y)
    if not n1 or not n2:
        return None
    pooled = sorted([(v, 0) for v in x] + [(v, 1) for v in y])
    ranks_x, ties, i = 0.0, 0.0, 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        rank = (i + j) / 2 + 1
        group = j - i + 1
        ties += group**3 - group
        ranks_x += rank * sum(1 for k in range(i, j + 1) if pooled[k][1] == 0)
        i = j + 1
    n = n1 + n2
    u = ranks_x - n1 * (n1 + 1) / 2
    variance = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)))
    if variance <= 0:
        return None
    z = (abs(u - n1 * n2 / 2) - 0.5) / math.sqrt(variance)
    return min(1.0, 2 * _normal_sf(max(z, 0.0)))


@dataclass(frozen=True)
class RateCount:
    """Events out of sessions (or trials) where the event is observable."""

    events: int
    n: int

    @property
    def rate(self) -> float | None:
        return self.events / self.n if self.n else None
