"""Paired statistics (proctor.stats.paired) and power (proctor.stats.rates) against scipy,
brute force and simulation."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import proctor
from proctor.stats.distributions import _t_upper_tail, t_quantile
from proctor.stats.paired import (
    MIN_TASKS,
    bootstrap_mean_interval,
    holm,
    mcnemar_exact,
    paired_difference,
    paired_proportion_interval,
    rate_difference,
    tango_score,
)
from proctor.stats.rates import (
    design_effect,
    icc_anova,
    minimal_detectable_effect,
    percentile,
    tasks_needed,
)

scipy_stats = pytest.importorskip("scipy.stats")

# --- Student t -------------------------------------------------------------------------


@pytest.mark.parametrize("df", [0.5, 1, 1.5, 2, 3, 4, 7, 19, 30, 120, 5000])
@pytest.mark.parametrize(
    "p", [1e-9, 0.0005, 0.025, 0.1, 0.4999, 0.6, 0.9, 0.975, 0.995, 0.9999, 1 - 1e-9]
)
def test_t_quantile_matches_scipy(df: float, p: float) -> None:
    expected = float(scipy_stats.t.ppf(p, df))
    assert t_quantile(p, df) == pytest.approx(expected, rel=1e-9, abs=1e-12)


@settings(max_examples=300, deadline=None)
@given(
    st.floats(1e-12, 1 - 1e-12).filter(lambda p: p != 0.5),
    st.floats(0.2, 1e7),
)
def test_t_quantile_inverts_the_tail_it_is_solved_on(p: float, df: float) -> None:
    """Newton's steps stop at the root of the tail, not beside it: the tail at the
    quantile is the probability asked, to the tail's own precision (~1e-10 at a million
    degrees of freedom, where its two branches meet); the sign follows p."""
    t = t_quantile(p, df)
    tail = min(p, 1.0 - p)
    assert (t > 0) == (p > 0.5)
    assert _t_upper_tail(abs(t), df) == pytest.approx(tail, rel=1e-9, abs=1e-16)


def test_t_quantile_domain() -> None:
    assert t_quantile(0.5, 3) == 0.0
    for bad in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError):
            t_quantile(bad, 3)
    with pytest.raises(ValueError):
        t_quantile(0.9, 0)


# --- paired difference -----------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_paired_difference_is_the_paired_t_interval(seed: int) -> None:
    rng = np.random.default_rng(seed)
    tasks = int(rng.integers(3, 40))
    base = rng.integers(0, 6, tasks) / 5  # per-task success over 5 trials
    cand = np.clip(base + rng.normal(0.03, 0.2, tasks), 0, 1)
    result = paired_difference(list(cand - base))
    ref = scipy_stats.ttest_rel(cand, base).confidence_interval(0.95)
    assert result is not None and result.tasks == tasks
    assert result.mean == pytest.approx(float(np.mean(cand - base)), abs=1e-12)
    assert result.se == pytest.approx(float(np.std(cand - base, ddof=1) / math.sqrt(tasks)))
    assert (result.low, result.high) == (
        pytest.approx(float(ref.low), abs=1e-9),
        pytest.approx(float(ref.high), abs=1e-9),
    )


def test_paired_difference_degenerate() -> None:
    assert paired_difference([]) is None
    one = paired_difference([0.5])
    assert one is not None and one.mean == 0.5 and one.se is None and one.low is None


def test_sixteen_to_seventeen_of_twenty_is_not_significant() -> None:
    # One task flips from fail to pass; nothing else changes (k = 1).
    base = [1] * 16 + [0] * 4
    cand = [1] * 17 + [0] * 3
    diff = paired_difference([c - b for b, c in zip(base, cand, strict=True)])
    assert diff is not None and diff.mean == pytest.approx(0.05)
    assert diff.low is not None and diff.high is not None
    assert diff.low < 0 < diff.high
    boot = bootstrap_mean_interval([c - b for b, c in zip(base, cand, strict=True)])
    assert boot is not None and boot[0] <= 0 <= boot[1]
    assert mcnemar_exact(0, 1) == 1.0


# --- McNemar ---------------------------------------------------------------------------


@pytest.mark.parametrize(("b", "c"), [(0, 0), (0, 1), (1, 0), (3, 3), (6, 0), (2, 9), (40, 25)])
def test_mcnemar_matches_exact_binomial_test(b: int, c: int) -> None:
    expected = 1.0 if b + c == 0 else scipy_stats.binomtest(b, b + c, 0.5).pvalue
    assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-12)


def test_mcnemar_by_enumeration() -> None:
    # Under H0 each discordant task flips a fair coin; p = P(outcome as or more extreme).
    b, c = 2, 7
    n = b + c
    extreme = min(b, c)
    outcomes = list(itertools.product((0, 1), repeat=n))
    tail = sum(1 for o in outcomes if min(sum(o), n - sum(o)) <= extreme)
    assert mcnemar_exact(b, c) == pytest.approx(tail / len(outcomes), rel=1e-12)
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)


def test_holm_by_hand_and_by_its_definition() -> None:
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    rng = np.random.default_rng(4)
    p = list(rng.random(12) ** 3)
    adjusted = holm(p)
    order = np.argsort(p)
    steps = [min(1.0, (len(p) - r) * p[i]) for r, i in enumerate(order)]
    expected = np.empty(len(p))
    expected[order] = np.maximum.accumulate(steps)
    assert adjusted == pytest.approx(list(expected))
    assert all(a >= b for a, b in zip(adjusted, p, strict=True))
    assert holm([]) == []


# --- Tango's score interval (one trial per task) --------------------------------------


def _score_by_likelihood(improved: int, regressed: int, tasks: int, delta: float) -> float:
    """Tango's statistic with P(regressed) under H0 found by maximising the multinomial
    likelihood numerically (scipy), not by the closed-form root proctor uses."""
    optimize = pytest.importorskip("scipy.optimize")
    rest = tasks - improved - regressed

    def minus_log_likelihood(p21: float) -> float:
        cells = ((improved, p21 + delta), (regressed, p21), (rest, 1.0 - 2.0 * p21 - delta))
        return -sum(x * math.log(max(p, 1e-300)) for x, p in cells if x)

    low, high = max(0.0, -delta), (1.0 - delta) / 2.0
    p21 = optimize.minimize_scalar(
        minus_log_likelihood, bounds=(low, high), method="bounded", options={"xatol": 1e-12}
    ).x
    return (improved - regressed - tasks * delta) / math.sqrt(
        tasks * (2.0 * p21 + delta * (1.0 - delta))
    )


@settings(max_examples=150, deadline=None)
@given(st.integers(6, 200), st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.floats(-0.9, 0.9))
def test_tango_score_is_the_score_statistic(
    tasks: int, up: float, down: float, delta: float
) -> None:
    improved = round(up * tasks)
    regressed = round(down * (tasks - improved))
    reference = _score_by_likelihood(improved, regressed, tasks, delta)
    assert tango_score(improved, regressed, tasks, delta) == pytest.approx(reference, abs=1e-4)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 150), st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_tango_interval_inverts_mcnemars_asymptotic_test(
    tasks: int, up: float, down: float
) -> None:
    improved = round(up * tasks)
    regressed = round(down * (tasks - improved))
    low, high = paired_proportion_interval(improved, regressed, tasks)
    estimate = (improved - regressed) / tasks
    assert -1.0 <= low <= estimate <= high <= 1.0
    # swapping the runs mirrors the interval
    mirror = paired_proportion_interval(regressed, improved, tasks)
    assert mirror == pytest.approx((-high, -low), abs=1e-8)
    z = scipy_stats.norm.ppf(0.975)
    # every end inside (-1, 1) is a root of the score at ±z
    if low > -1.0 + 1e-8:
        assert tango_score(improved, regressed, tasks, low) == pytest.approx(z, abs=1e-5)
    if high < 1.0 - 1e-8:
        assert tango_score(improved, regressed, tasks, high) == pytest.approx(-z, abs=1e-5)
    # 0 is outside exactly when McNemar's test without continuity correction rejects
    moved = improved + regressed
    if moved:
        chi2 = (improved - regressed) ** 2 / moved
        if abs(chi2 - z * z) > 1e-6:
            assert (low > 0.0 or high < 0.0) == (chi2 > z * z)
    else:
        assert low < 0.0 < high


def test_tango_interval_against_statsmodels_mcnemar_and_worked_cases() -> None:
    tables = pytest.importorskip("statsmodels.stats.contingency_tables")
    for improved, regressed in ((3, 7), (0, 4), (12, 2)):
        table = [[0, improved], [regressed, 0]]
        chi2 = tables.mcnemar(table, exact=False, correction=False).statistic
        assert tango_score(improved, regressed, 30, 0.0) ** 2 == pytest.approx(chi2)
    # four of 30 tasks regressed, none improved: McNemar's z is exactly 2 > 1.96, so the
    # interval is below 0 (the exact test's p is 0.125: it found nothing)
    low, high = paired_proportion_interval(0, 4, 30)
    assert high < 0.0 and mcnemar_exact(0, 4) > 0.05
    assert (low, high) == pytest.approx((-0.29681327, -0.00468482), abs=1e-7)
    # nothing moved among 10 tasks: a symmetric interval with width
    assert paired_proportion_interval(0, 0, 10) == pytest.approx((-0.27753280, 0.27753280))
    with pytest.raises(ValueError):
        paired_proportion_interval(5, 6, 10)


def test_rate_difference_with_one_trial_per_task_is_tangos_interval() -> None:
    base = [1.0] * 20 + [0.0] * 10
    cand = [0.0] * 4 + [1.0] * 16 + [1.0] * 1 + [0.0] * 9
    diff = rate_difference(base, cand, [1] * 30, [1] * 30)
    assert diff is not None
    assert (diff.low, diff.high) == pytest.approx(paired_proportion_interval(1, 4, 30))
    # below MIN_TASKS nothing is concluded, whatever moved
    few = rate_difference([1.0] * 5, [0.0] * 5, [1] * 5, [1] * 5)
    assert few is not None and (few.low, few.high) == (-1.0, 1.0)


# --- paired bootstrap ------------------------------------------------------------------


def test_bootstrap_is_seeded_and_resamples_tasks() -> None:
    values = [0.0, 0.2, -0.4, 1.0, 0.0, 0.6, -0.2]
    assert bootstrap_mean_interval(values, seed=3) == bootstrap_mean_interval(values, seed=3)
    assert bootstrap_mean_interval(values, seed=3) != bootstrap_mean_interval(values, seed=4)
    low, high = bootstrap_mean_interval([0.25] * 6) or (None, None)
    assert low == high == 0.25
    assert bootstrap_mean_interval([]) is None


def test_bootstrap_matches_the_exact_bootstrap_distribution() -> None:
    # With 4 tasks there are 4^4 equally likely resamples: the exact bootstrap distribution.
    values = [0.0, 1.0, -1.0, 0.5]
    means = [sum(s) / 4 for s in itertools.product(values, repeat=4)]
    exact = (percentile(means, 2.5), percentile(means, 97.5))
    got = bootstrap_mean_interval(values, resamples=40_000, seed=1)
    assert got is not None
    assert got[0] == pytest.approx(exact[0], abs=0.07)
    assert got[1] == pytest.approx(exact[1], abs=0.07)


def test_bootstrap_agrees_with_scipy_percentile_bootstrap() -> None:
    rng = np.random.default_rng(11)
    values = rng.normal(0.05, 0.3, 30)
    ours = bootstrap_mean_interval(list(values), resamples=20_000, seed=2)
    ref = scipy_stats.bootstrap(
        (values,), np.mean, n_resamples=20_000, method="percentile", random_state=2
    ).confidence_interval
    assert ours is not None
    assert ours[0] == pytest.approx(ref.low, abs=0.01)
    assert ours[1] == pytest.approx(ref.high, abs=0.01)


# --- power -----------------------------------------------------------------------------


@settings(max_examples=120, deadline=None)
@given(
    st.floats(0.05, 0.95),
    st.floats(0.02, 0.5),
    st.booleans(),
    st.integers(1, 8),
    st.floats(0.0, 0.95),
)
def test_tasks_needed_is_the_fewest_tasks_whose_mde_reaches_the_effect(
    rate: float, size: float, rise: bool, m: int, icc: float
) -> None:
    # a rise is a drop of the failure rate: the same design with pass and fail swapped
    start, drop = (1.0 - rate, size) if rise else (rate, size)
    if drop > start:
        return
    tasks = tasks_needed(rate, size if rise else -size, m, icc=icc)
    assert tasks >= MIN_TASKS
    mde = minimal_detectable_effect(start, tasks, m, icc=icc)
    assert mde is not None and mde <= drop + 1e-5
    if tasks > MIN_TASKS:
        fewer = minimal_detectable_effect(start, tasks - 1, m, icc=icc)
        assert fewer is None or fewer >= drop - 1e-5


def test_power_figures_for_the_issue_example() -> None:
    # proctor power --baseline 0.8 --effect 0.05 --trials 5 [--icc ...]: pairing removes the
    # difficulty both runs share, so a higher ICC needs fewer tasks, not more (the unpaired
    # formula said 181 and 398)
    assert tasks_needed(0.8, 0.05, 5, icc=0.3) < tasks_needed(0.8, 0.05, 5)
    # README, Power
    assert (tasks_needed(0.8, 0.05, 5), tasks_needed(0.8, 0.05, 5, icc=0.3)) == (185, 148)
    assert tasks_needed(0.8, -0.1, 1, icc=0.8) < tasks_needed(0.8, -0.1, 1, icc=0.4)
    assert design_effect(5, 0.3) == pytest.approx(2.2)
    for bad in ((0.98, 0.05, 1), (0.8, 0.0, 1), (0.8, -0.1, 0)):
        with pytest.raises(ValueError):
            tasks_needed(*bad)


def test_proctor_power_prints_the_paired_design() -> None:
    done = proctor(
        "power", "--baseline", "0.8", "--effect", "-0.1", "--trials", "3", "--icc", "0.4"
    )
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith(f"{tasks_needed(0.8, -0.1, 3, icc=0.4)} tasks per run ")
    assert "paired" in first and "ICC 0.4" in first and "note:" not in done.stdout
    # ICC 0 is named as an assumption; a change out of [0, 1] is one line, exit 2
    assert "note: ICC 0" in proctor("power", "--baseline", "0.8", "--effect", "-0.1").stdout
    bad = proctor("power", "--baseline", "0.9", "--effect", "0.2")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


def _compare_power(
    rate: float, drop: float, tasks: int, m: int, icc: float, seed: int, *, rise: bool = False
) -> float:
    """Share of simulated baseline/candidate pairs (same tasks, shared difficulty, every
    task losing the share drop/rate) in which compare's success interval is below 0; with
    `rise`, `rate` and `drop` are of the failure rate and the interval must be above 0."""
    rng = np.random.default_rng(seed)
    sims, s = 1500, 1 / icc - 1
    probs = rng.beta(rate * s, (1 - rate) * s, (sims, tasks))
    base = rng.binomial(m, probs) / m
    cand = rng.binomial(m, probs * (1 - drop / rate)) / m
    if rise:
        base, cand = 1 - base, 1 - cand
    found = 0
    for b, c in zip(base.tolist(), cand.tolist(), strict=True):
        diff = rate_difference(b, c, [m] * tasks, [m] * tasks)
        assert diff is not None and diff.high is not None and diff.low is not None
        found += diff.low > 0 if rise else diff.high < 0
    return found / sims


@pytest.mark.parametrize(
    ("rate", "effect", "m", "icc"),
    [(0.8, -0.1, 3, 0.4), (0.9, -0.1, 1, 0.8), (0.6, 0.15, 5, 0.3), (0.7, -0.15, 1, 0.1)],
)
def test_tasks_needed_is_what_compare_needs_in_simulation(
    rate: float, effect: float, m: int, icc: float
) -> None:
    tasks = tasks_needed(rate, effect, m, icc=icc)
    start, drop = (1 - rate, effect) if effect > 0 else (rate, -effect)
    # 80% power, less three simulation standard errors (1,500 runs: 1.0 point each)
    assert _compare_power(start, drop, tasks, m, icc, seed=3, rise=effect > 0) >= 0.77
    # and not far more tasks than needed: two thirds of them find it less often
    fewer = max(MIN_TASKS, 2 * tasks // 3)
    assert _compare_power(start, drop, fewer, m, icc, seed=4, rise=effect > 0) < 0.75


@pytest.mark.parametrize(
    ("rate", "tasks", "m", "icc"), [(0.8, 30, 5, 0.3), (0.6, 100, 1, 0.1), (0.9, 12, 5, 0.8)]
)
def test_the_minimal_detectable_effect_is_what_compare_detects(
    rate: float, tasks: int, m: int, icc: float
) -> None:
    mde = minimal_detectable_effect(rate, tasks, m, icc=icc)
    assert mde is not None and 0 < mde <= rate
    # 80% power, less three simulation standard errors (1,500 runs: 1.0 point each)
    assert _compare_power(rate, mde, tasks, m, icc, seed=1) >= 0.77
    # and not a drop far larger than needed: three quarters of it is found less often
    assert _compare_power(rate, 0.75 * mde, tasks, m, icc, seed=2) < 0.75


def test_minimal_detectable_effect_edges() -> None:
    assert minimal_detectable_effect(0.0, 20, 3) is None  # nothing can drop
    # compare concludes nothing below MIN_TASKS tasks: too few tasks to detect any drop
    assert minimal_detectable_effect(0.9, MIN_TASKS - 1, 5, icc=0.1) is None
    assert minimal_detectable_effect(0.9, 10, 5, icc=0.1) is not None
    assert minimal_detectable_effect(0.3, 6, 1, icc=0.5) is None  # not even a drop to 0
    with pytest.raises(ValueError):
        minimal_detectable_effect(0.5, 20, 0)
    with pytest.raises(ValueError):
        minimal_detectable_effect(0.5, 20, 3, icc=1.5)


@settings(max_examples=150, deadline=None)
@given(
    st.floats(0.05, 1.0),
    st.integers(MIN_TASKS, 400),
    st.integers(1, 10),
    st.floats(0.0, 1.0),
)
def test_minimal_detectable_effect_shrinks_with_more_tasks_and_trials(
    rate: float, tasks: int, m: int, icc: float
) -> None:
    mde = minimal_detectable_effect(rate, tasks, m, icc=icc)
    more_tasks = minimal_detectable_effect(rate, 2 * tasks, m, icc=icc)
    more_trials = minimal_detectable_effect(rate, tasks, m + 1, icc=icc)
    if mde is None:
        return
    assert 0.0 < mde <= rate
    assert more_tasks is not None and more_tasks <= mde + 1e-6
    # one trial per task is Tango's interval, several the adjusted t whose floor of a
    # trial's step costs more below 8 tasks (at most 7 tasks, rates from 0.79 up)
    if m > 1 or tasks >= 8:
        assert more_trials is not None and more_trials <= mde + 1e-6


# --- ICC -------------------------------------------------------------------------------


def _anova_icc(groups: list[np.ndarray]) -> float:
    """Textbook one-way ANOVA ICC from raw 0/1 observations."""
    data = np.concatenate(groups)
    n_total, g = len(data), len(groups)
    grand = data.mean()
    ssb = sum(len(x) * (x.mean() - grand) ** 2 for x in groups)
    ssw = sum(((x - x.mean()) ** 2).sum() for x in groups)
    msb, msw = ssb / (g - 1), ssw / (n_total - g)
    n0 = (n_total - sum(len(x) ** 2 for x in groups) / n_total) / (g - 1)
    return float((msb - msw) / (msb + (n0 - 1) * msw))


@pytest.mark.parametrize("seed", range(4))
def test_icc_matches_anova_on_raw_trials(seed: int) -> None:
    rng = np.random.default_rng(seed)
    groups = [(rng.random(int(rng.integers(2, 8))) < rng.random()).astype(float) for _ in range(25)]
    counts = [(len(x), int(x.sum())) for x in groups]
    expected = min(1.0, max(0.0, _anova_icc(groups)))
    assert icc_anova(counts) == pytest.approx(expected, abs=1e-12)


def test_icc_recovers_a_simulated_correlation_and_handles_edges() -> None:
    rng = np.random.default_rng(9)
    probs = rng.beta(0.8 * 4, 0.2 * 4, 3000)  # ICC = 1 / (4 + 1) = 0.2
    counts = [(5, int(c)) for c in rng.binomial(5, probs)]
    assert icc_anova(counts) == pytest.approx(0.2, abs=0.03)
    assert icc_anova([(3, 3), (3, 0), (3, 3)]) == 1.0  # tasks fully consistent
    assert icc_anova([(3, 3), (3, 3)]) is None  # no variation at all
    assert icc_anova([(1, 1), (1, 0)]) is None  # one trial per task
    assert icc_anova([(5, 2)]) is None
