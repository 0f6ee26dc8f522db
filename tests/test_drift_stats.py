"""The drift tests: Fisher's exact test and Mann–Whitney U, against scipy and by property."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from proctor.stats.drift import fisher_exact, mann_whitney

counts = st.integers(0, 80).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n)))
samples = st.lists(st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 3.25, 10.0]), min_size=1, max_size=40)


@settings(max_examples=300, deadline=None)
@given(counts, counts)
def test_fisher_matches_scipy_and_is_a_probability(a: tuple[int, int], b: tuple[int, int]) -> None:
    (k1, n1), (k2, n2) = a, b
    p = fisher_exact(k1, n1, k2, n2)
    assert 0.0 <= p <= 1.0
    assert p == pytest.approx(fisher_exact(k2, n2, k1, n1), rel=1e-9)  # which side is which
    expected = scipy_stats.fisher_exact([[k1, n1 - k1], [k2, n2 - k2]]).pvalue
    assert p == pytest.approx(expected, rel=1e-7, abs=1e-12)


@given(st.integers(1, 40), st.integers(0, 40))
def test_the_same_rate_on_the_same_size_is_no_evidence(n: int, k: int) -> None:
    k = min(k, n)
    assert fisher_exact(k, n, k, n) == pytest.approx(1.0)


def test_fisher_refuses_impossible_counts() -> None:
    with pytest.raises(ValueError):
        fisher_exact(5, 4, 0, 1)


@settings(max_examples=300, deadline=None)
@given(samples, samples)
def test_mann_whitney_matches_scipy_and_is_symmetric(x: list[float], y: list[float]) -> None:
    p = mann_whitney(x, y)
    if len(set(x + y)) == 1:
        assert p is None  # nothing to rank
        return
    assert p is not None and 0.0 <= p <= 1.0
    assert p == pytest.approx(mann_whitney(y, x))
    expected = scipy_stats.mannwhitneyu(
        x, y, alternative="two-sided", method="asymptotic", use_continuity=True
    ).pvalue
    assert p == pytest.approx(expected, rel=1e-7, abs=1e-12)


def test_a_shifted_distribution_is_detected_and_an_empty_one_is_none() -> None:
    before = [0.1 * i for i in range(30)]
    after = [v + 5 for v in before]
    p = mann_whitney(before, after)
    assert p is not None and p < 1e-6
    assert mann_whitney([], after) is None
