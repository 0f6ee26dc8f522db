"""Tests for proctor.stats.rates against brute force, published values, numpy and scipy."""

from __future__ import annotations

import itertools
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from proctor.stats import rates as stats
from proctor.stats.distributions import normal_quantile
from proctor.stats.rates import (
    mean,
    mean_over_tasks,
    pass_at_k,
    pass_at_k_tasks,
    pass_hat_k,
    pass_hat_k_tasks,
    percentile,
    wilson_interval,
)

# --- pass@k / pass^k -------------------------------------------------------------------


def _all_cases(max_n: int = 7) -> list[tuple[int, int, int]]:
    return [(n, c, k) for n in range(1, max_n + 1) for c in range(n + 1) for k in range(1, n + 1)]


@pytest.mark.parametrize(("n", "c", "k"), _all_cases())
def test_pass_at_k_and_pass_hat_k_match_subset_enumeration(n: int, c: int, k: int) -> None:
    outcomes = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(outcomes, k))
    any_pass = sum(1 for s in subsets if any(s))
    all_pass = sum(1 for s in subsets if all(s))
    # Both sides are a single correctly rounded division of the same integers: exact equality.
    assert pass_at_k(n, c, k) == any_pass / len(subsets)
    assert pass_hat_k(n, c, k) == all_pass / len(subsets)


def test_pass_at_k_known_values() -> None:
    assert pass_at_k(10, 0, 5) == 0.0
    assert pass_at_k(10, 10, 1) == 1.0
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3, abs=1e-15)
    assert pass_at_k(5, 2, 3) == pytest.approx(0.9, abs=1e-15)  # 1 - C(3,3)/C(5,3)
    assert pass_hat_k(5, 4, 2) == pytest.approx(0.6, abs=1e-15)  # C(4,2)/C(5,2) = 6/10
    assert pass_hat_k(10, 3, 1) == pytest.approx(0.3, abs=1e-15)


def test_pass_at_k_large_n_is_finite_and_exact() -> None:
    # Floats of C(2000, 1000) would overflow; exact integer arithmetic must not.
    assert pass_at_k(2000, 1, 1000) == pytest.approx(0.5, abs=1e-15)
    assert pass_hat_k(2000, 1999, 1000) == pytest.approx(0.5, abs=1e-15)


@pytest.mark.parametrize("fn", [pass_at_k, pass_hat_k])
@pytest.mark.parametrize(
    ("n", "c", "k"),
    [
        (3, 1, 4),  # k > n
        (0, 0, 1),  # k > n with no trials
        (5, 2, 0),  # k < 1
        (5, 2, -1),  # negative k
        (5, 6, 2),  # c > n
        (-1, 0, 1),  # negative n
        (5, -1, 2),  # negative c
    ],
)
def test_invalid_input_raises(fn, n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError):
        fn(n, c, k)


def test_task_average_is_over_every_task_or_none() -> None:
    counts = [(5, 2), (2, 1), (3, 3)]
    # k = 3 would leave (2, 1) out: a figure over fewer tasks is not given at all.
    assert pass_at_k_tasks(counts, 3) is None
    assert pass_hat_k_tasks(counts, 3) is None
    assert stats.complete_k(counts) == 2
    assert stats.tasks_covering(counts, 3) == 2
    assert pass_hat_k_tasks(counts, 2) == pytest.approx((0.1 + 0.0 + 1.0) / 3, abs=1e-15)
    # With k=1 every task counts.
    assert pass_at_k_tasks(counts, 1) == pytest.approx((0.4 + 0.5 + 1.0) / 3, abs=1e-15)
    assert pass_hat_k_tasks(counts, 1) == pytest.approx((0.4 + 0.5 + 1.0) / 3, abs=1e-15)


def test_task_average_uses_given_function() -> None:
    seen: list[tuple[int, int, int]] = []

    def fn(n: int, c: int, k: int) -> float:
        seen.append((n, c, k))
        return float(n)

    assert mean_over_tasks([(4, 1), (2, 1), (6, 0)], 2, fn) == 4.0
    assert seen == [(4, 1, 2), (2, 1, 2), (6, 0, 2)]
    # A task without trials has no data at any k; it neither counts nor blocks.
    assert mean_over_tasks([(4, 1), (0, 0)], 2, fn) == 4.0


def test_task_average_none_when_no_task_qualifies() -> None:
    assert pass_at_k_tasks([(1, 1), (2, 0)], 3) is None
    assert pass_hat_k_tasks([(1, 1), (2, 0)], 3) is None
    assert pass_at_k_tasks([], 1) is None
    with pytest.raises(ValueError):
        pass_at_k_tasks([(3, 1)], 0)


# --- normal quantile and Wilson --------------------------------------------------------


@pytest.mark.parametrize(
    "p", [1e-300, 1e-12, 1e-6, 1e-3, 0.02425, 0.025, 0.1, 0.3, 0.5, 0.8, 0.975, 0.999, 1 - 1e-6]
)
def test_normal_quantile_matches_scipy(p: float) -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    expected = float(scipy_stats.norm.ppf(p))
    assert normal_quantile(p) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_normal_quantile_symmetry_and_domain() -> None:
    assert normal_quantile(0.5) == 0.0
    assert normal_quantile(0.975) == pytest.approx(1.959963984540054, abs=1e-14)
    for p in (2.0**-30, 0.01, 0.2, 0.4):  # 1 - p is exact or nearly so for these
        assert normal_quantile(p) == pytest.approx(-normal_quantile(1 - p), rel=1e-12)
    for bad in (0.0, 1.0, -0.1, 1.5, math.nan):
        with pytest.raises(ValueError):
            normal_quantile(bad)


@pytest.mark.parametrize(
    ("successes", "n", "confidence", "expected"),
    [
        (8, 10, 0.95, (0.4902, 0.9433)),
        (0, 10, 0.95, (0.0, 0.2775)),
        (10, 10, 0.95, (0.7225, 1.0)),
        (5, 10, 0.95, (0.2366, 0.7634)),
        (1, 1, 0.95, (0.2065, 1.0)),
        (50, 100, 0.99, (0.3753, 0.6247)),
    ],
)
def test_wilson_table_values(
    successes: int, n: int, confidence: float, expected: tuple[float, float]
) -> None:
    low, high = wilson_interval(successes, n, confidence)
    assert (round(low, 4), round(high, 4)) == expected


def test_wilson_bounds_are_exact_at_extremes() -> None:
    assert wilson_interval(0, 10)[0] == 0.0
    assert wilson_interval(10, 10)[1] == 1.0
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_wilson_bounds_invert_the_score_test() -> None:
    # Independent characterisation: each bound p0 solves |p̂ − p0| = z·sqrt(p0(1−p0)/n).
    for successes, n, confidence in [(3, 7, 0.9), (8, 10, 0.95), (40, 123, 0.99), (1, 2, 0.8)]:
        z = normal_quantile(0.5 + confidence / 2)
        p_hat = successes / n
        for p0 in wilson_interval(successes, n, confidence):
            assert abs(p_hat - p0) == pytest.approx(z * math.sqrt(p0 * (1 - p0) / n), rel=1e-9)


def test_wilson_matches_statsmodels() -> None:
    proportion = pytest.importorskip("statsmodels.stats.proportion")
    for successes, n, confidence in [(8, 10, 0.95), (0, 10, 0.95), (10, 10, 0.9), (17, 50, 0.99)]:
        low, high = proportion.proportion_confint(
            successes, n, alpha=1 - confidence, method="wilson"
        )
        ours = wilson_interval(successes, n, confidence)
        assert ours == pytest.approx((low, high), abs=1e-12)


def test_wilson_matches_scipy_formula() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(1, 500))
        successes = int(rng.integers(0, n + 1))
        confidence = float(rng.choice([0.8, 0.9, 0.95, 0.99, 0.999]))
        z = float(scipy_stats.norm.ppf(1 - (1 - confidence) / 2))
        p = successes / n
        center = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
        low, high = wilson_interval(successes, n, confidence)
        assert low == pytest.approx(max(0.0, center - half), abs=1e-12)
        assert high == pytest.approx(min(1.0, center + half), abs=1e-12)
        assert low <= p <= high


def test_wilson_invalid_input() -> None:
    for args in [(11, 10), (-1, 10), (0, -1)]:
        with pytest.raises(ValueError):
            wilson_interval(*args)
    for confidence in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError):
            wilson_interval(5, 10, confidence)


# --- percentile and mean ---------------------------------------------------------------


@pytest.mark.parametrize("seed", range(20))
def test_percentile_matches_numpy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 60))
    values = (rng.standard_normal(size) * 10.0 ** rng.integers(-3, 4)).tolist()
    if seed % 3 == 0:
        values = [float(v) for v in rng.integers(-5, 5, size)]  # ties
    qs = [0.0, 100.0, 50.0, 25, 75, 99, *rng.uniform(0, 100, 10).tolist()]
    for q in qs:
        expected = float(np.percentile(values, q))
        assert percentile(values, q) == pytest.approx(expected, rel=1e-13, abs=1e-13)


@given(
    st.lists(st.floats(allow_infinity=False, width=32), max_size=40),
    st.lists(st.floats(0.0, 100.0), min_size=1, max_size=4),
)
def test_several_percentiles_are_each_percentile(values: list[float], qs: list[float]) -> None:
    """Read and sorted once, the values give at each q what `percentile` gives alone (a NaN
    among them: NaN at every q)."""
    got = stats.percentiles(iter(values), qs)
    for q, value in zip(qs, got, strict=True):
        alone = percentile(values, q)
        assert repr(value) == repr(alone)
    assert stats.percentiles(values, ()) == []
    with pytest.raises(ValueError):
        stats.percentiles(values, [*qs, 100.5])


def test_percentile_small_cases() -> None:
    assert percentile([], 50) is None
    assert percentile([3.0], 90) == 3.0
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([4, 1, 3, 2], 25) == 1.75
    assert percentile(iter([10, 0]), 10) == pytest.approx(1.0)
    assert math.isnan(percentile([1.0, math.nan], 50))
    for q in (-1, 100.5):
        with pytest.raises(ValueError):
            percentile([1, 2], q)


def test_mean() -> None:
    assert mean([]) is None
    assert mean([1, 2, 3, 4]) == 2.5
    assert mean(iter([0.1] * 10)) == pytest.approx(0.1, abs=1e-17)
    rng = np.random.default_rng(1)
    values = rng.standard_normal(100).tolist()
    assert mean(values) == pytest.approx(statistics.fmean(values), abs=1e-15)


# --- import cost -----------------------------------------------------------------------


def test_module_does_not_import_numpy_or_scipy() -> None:
    src = str(Path(stats.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    code = (
        "import sys, proctor.stats.rates; "
        "bad = [m for m in ('numpy', 'scipy') if m in sys.modules]; "
        "sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], env=env, check=False)
    assert result.returncode == 0
