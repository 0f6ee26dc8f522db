"""pass@k and pass^k for every k of a task in O(n) (stats.rates.pass_curves), held to the
exact binomial formulas: a summary of 8,000 sessions of one task took 37 s with one exact
big-integer ratio per k, 0.5 s with the curves."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from proctor.stats.rates import (
    complete_k,
    mean_pass_curves,
    pass_at_k,
    pass_at_k_tasks,
    pass_curves,
    pass_hat_k,
    pass_hat_k_tasks,
)


@given(st.integers(1, 400).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
@example((1, 0))
@example((400, 1))
@example((400, 399))
def test_pass_curves_match_the_exact_binomial_formulas(nc: tuple[int, int]) -> None:
    """Every k of the O(n) curves against the exact integer ratios (pass_at_k, pass_hat_k
    as Fractions): within k roundings of each."""
    n, c = nc
    at, hat = pass_curves(n, c, n)
    assert len(at) == len(hat) == n
    for k in range(1, n + 1):
        exact_at = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
        exact_hat = Fraction(math.comb(c, k), math.comb(n, k))
        assert abs(Fraction(at[k - 1]) - exact_at) <= Fraction(k + 1, 2**52)
        assert abs(Fraction(hat[k - 1]) - exact_hat) <= exact_hat * Fraction(k + 1, 2**52)
        assert at[k - 1] == pytest.approx(pass_at_k(n, c, k), rel=1e-12, abs=1e-15)
        assert hat[k - 1] == pytest.approx(pass_hat_k(n, c, k), rel=1e-12, abs=0)


@given(st.lists(st.tuples(st.integers(1, 30), st.integers(0, 30)), min_size=1, max_size=8))
def test_mean_pass_curves_are_the_task_means_of_every_k(pairs: list[tuple[int, int]]) -> None:
    counts = [(n, min(c, n)) for n, c in pairs]
    k_max = complete_k(counts)
    at, hat = mean_pass_curves(counts, k_max)
    for k in range(1, k_max + 1):
        assert at[k - 1] == pytest.approx(pass_at_k_tasks(counts, k), rel=1e-12, abs=1e-15)
        assert hat[k - 1] == pytest.approx(pass_hat_k_tasks(counts, k), rel=1e-12, abs=1e-300)
    assert mean_pass_curves([(0, 0)], 3) == ([], [])
