"""Quantiles of the normal and Student t distributions, in pure Python.

Intervals need z and t quantiles for any confidence level and any number of tasks; the
decision layer is imported by the CLI and must load in milliseconds, so scipy is not an
option. Both functions agree with scipy to about 1e-9 (tests/test_stats.py).
"""

from __future__ import annotations

import math
from functools import lru_cache

__all__ = ["beta_quantile", "normal_quantile", "t_quantile"]


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


def _t_log_density_norm(df: float) -> float:
    """log of the Student t density's constant, Γ((ν+1)/2) / (√(νπ) Γ(ν/2))."""
    return math.lgamma((df + 1.0) / 2.0) - math.lgamma(df / 2.0) - 0.5 * math.log(df * math.pi)


def _cornish_fisher(z: float, df: float) -> float:
    """The t quantile's expansion in 1/ν around the normal one (Abramowitz & Stegun
    26.7.5): within ~1e-4 from ν = 3 on, a first guess Newton's steps start from."""
    z2 = z * z
    g1 = (z2 + 1.0) * z / 4.0
    g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0
    g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0
    return z + (g1 + (g2 + g3 / df) / df) / df


@lru_cache(maxsize=1024)
def t_quantile(p: float, df: float) -> float:
    """Inverse Student t CDF: paired intervals over ~20 tasks need t, not z, to hold 95%.

    Newton steps on the upper tail (it falls as t grows, at the rate of the density) from
    the Cornish-Fisher guess, kept inside a shrinking bracket so that a step that
    overshoots (few degrees of freedom, far tails) falls back to halving: two to six tail
    evaluations at the usual levels where bisection took ~55 (up to ~40 in far tails
    with under three degrees of freedom), to the same root within the tail's own
    precision (~1e-14 relative below a few thousand degrees of freedom).
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be strictly between 0 and 1 (p={p})")
    if df <= 0:
        raise ValueError(f"df must be positive (df={df})")
    if p == 0.5:
        return 0.0
    tail = min(p, 1.0 - p)
    log_norm = _t_log_density_norm(df)
    lo, hi = 0.0, math.inf
    t = max(_cornish_fisher(-normal_quantile(tail), df), 1e-300)
    for _ in range(200):
        f = _t_upper_tail(t, df) - tail
        if f == 0.0:
            break
        if f > 0.0:
            lo = t
        else:
            hi = t
        pdf = math.exp(log_norm - (df + 1.0) / 2.0 * math.log1p(t * t / df))
        nxt = t + f / pdf if pdf > 0.0 else math.inf
        if not lo < nxt < hi:
            nxt = 2.0 * lo + 1.0 if hi == math.inf else 0.5 * (lo + hi)
        if abs(nxt - t) <= 4e-16 * t or nxt in (lo, hi):
            t = nxt
            break
        t = nxt
    return t if p > 0.5 else -t


def beta_quantile(q: float, a: float, b: float) -> float:
    """Inverse CDF of Beta(a, b): the x with I_x(a, b) = q (Clopper-Pearson bounds).

    Newton steps on the regularized incomplete beta, kept inside a shrinking bisection
    bracket so that a step that overshoots (near 0 or 1, where the density is steep) falls
    back to halving; converges to about 1e-13 in x.
    """
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must be strictly between 0 and 1 (q={q})")
    if a <= 0.0 or b <= 0.0:
        raise ValueError(f"a and b must be positive (a={a}, b={b})")
    log_norm = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    lo, hi = 0.0, 1.0
    mean, size = a / (a + b), a + b
    x = mean + normal_quantile(q) * math.sqrt(mean * (1.0 - mean) / (size + 1.0))
    x = x if 0.0 < x < 1.0 else mean  # the normal approximation as a first guess
    for _ in range(200):
        f = _regularized_beta(x, a, b) - q
        if f == 0.0:
            return x
        if f > 0.0:
            hi = x
        else:
            lo = x
        log_pdf = log_norm + (a - 1.0) * math.log(x) + (b - 1.0) * math.log1p(-x)
        pdf = math.exp(min(log_pdf, 700.0))
        nxt = x - f / pdf if pdf > 0.0 else lo - 1.0
        if not lo < nxt < hi:
            nxt = 0.5 * (lo + hi)
        if abs(nxt - x) <= 1e-13 * max(x, 1e-300) or hi - lo <= 1e-15:
            return nxt
        x = nxt
    return x
