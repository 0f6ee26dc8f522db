"""The headline success rate and its task-clustered interval; paired rate differences.

Trials of one task are not independent, so the interval of the success rate is Korn and
Graubard's interval on an effective sample size (proctor.stats.rates.task_rate); the
difference of two rates is an adjusted paired t on per-task differences
(proctor.stats.paired.rate_difference).
Checked against scipy and statsmodels, by coverage in simulation, and by properties.
"""

from __future__ import annotations

import itertools
import math
from functools import cache

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from proctor.stats.distributions import beta_quantile, normal_quantile, t_quantile
from proctor.stats.paired import MIN_TASKS, mcnemar_exact, rate_difference
from proctor.stats.rates import (
    complete_k,
    pass_hat_k_tasks,
    task_rate,
    wilson_interval,
)

scipy_stats = pytest.importorskip("scipy.stats")

# --- the headline interval -------------------------------------------------------------


def test_the_issue_example_is_as_wide_as_twenty_independent_tasks() -> None:
    # 20 tasks × 5 trials: 14 always pass, 6 always fail.
    rate = task_rate([(5, 5)] * 14 + [(5, 0)] * 6)
    assert rate.value == pytest.approx(0.7)
    # The pooled Wilson interval over 100 "independent" trials claimed [0.604, 0.781].
    assert wilson_interval(70, 100) == pytest.approx((0.604, 0.781), abs=1e-3)
    # Every trial of a task alike: the 100 trials are worth 20 tasks, no more.
    assert rate.effective_n == pytest.approx(20.0)
    assert rate.method == "clustered"
    # Korn–Graubard: Clopper–Pearson on n* = 20·(z/t₁₉)², x* = 0.7·n* (scipy's Beta).
    n_star = 20 * (scipy_stats.norm.ppf(0.975) / scipy_stats.t.ppf(0.975, 19)) ** 2
    x = 0.7 * n_star
    low = scipy_stats.beta.ppf(0.025, x, n_star - x + 1)
    high = scipy_stats.beta.ppf(0.975, x + 1, n_star - x)
    assert (rate.low, rate.high) == (pytest.approx(low, abs=1e-10), pytest.approx(high, abs=1e-10))
    assert (round(rate.low, 2), round(rate.high, 2)) == (0.44, 0.89)
    # About what 20 independent tasks support (the issue's t interval is [0.48, 0.92]).
    assert rate.high - rate.low > 2 * (0.781 - 0.604)


def test_independent_trials_keep_a_narrow_interval() -> None:
    # Every task 3 of 6: no task differs from another, so the trials look independent and
    # the interval is that of all 60 trials (the upper end of the effective size).
    rate = task_rate([(6, 3)] * 10)
    assert rate.effective_n == pytest.approx(60.0)
    clustered = task_rate([(6, 6)] * 5 + [(6, 0)] * 5)
    assert rate.high - rate.low < clustered.high - clustered.low


def _exact_one_trial_coverage(rate: float, tasks: int) -> float:
    """P(interval ∋ rate) with one trial per task, summed over the binomial."""
    pmf = scipy_stats.binom.pmf(range(tasks + 1), tasks, rate)
    hits = [task_rate([(1, 1)] * x + [(1, 0)] * (tasks - x)) for x in range(tasks + 1)]
    return float(sum(p for p, r in zip(pmf, hits, strict=True) if r.low <= rate <= r.high))


@pytest.mark.parametrize("rate", [0.3, 0.6, 0.9, 0.95])
@pytest.mark.parametrize("tasks", [10, 11, 30, 100])
def test_one_trial_per_task_holds_its_level_exactly(rate: float, tasks: int) -> None:
    # Wilson's interval, used here before, covered 89.8% at 11 tasks, rate 0.95.
    assert _exact_one_trial_coverage(rate, tasks) >= 0.93
    x = round(rate * tasks)
    assert task_rate([(1, 1)] * x + [(1, 0)] * (tasks - x)).method == "clustered"


@settings(max_examples=100, deadline=None)
@given(st.integers(3, 200), st.integers(2, 50), st.booleans())
def test_more_trials_never_widen_an_all_pass_interval(tasks: int, m: int, passed: bool) -> None:
    one = task_rate([(1, int(passed))] * tasks)
    more = task_rate([(m, m * int(passed))] * tasks)
    assert more.high - more.low <= one.high - one.low + 1e-12
    assert (one.high == 1.0 and one.low < 1.0) if passed else (one.low == 0.0 < one.high)


def test_two_tasks_are_too_few() -> None:
    rate = task_rate([(5, 5), (5, 4)])
    assert rate.method == "too_few" and (rate.low, rate.high) == (0.0, 1.0)
    assert rate.value == pytest.approx(0.9)


def test_a_single_task_is_the_wilson_interval_of_its_trials() -> None:
    rate = task_rate([(8, 6)])
    assert rate.method == "task" and (rate.low, rate.high) == pytest.approx(wilson_interval(6, 8))


@pytest.mark.parametrize("counts", [[(5, 5)] * 20, [(5, 0)] * 20, [(3, 3)] * 3])
def test_all_pass_or_all_fail_never_gives_a_zero_width_interval(
    counts: list[tuple[int, int]],
) -> None:
    rate = task_rate(counts)
    assert rate.high - rate.low > 0.1
    assert rate.low <= rate.value <= rate.high


def test_unequal_trial_counts_weigh_tasks_equally() -> None:
    # Pooled, 9 of 11 trials passed (0.82); per task, 1.0 and 0.0 (and 1.0): 2/3.
    rate = task_rate([(9, 9), (1, 0), (1, 1)])
    assert rate.value == pytest.approx(2 / 3)
    assert task_rate([]).value is None
    with pytest.raises(ValueError):
        task_rate([(3, 4)])


def test_tasks_without_a_valid_trial_are_left_out() -> None:
    assert task_rate([(0, 0), (4, 2), (4, 4)]) == task_rate([(4, 2), (4, 4)])


# --- coverage by simulation -------------------------------------------------------------


def _beta_binomial(
    rng: np.random.Generator, p: float, icc: float, tasks: int, m: int, reps: int
) -> np.ndarray:
    """Pass counts of `tasks` tasks × m trials whose verdicts correlate at `icc`."""
    if icc == 0:
        probs = np.full((reps, tasks), p)
    elif icc == 1:
        probs = (rng.random((reps, tasks)) < p).astype(float)
    else:  # ICC = 1 / (a + b + 1)
        s = 1 / icc - 1
        probs = rng.beta(p * s, (1 - p) * s, (reps, tasks))
    return rng.binomial(m, probs)


@cache
def _covers(counts: tuple[int, ...], m: int, p: float) -> bool:
    rate = task_rate([(m, c) for c in counts])
    return rate.low <= p <= rate.high


def test_coverage_by_simulation_at_several_iccs() -> None:
    """≥ 93% at nominal 95% for ICC 0–1, rates 0.5–0.95, 10–50 tasks of 5 trials."""
    reps, m = 300, 5
    table = {}
    for icc in (0.0, 0.3, 0.7, 1.0):
        for p in (0.5, 0.8, 0.95):
            for tasks in (10, 20, 50):
                rng = np.random.default_rng(hash((icc, p, tasks)) % 2**32)
                draws = _beta_binomial(rng, p, icc, tasks, m, reps)
                hits = sum(_covers(tuple(sorted(row)), m, p) for row in draws.tolist())
                table[(icc, p, tasks)] = hits / reps
    low = {key: cov for key, cov in table.items() if cov < 0.93}
    assert not low, low


def test_coverage_of_the_pooled_wilson_interval_is_what_the_issue_says() -> None:
    """The interval this replaces: at ICC 0.7 it covers far less than 95%."""
    rng = np.random.default_rng(0)
    draws = _beta_binomial(rng, 0.8, 0.7, 20, 5, 400)
    hits = 0
    for row in draws:
        low, high = wilson_interval(int(row.sum()), 100)
        hits += low <= 0.8 <= high
    assert hits / 400 < 0.8


# --- properties ---------------------------------------------------------------------------

task_counts = st.integers(1, 8).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n)))


@settings(max_examples=300, deadline=None)
@given(st.lists(task_counts, min_size=1, max_size=30), st.sampled_from([0.8, 0.9, 0.95, 0.99]))
@example(counts=[(3, 0), (3, 0), (3, 1), (3, 1), (3, 1)], confidence=0.8)  # 25 / (5/3) > 15
def test_interval_contains_the_estimate_and_stays_in_range(
    counts: list[tuple[int, int]], confidence: float
) -> None:
    rate = task_rate(counts, confidence)
    assert rate.value is not None
    assert 0.0 <= rate.low <= rate.value <= rate.high <= 1.0
    if rate.method != "too_few":
        assert len(counts) <= (rate.effective_n or 0) + 1e-9 <= sum(n for n, _ in counts) + 1e-9


@settings(max_examples=300, deadline=None)
@given(st.lists(task_counts, min_size=1, max_size=30))
def test_pass_hat_k_never_rises_with_k(counts: list[tuple[int, int]]) -> None:
    values = [pass_hat_k_tasks(counts, k) for k in range(1, 10)]
    defined = [v for v in values if v is not None]
    assert len(defined) == complete_k(counts)  # every k up to the smallest count, no more
    assert all(a >= b for a, b in itertools.pairwise(defined))


# --- quantiles ----------------------------------------------------------------------------


@pytest.mark.parametrize("q", [0.005, 0.025, 0.3, 0.975, 0.995])
@pytest.mark.parametrize(("a", "b"), [(0.1, 3.0), (0.5, 0.5), (2.0, 9.0), (14.5, 7.2), (300, 2)])
def test_beta_quantile_matches_scipy(q: float, a: float, b: float) -> None:
    expected = float(scipy_stats.beta.ppf(q, a, b))
    assert beta_quantile(q, a, b) == pytest.approx(expected, rel=1e-9, abs=1e-14)


def test_quantiles_reject_bad_input() -> None:
    for bad in ((0.0, 1.0, 1.0), (0.5, 0.0, 1.0), (1.0, 2.0, 2.0)):
        with pytest.raises(ValueError):
            beta_quantile(*bad)
    assert normal_quantile(0.975) == pytest.approx(t_quantile(0.975, 1e9), abs=1e-6)


# --- the paired difference of two rates ----------------------------------------------------


def test_many_tasks_that_moved_get_the_paired_t() -> None:
    rng = np.random.default_rng(4)
    base = rng.binomial(5, rng.beta(2, 2, 400)) / 5
    cand = np.clip(base - rng.binomial(5, 0.1, 400) / 5, 0, 1)
    diff = rate_difference(list(base), list(cand), [5] * 400, [5] * 400)
    ci = scipy_stats.ttest_rel(cand, base).confidence_interval()
    assert diff is not None and diff.low is not None and diff.high is not None
    width = ci.high - ci.low
    assert diff.low == pytest.approx(ci.low, abs=0.02 * width)
    assert diff.high == pytest.approx(ci.high, abs=0.02 * width)


def test_one_task_with_fewer_trials_does_not_set_the_step_of_all() -> None:
    rng = np.random.default_rng(8)
    base = list(rng.binomial(5, 0.7, 30) / 5)
    cand = list(rng.binomial(5, 0.6, 30) / 5)
    even = rate_difference(base, cand, [5] * 30, [5] * 30)
    one_short = rate_difference(base, cand, [1] + [5] * 29, [5] * 30)
    assert even is not None and one_short is not None
    assert even.low is not None and even.high is not None
    assert one_short.low is not None and one_short.high is not None
    width = even.high - even.low
    assert width < one_short.high - one_short.low < 1.05 * width


def test_four_of_thirty_regressed_is_found_as_mcnemars_asymptotic_test_finds_it() -> None:
    # Issue 27: the exact test (p = 2/16 = 0.125) missed what the paired t finds; one trial
    # per task is Tango's interval, which excludes 0 where McNemar's z = (c − b)/√(b + c)
    # passes 1.96: 4 of 30 regressed (z = 2) is found, 3 (z = 1.73) is not.
    base = [1.0] * 30
    for regressed, found in ((4, True), (3, False)):
        cand = [0.0] * regressed + [1.0] * (30 - regressed)
        diffs = np.subtract(cand, base)
        t_high = diffs.mean() + t_quantile(0.975, 29) * diffs.std(ddof=1) / 30**0.5
        assert (t_high < 0) == found and mcnemar_exact(regressed, 0) > 0.05
        diff = rate_difference(base, cand, [1] * 30, [1] * 30)
        assert diff is not None and diff.high is not None and (diff.high < 0) == found


def test_no_task_moved_is_not_a_zero_width_no_change() -> None:
    # A paired t gives [0, 0]; Tango's interval keeps a width: its score at ±z is
    # ∓n·Δ/√(n·Δ(1 − Δ)), so the ends are ±z²/(n + z²)
    diff = rate_difference([1.0] * 20, [1.0] * 20, [1] * 20, [1] * 20)
    assert diff is not None and diff.low is not None and diff.high is not None
    z2 = 1.959963984540054**2
    assert (diff.low, diff.high) == (pytest.approx(-z2 / (20 + z2)), pytest.approx(z2 / (20 + z2)))
    # several trials per task: one more task up and one down by a trial's worth
    diff = rate_difference([1.0] * 20, [1.0] * 20, [3] * 20, [3] * 20)
    assert diff is not None and diff.low is not None and diff.high is not None
    half = t_quantile(0.975, 19) * (2 / 9 / 19 / 20) ** 0.5
    assert (diff.low, diff.high) == (pytest.approx(-half), pytest.approx(half))


def test_two_tasks_that_both_regress_are_too_few_to_conclude() -> None:
    # The issue's case: a t interval of [-1, -1], "significant", beside McNemar p = 0.5.
    diff = rate_difference([1.0, 1.0], [0.0, 0.0], [1, 1], [1, 1])
    assert diff is not None and diff.mean == -1.0
    assert (diff.low, diff.high) == (-1.0, 1.0) and not diff.conclusive


def test_identical_small_runs_are_not_shown_equal() -> None:
    for values in ([1.0, 0.0], [1.0, 0.0] * 5):
        n = len(values)
        diff = rate_difference(values, values, [3] * n, [3] * n)
        assert diff is not None and diff.mean == 0.0
        assert diff.low is not None and diff.high is not None
        assert diff.low < -0.1 and diff.high > 0.1  # no zero-width "no change"


def test_ten_tasks_that_all_regress_keep_an_honest_width() -> None:
    diff = rate_difference([1.0] * 10, [0.0] * 10, [5] * 10, [5] * 10)
    assert diff is not None and diff.conclusive and diff.low == -1.0
    assert diff.high is not None and -0.9 < diff.high < -0.3


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 25).flatmap(
        lambda t: st.tuples(
            st.lists(st.integers(0, 4), min_size=t, max_size=t),
            st.lists(st.integers(0, 4), min_size=t, max_size=t),
        )
    )
)
def test_rate_difference_contains_the_difference_and_stays_in_range(
    passes: tuple[list[int], list[int]],
) -> None:
    base, cand = ([c / 4 for c in side] for side in passes)
    diff = rate_difference(base, cand, [4] * len(base), [4] * len(cand))
    assert diff is not None and diff.low is not None and diff.high is not None
    assert -1.0 <= diff.low <= diff.mean <= diff.high <= 1.0
    assert diff.conclusive == (len(base) >= MIN_TASKS)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(MIN_TASKS, 30).flatmap(
        lambda t: st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=t, max_size=t)
    )
)
def test_swapping_the_runs_mirrors_the_interval(pairs: list[tuple[int, int]]) -> None:
    base, cand = [b / 3 for b, _ in pairs], [c / 3 for _, c in pairs]
    units = [3] * len(pairs)
    one, other = (
        rate_difference(base, cand, units, units),
        rate_difference(cand, base, units, units),
    )
    assert one is not None and other is not None
    assert one.low is not None and one.high is not None
    assert other.low is not None and other.high is not None
    assert (one.low, one.high) == (pytest.approx(-other.high), pytest.approx(-other.low))


def test_rate_difference_coverage_by_simulation() -> None:
    """Two runs of the same 20 tasks (shared difficulty, ICC 0.5), a true drop of 0.1."""
    rng = np.random.default_rng(3)
    reps, tasks, m, hits = 400, 20, 5, 0
    for _ in range(reps):
        probs = rng.beta(0.8, 0.8, tasks)  # ICC 1/(0.8 + 0.8 + 1) ≈ 0.38
        shifted = np.clip(probs - 0.1, 0, 1)
        truth = float(shifted.mean() - probs.mean())
        base = rng.binomial(m, probs) / m
        cand = rng.binomial(m, shifted) / m
        diff = rate_difference(list(base), list(cand), [m] * tasks, [m] * tasks)
        assert diff is not None and diff.low is not None and diff.high is not None
        hits += diff.low <= truth <= diff.high
    assert hits / reps >= 0.93


@pytest.mark.parametrize(
    ("trials", "margin", "tasks"), [(1, 0.05, 73), (5, 0.05, 13), (1, 0.02, 189), (5, 0.02, 30)]
)
def test_all_pass_runs_are_non_inferior_from_the_readme_task_counts(
    trials: int, margin: float, tasks: int
) -> None:
    # README, Non-inferiority: one trial per task, Tango's lower end −z²/(T + z²) passes
    # −margin from T > z²(1 − margin)/margin; m >= 2 trials, about 2.8/(m·margin) + 2 tasks.
    def lower(t: int) -> float:
        diff = rate_difference([1.0] * t, [1.0] * t, [trials] * t, [trials] * t)
        assert diff is not None and diff.low is not None
        return diff.low

    assert lower(tasks) > -margin >= lower(tasks - 1)
    if trials == 1:
        assert tasks == math.floor(1.959963984540054**2 * (1 - margin) / margin) + 1
    else:
        assert tasks == pytest.approx(2.8 / (trials * margin) + 2, abs=2)
