"""Agreement between raters: Cohen's kappa (with its interval) for two raters' labels of
the same units, Krippendorff's alpha for any number of raters with missing labels. One
place for both, so the review desk (people with each other and with graders), judge
calibration (a judge with people) and the evaluation program's figures compute them alike.

κ = (p_o − p_e) / (1 − p_e), p_e from each rater's own category shares; its interval is
κ ± z·SE with the large-sample variance of Fleiss, Cohen & Everitt (1969) (with perfect
agreement, where that variance is 0, the Wilson interval of the agreement mapped to κ).
α = 1 − (n − 1)·Σ o_ck δ²_ck / Σ n_c n_k δ²_ck from the coincidence matrix, with nominal,
ordinal or interval distances. Both are undefined (None) when chance agreement is total.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any, Literal

from proctor.stats.rates import normal_quantile, wilson_interval

Level = Literal["nominal", "ordinal", "interval"]


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Cohen's unweighted kappa of two raters' labels of the same units, in order."""
    if len(a) != len(b):
        raise ValueError("both raters need a label for every unit")
    n = len(a)
    if n == 0:
        return None
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    ca, cb = Counter(a), Counter(b)
    expected = sum(ca[c] * cb[c] for c in ca.keys() & cb.keys()) / (n * n)
    if expected == 1:
        return None
    return (observed - expected) / (1 - expected)


def _ordinal_distances(values: list[Any], totals: Mapping[Any, float]) -> dict[Any, float]:
    """Ordinal δ² by value pair: (Σ_{g=c..k} n_g − (n_c + n_k)/2)²."""
    out = {}
    for i, c in enumerate(values):
        for j in range(i, len(values)):
            k = values[j]
            between = sum(totals[values[g]] for g in range(i, j + 1))
            d = (between - (totals[c] + totals[k]) / 2) ** 2
            out[(c, k)] = out[(k, c)] = d
    return out


def krippendorff_alpha(units: Iterable[Sequence[Any]], level: Level = "nominal") -> float | None:
    """Krippendorff's alpha of units, each the values its raters gave (missing left out)."""
    coincidence: dict[tuple[Any, Any], float] = defaultdict(float)
    for values in units:
        m = len(values)
        if m < 2:
            continue
        for i, c in enumerate(values):
            for j, k in enumerate(values):
                if i != j:
                    coincidence[(c, k)] += 1 / (m - 1)
    totals: dict[Any, float] = defaultdict(float)
    for (c, _), weight in coincidence.items():
        totals[c] += weight
    n = sum(totals.values())
    values = sorted(totals)
    if len(values) < 2:
        return None
    if level == "nominal":
        delta = {(c, k): float(c != k) for c in values for k in values}
    elif level == "interval":
        delta = {(c, k): float(c - k) ** 2 for c in values for k in values}
    else:
        delta = _ordinal_distances(values, totals)
    observed = sum(weight * delta[pair] for pair, weight in coincidence.items())
    expected = sum(totals[c] * totals[k] * delta[(c, k)] for c in values for k in values)
    return 1 - (n - 1) * observed / expected


def kappa_interval(
    a: Sequence[Hashable], b: Sequence[Hashable], confidence: float = 0.95
) -> tuple[float, float] | None:
    """Kappa ± z·SE with the large-sample variance of Fleiss, Cohen & Everitt (1969)."""
    kappa = cohen_kappa(a, b)
    if kappa is None:
        return None
    n = len(a)
    cats = sorted(set(a) | set(b), key=repr)
    p = {(i, j): 0.0 for i in cats for j in cats}
    for x, y in zip(a, b, strict=True):
        p[(x, y)] += 1.0 / n
    row = {i: sum(p[(i, j)] for j in cats) for i in cats}
    col = {j: sum(p[(i, j)] for i in cats) for j in cats}
    pe = sum(row[i] * col[i] for i in cats)
    diagonal = sum(p[(i, i)] * (1 - (row[i] + col[i]) * (1 - kappa)) ** 2 for i in cats)
    off = (1 - kappa) ** 2 * sum(
        p[(i, j)] * (col[i] + row[j]) ** 2 for i in cats for j in cats if i != j
    )
    variance = (diagonal + off - (kappa - pe * (1 - kappa)) ** 2) / (n * (1 - pe) ** 2)
    if variance <= 1e-12:
        # Perfect (or perfectly opposite) agreement has no large-sample variance; the
        # Wilson interval of the observed agreement, mapped through kappa's formula with
        # chance agreement held fixed, still says how far a small sample can be trusted.
        agreed = sum(x == y for x, y in zip(a, b, strict=True))
        low, high = wilson_interval(agreed, n, confidence)
        return (max(-1.0, (low - pe) / (1 - pe)), min(1.0, (high - pe) / (1 - pe)))
    half = normal_quantile(0.5 + confidence / 2) * math.sqrt(variance)
    return (max(-1.0, kappa - half), min(1.0, kappa + half))
