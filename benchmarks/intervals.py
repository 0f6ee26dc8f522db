"""Coverage and power of proctor's intervals, by simulation (issue 27; docs/architecture.md,
Metrics).

Two runs of the same tasks share each task's difficulty: task i passes a baseline trial
with probability p_i ~ Beta (mean `rate`, intraclass correlation `icc`) and a candidate
trial with p_i·(1 − drop/rate), so every task loses the same share and the candidate's
mean is rate − drop. Each run has `trials` trials per task. For every cell of the grid
(ICC × rate × tasks × trials) the benchmark draws `--runs` pairs of runs with no drop and
with a 10-point drop, and calls proctor's own `paired.rate_difference` on each:

- coverage: the share of intervals containing the true difference, the smaller of the two;
- power: the share of intervals wholly below 0 under the drop, beside the paired t's
  (the textbook interval on per-task differences, T − 1 degrees of freedom), with its
  coverage, and McNemar's exact test's on per-task majority verdicts;
- the summary's minimal detectable effect for the cell's rate, ICC, tasks and trials, and
  how often compare finds a drop of that size (80% is promised);
- with one trial per task, exactly (summed over the multinomial of improved, regressed and
  unchanged tasks, not simulated): the coverage of compare's interval, and how often a
  candidate exactly `margin` worse passes non-inferiority (one-sided, nominal 2.5%);
- the exact coverage of the one-trial headline interval (`stats.task_rate`), summed over
  the binomial, not simulated.

    python benchmarks/intervals.py [--runs 1000] [--json benchmarks/intervals.json]

`make readme-figures` runs it with `--runs 2000 --json benchmarks/intervals.json` (about
30 s; a figure's simulation error is then about a point) and writes the tables
into docs/architecture.md (examples/figures.py); a smaller run is
tests/test_interval_benchmark.py. Data are drawn with numpy (seeded); intervals are
proctor's, one call per simulated run.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from proctor.decide.compare import DEFAULT_MARGIN
from proctor.stats import paired
from proctor.stats import rates as stats
from proctor.stats.distributions import t_quantile

ICCS = (0.1, 0.4, 0.8)
RATES = (0.3, 0.6, 0.9)
TASKS = (10, 30, 100)
TRIALS = (1, 3, 5)
DROP = 0.1
#: One-trial exact coverage: the grid's rates, and the rate the issue found Wilson short at.
ONE_TRIAL_RATES = (*RATES, 0.95)
ONE_TRIAL_TASKS = (*TASKS, 11)


def draw(
    rng: np.random.Generator,
    rate: float,
    icc: float,
    tasks: int,
    trials: int,
    drop: float,
    runs: int,
) -> tuple[np.ndarray, np.ndarray]:
    """`runs` pairs of runs: per-task pass rates of baseline and candidate, (runs, tasks)."""
    k = 1.0 / icc - 1.0
    p = rng.beta(rate * k, (1.0 - rate) * k, size=(runs, tasks))
    base = rng.binomial(trials, p) / trials
    cand = rng.binomial(trials, p * (1.0 - drop / rate)) / trials
    return base, cand


def paired_t(diffs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The paired t interval of each row's mean difference (the reference for power)."""
    tasks = diffs.shape[1]
    half = t_quantile(0.975, tasks - 1) * diffs.std(axis=1, ddof=1) / math.sqrt(tasks)
    mean = diffs.mean(axis=1)
    return mean - half, mean + half


def proctor_intervals(base: np.ndarray, cand: np.ndarray, trials: int) -> np.ndarray:
    """proctor's rate-difference interval for each pair of runs, (runs, 2)."""
    units = [trials] * base.shape[1]
    out = np.empty((base.shape[0], 2))
    for i, (b, c) in enumerate(zip(base.tolist(), cand.tolist(), strict=True)):
        diff = paired.rate_difference(b, c, units, units)
        assert diff is not None and diff.low is not None and diff.high is not None
        out[i] = (diff.low, diff.high)
    return out


def cell(
    rng: np.random.Generator, rate: float, icc: float, tasks: int, trials: int, runs: int
) -> dict[str, float]:
    """Coverage (worse of no drop and DROP) and power at DROP, proctor's and the t's."""
    out: dict[str, float] = {}
    for drop in (0.0, DROP):
        base, cand = draw(rng, rate, icc, tasks, trials, drop, runs)
        ours = proctor_intervals(base, cand, trials)
        t_low, t_high = paired_t(cand - base)
        for name, low, high in (("proctor", ours[:, 0], ours[:, 1]), ("t", t_low, t_high)):
            covered = float(np.mean((low <= -drop) & (-drop <= high)))
            key = f"{name}_coverage"
            out[key] = min(out.get(key, 1.0), covered)
            if drop:
                out[f"{name}_power"] = float(np.mean(high < 0.0))
        if drop:
            out["mcnemar_power"] = mcnemar_power(base, cand)
    mde = stats.minimal_detectable_effect(rate, tasks, trials, icc=icc)
    out["mde"] = mde
    if mde is not None:
        base, cand = draw(rng, rate, icc, tasks, trials, mde, runs)
        out["mde_power"] = float(np.mean(proctor_intervals(base, cand, trials)[:, 1] < 0.0))
    return out


def mcnemar_power(base: np.ndarray, cand: np.ndarray) -> float:
    """Share of pairs of runs where McNemar's exact test on per-task majority verdicts (what
    compare's slices use) finds the candidate worse at 5%: the exact test for reference."""
    b_pass, c_pass = base > 0.5, cand > 0.5
    regressed = (b_pass & ~c_pass).sum(axis=1).tolist()
    improved = (~b_pass & c_pass).sum(axis=1).tolist()
    found = [
        r > i and paired.mcnemar_exact(r, i) < 0.05
        for r, i in zip(regressed, improved, strict=True)
    ]
    return float(np.mean(found))


def discordance(rate: float, icc: float, drop: float) -> tuple[float, float]:
    """P(improved), P(regressed) of a task with one trial per run under `draw`'s model."""
    shrink = 1.0 - drop / rate
    second = icc * rate * (1.0 - rate) + rate * rate  # E[p²]
    return shrink * (rate - second), rate - shrink * second


def one_trial_paired(tasks: int, cells: list[tuple[float, float]], margin: float) -> list[Any]:
    """Exact coverage and non-inferiority level of compare's one-trial interval.

    With one trial per task a pair of runs is a multinomial draw of (improved, regressed,
    unchanged) tasks, whatever the ICC, so both are sums over every outcome of
    `paired.rate_difference` (computed once per outcome), not simulated: coverage the
    worse of no drop and DROP, non-inferiority the chance that a candidate exactly
    `margin` worse passes (one-sided, nominal 2.5%).
    """
    outcomes = [(a, b) for a in range(tasks + 1) for b in range(tasks + 1 - a)]
    bounds = {}
    for a, b in outcomes:
        base = [0.0] * a + [1.0] * b + [1.0] * (tasks - a - b)
        cand = [1.0] * a + [0.0] * b + [1.0] * (tasks - a - b)
        diff = paired.rate_difference(base, cand, [1] * tasks, [1] * tasks)
        assert diff is not None and diff.low is not None and diff.high is not None
        bounds[a, b] = (diff.low, diff.high)

    def chance(rate: float, icc: float, drop: float, hit: Any) -> float:
        up, down = discordance(rate, icc, drop)
        same = 1.0 - up - down
        total = 0.0
        for a, b in outcomes:
            if hit(*bounds[a, b]):
                ways = math.comb(tasks, a) * math.comb(tasks - a, b)
                total += ways * up**a * down**b * same ** (tasks - a - b)
        return total

    return [
        {
            "icc": icc,
            "rate": rate,
            "tasks": tasks,
            "coverage": min(
                chance(rate, icc, drop, lambda lo, hi, d=drop: lo <= -d <= hi)
                for drop in (0.0, DROP)
            ),
            "passed": chance(rate, icc, margin, lambda lo, _hi: lo > -margin),
        }
        for icc, rate in cells
    ]


def one_trial_coverage(rate: float, tasks: int) -> float:
    """Exact coverage of the headline interval with one trial per task: Σ over passes."""
    total = 0.0
    for passed in range(tasks + 1):
        interval = stats.task_rate([(1, 1)] * passed + [(1, 0)] * (tasks - passed))
        if interval.low <= rate <= interval.high:
            total += math.comb(tasks, passed) * rate**passed * (1.0 - rate) ** (tasks - passed)
    return total


def simulate(runs: int, *, seed: int = 0, grid: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every table of the benchmark as JSON; `grid` narrows ICCS/RATES/TASKS/TRIALS."""
    g = {"iccs": ICCS, "rates": RATES, "tasks": TASKS, "trials": TRIALS, **(grid or {})}
    rng = np.random.default_rng(seed)
    cells = [
        {"icc": icc, "rate": rate, "tasks": t, "trials": m, **cell(rng, rate, icc, t, m, runs)}
        for icc in g["iccs"]
        for rate in g["rates"]
        for t in g["tasks"]
        for m in g["trials"]
    ]
    margin = DEFAULT_MARGIN
    ni = [
        row
        for t in g["tasks"]
        for row in one_trial_paired(t, [(i, r) for i in g["iccs"] for r in g["rates"]], margin)
    ]
    exact = [
        {"rate": rate, "tasks": t, "coverage": one_trial_coverage(rate, t)}
        for rate in ONE_TRIAL_RATES
        for t in ONE_TRIAL_TASKS
    ]
    return {
        "runs": runs,
        "seed": seed,
        "drop": DROP,
        "margin": margin,
        "cells": cells,
        "non_inferiority": ni,
        "one_trial": exact,
    }


def _pct(value: float) -> str:
    return f"{100 * value:.1f}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    return "\n".join([*lines, *("| " + " | ".join(r) + " |" for r in rows)])


def paired_tables(result: dict[str, Any]) -> str:
    """Coverage and power of the paired difference, and non-inferiority, as Markdown."""
    cells = result["cells"]
    columns = sorted({(c["tasks"], c["trials"]) for c in cells})
    rows = sorted({(c["icc"], c["rate"]) for c in cells})
    at = {(c["icc"], c["rate"], c["tasks"], c["trials"]): c for c in cells}
    header = ["ICC, rate", *(f"{t}×{m}" for t, m in columns)]

    def grid(fmt: Any) -> str:
        body = [
            [f"{icc}, {rate}", *(fmt(at[icc, rate, t, m]) for t, m in columns)]
            for icc, rate in rows
        ]
        return _table(header, body)

    ni = result["non_inferiority"]
    ni_cols = sorted({r["tasks"] for r in ni})
    ni_at = {(r["icc"], r["rate"], r["tasks"]): r for r in ni}
    ni_table = _table(
        ["ICC, rate", *(f"{t} tasks" for t in ni_cols)],
        [
            [
                f"{icc}, {rate}",
                *(
                    f"{_pct(ni_at[icc, rate, t]['coverage'])} / "
                    f"{_pct(ni_at[icc, rate, t]['passed'])}"
                    for t in ni_cols
                ),
            ]
            for icc, rate in rows
        ],
    )
    return "\n\n".join(
        [
            f"Coverage, % (the worse of no drop and a {_pct(result['drop'])}-point drop; "
            f"columns: tasks × trials; {result['runs']:,} runs per cell, seed {result['seed']}):",
            grid(lambda c: _pct(c["proctor_coverage"])),
            "Power against the drop, % (proctor / the paired t / McNemar's exact test on "
            "per-task majority verdicts):",
            grid(
                lambda c: (
                    f"{_pct(c['proctor_power'])} / {_pct(c['t_power'])} / "
                    f"{_pct(c['mcnemar_power'])}"
                )
            ),
            "Coverage of the paired t, % (where it is 93% or more, it is the power to match):",
            grid(lambda c: _pct(c["t_coverage"])),
            "The summary's minimal detectable effect, points, and how often compare finds a "
            "drop of that size, % (80% promised; — : too few tasks to detect any drop):",
            grid(
                lambda c: "—" if c["mde"] is None else f"{_pct(c['mde'])} ({_pct(c['mde_power'])})"
            ),
            "One trial per task, exact (summed over every outcome, not simulated): coverage "
            "of compare's interval, % (Tango's score interval; the worse of no drop and the "
            f"drop) / candidates exactly the non-inferiority margin ({_pct(result['margin'])} "
            "points) worse that pass, % (nominal 2.5):",
            ni_table,
        ]
    )


def one_trial_table(result: dict[str, Any]) -> str:
    """Exact coverage of the one-trial success interval, as Markdown."""
    one = result["one_trial"]
    cols = sorted({r["tasks"] for r in one})
    at = {(r["rate"], r["tasks"]): r["coverage"] for r in one}
    rates = sorted({r["rate"] for r in one})
    return _table(
        ["one trial per task: rate", *(f"{t} tasks" for t in cols)],
        [[str(rate), *(f"{_pct(at[rate, t])}%" for t in cols)] for rate in rates],
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000, help="simulated runs per cell")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    result = simulate(args.runs, seed=args.seed)
    print(paired_tables(result), one_trial_table(result), sep="\n\n")
    print(f"\n{time.perf_counter() - start:.0f} s", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
