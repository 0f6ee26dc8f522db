"""The report's plots: which numbers each chart draws, and what its caption says.

The drawing is `proctor.report.svg`; this module picks the data from the RunSummary, the
trial results and the baseline comparison.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from proctor.core.results import TrialResult
from proctor.core.runs import RunData
from proctor.core.summary import RunSummary, SliceRow
from proctor.report import svg
from proctor.report.fmt import money

MAX_SERIES = 10
MAX_PAIRED_ROWS = 40


@dataclass(frozen=True)
class Plot:
    caption: str
    svg: str | None
    note: str


def _pass_hat_points(rates: dict[str, Any], k: int) -> list[tuple[float, float]]:
    return [(i, rates[str(i)]) for i in range(1, k + 1) if rates.get(str(i)) is not None]


def pass_hat(summary: RunSummary) -> Plot:
    """pass^k against k: the whole run, then its suite, risk and split slices."""
    k = summary.headline_k
    caption = "pass^k against k"
    if k < 2:
        return Plot(caption, None, "One trial per task: pass^k needs at least two trials.")
    slices = summary.slices
    splits = [n for n in slices if n.startswith("split:")]
    names = [
        n
        for n in slices
        if n.startswith(("suite:", "risk:")) or (n.startswith("split:") and len(splits) > 1)
    ]
    series = [svg.Series("whole run", _pass_hat_points(summary.pass_hat_k, k), "s0")]
    for i, name in enumerate(names[: MAX_SERIES - 1], start=1):
        series.append(svg.Series(name, _pass_hat_points(slices[name].pass_hat_k, k), f"s{i}"))
    drawing = svg.line_chart(
        series,
        title="pass^k against k, whole run and slices",
        desc=f"Share of tasks solved on all of k attempts, for k from 1 to {k}.",
        x_label="k (attempts that must all succeed)",
        y_label="pass^k",
    )
    note = "A steep drop from k = 1 shows an agent that succeeds only some of the time."
    return Plot(caption, drawing, note + " Every slice, tags included, is in the table below.")


def spark(slice_: SliceRow, k: int, name: str) -> str:
    values = [v for _, v in _pass_hat_points(slice_.pass_hat_k, k)]
    return svg.sparkline(values, title=f"{name}: pass^1 to pass^{k}")


def cost_success(summary: RunSummary) -> Plot:
    """Each task's mean cost per trial against its success rate, coloured by risk; a task
    whose cost nothing measured has no point."""
    points = []
    risks = set()
    for row in summary.per_task:
        trials = row.n + row.errors
        if row.success_rate is None or not trials or row.cost_usd is None:
            continue
        cost = row.cost_usd / trials
        risks.add(row.risk)
        label = f"{row.id} ({row.risk} risk): {100 * row.success_rate:.0f}% success"
        tip = f"{label}, {money(cost, at_least=row.cost_partial_trials > 0)} per trial"
        points.append((cost, row.success_rate, tip, f"risk-{row.risk}"))
    drawing = svg.scatter(
        points,
        title="cost against success per task",
        desc="One point per task: mean cost per trial (x) and share of trials passed (y).",
        x_label="mean cost per trial (USD)",
        y_label="success",
        x_fmt=lambda v: f"${v:.4f}",
        legend=[(f"{r} risk", f"risk-{r}") for r in ("high", "medium", "low") if r in risks],
    )
    return Plot("Cost against success, per task", drawing, "Hover a point for its task.")


def failures_by_kind(results: Sequence[TrialResult]) -> Plot:
    """How many valid trials had at least one failed check of each kind."""
    counts: Counter[str] = Counter()
    for r in results:
        if r.valid:
            counts.update({c.kind for c in r.failed_checks})
    caption = "Failures by check kind"
    if not counts:
        return Plot(caption, None, "No check failed.")
    rows = [
        (kind, float(n), "safety" if kind == "safety" else "kind")
        for kind, n in counts.most_common()
    ]
    drawing = svg.bars(
        rows,
        title="trials with a failed check, by check kind",
        desc="For each kind of check, the number of trials where at least one such check failed.",
        x_label="trials with a failed check of this kind",
    )
    note = "Robustness and efficiency checks are shown but do not fail a trial by themselves."
    return Plot(caption, drawing, note)


def _rates(results: Sequence[TrialResult]) -> dict[str, float]:
    trials: dict[str, list[bool]] = {}
    for r in results:
        if r.valid:
            trials.setdefault(r.task_id, []).append(r.passed)
    return {t: sum(v) / len(v) for t, v in trials.items()}


def paired_changes(run: RunData, baseline: RunData, comparison: dict[str, Any]) -> Plot:
    """Per-task change in success from the baseline, for the tasks both runs share."""
    groups = comparison["groups"]
    css = {row["id"]: name for name in ("improved", "regressed") for row in groups[name]}
    paired = [row["id"] for rows in groups.values() for row in rows]
    new, old = _rates(run.results), _rates(baseline.results)
    moved = [(t, new[t] - old[t]) for t in paired if new[t] != old[t]]
    moved.sort(key=lambda pair: -abs(pair[1]))
    shown = sorted(moved[:MAX_PAIRED_ROWS], key=lambda pair: pair[1])
    caption = "Per-task change against the baseline"
    summary = (
        f"{len(groups['improved'])} tasks improved and {len(groups['regressed'])} regressed "
        f"by majority verdict; {len(moved)} of {len(paired)} shared tasks changed their success."
    )
    if not shown:
        return Plot(caption, None, summary)
    drawing = svg.diverging(
        [(t, d, css.get(t, "neutral")) for t, d in shown],
        title="per-task change in success against the baseline",
        desc="Candidate minus baseline share of trials passed, per task; green improved, "
        "red regressed by majority verdict, grey changed within the same verdict.",
        x_label="change in success (percentage points)",
    )
    more = f" The {MAX_PAIRED_ROWS} largest changes are drawn." if len(moved) > len(shown) else ""
    return Plot(caption, drawing, summary + more)
