"""Formatting of figures for every report: one place, so terminal, HTML and Markdown print
a number the same way. A missing figure is always an em dash."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from proctor.core.results import NOT_MEASURED
from proctor.core.summary import Judges, RunSummary, UserModelFigures

#: Metrics that are rates (shown in percent and percentage points).
RATES = {"task_success_rate", "tool_precision", "tool_recall", "arg_accuracy"}


def measured(x: float | None, show: Callable[[float], str]) -> str:
    """`show(x)`, or "not measured" when nothing reported `x`."""
    return NOT_MEASURED if x is None else show(x)


def spent_text(spent: Judges | UserModelFigures, currency: dict[str, Any] | None = None) -> str:
    """A model's tokens and cost (the judges', the simulated user's): each "not measured"
    when no call reported it, never 0 tokens or $0; a lower bound shown as one (≥)."""
    input_tokens, output_tokens = spent.input_tokens, spent.output_tokens
    partial = set(spent.partial)
    tokens = (
        "tokens not measured"
        if input_tokens is None and output_tokens is None
        else f"{'≥ ' if partial - {'cost_usd'} else ''}"
        f"{(input_tokens or 0) + (output_tokens or 0):,} tokens"
    )
    cost = (
        "cost not measured"
        if spent.cost_usd is None
        else money(spent.cost_usd, currency, at_least="cost_usd" in partial)
    )
    return f"{tokens}, {cost}"


def pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def money(
    x: float | None, currency: dict[str, Any] | None = None, *, at_least: bool = False
) -> str:
    """USD, and the run's reporting currency beside it when its price table named one:
    `$0.0120 (EUR 0.0110)`; `at_least`: a lower bound, shown as one (`≥ $0.0120`)."""
    if x is None:
        return "—"
    bound = "≥ " if at_least else ""
    if not currency:
        return f"{bound}${x:.4f}"
    return f"{bound}${x:.4f} ({currency['code']} {x * currency['per_usd']:.4f})"


def secs(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f} s"


def count(x: float | None) -> str:
    return "—" if x is None else f"{x:.0f}"


def interval(pair: tuple[float | None, float | None] | list[float | None] | None) -> str:
    if not pair or pair[0] is None or pair[1] is None:
        return "—"
    return f"{pct(pair[0])}–{pct(pair[1])}"


def success_interval(summary: RunSummary) -> str:
    """The headline's 95% interval with what it is about (docs/architecture.md, Metrics):
    a single task's interval is of that task's trials, two tasks are too few for one."""
    method = summary.success_interval.method if summary.success_interval else None
    if method == "too_few":
        return "95% CI: too few tasks (2) for one"
    text = f"95% CI {interval(summary.success_ci)}"
    if method == "task":
        return f"{text} for this one task's trials, not for a suite"
    return f"{text}, clustered by task"


def detectable_drop(summary: RunSummary) -> str:
    """The minimal detectable effect (a drop compare finds with 80% power), or why none."""
    if summary.mde is not None:
        return f"{pct(summary.mde)} in success (80% power; ICC {num(summary.icc)})"
    if summary.success_rate is None:
        return "—"
    return "too few tasks to detect any drop"


def num(x: float | None, fmt: str = "{:.2f}") -> str:
    return "—" if x is None else fmt.format(x)


def value(x: Any) -> str:
    if x is None:
        return "—"
    return f"{x:.4g}" if isinstance(x, float) else str(x)


def metric_text(metric: str, x: float | None, *, signed: bool = False) -> str:
    if x is None:
        return "—"
    if metric in RATES or metric.startswith("pass_hat_k"):
        return f"{100 * x:+.1f} pts" if signed else pct(x)
    return f"{x:+.4g}" if signed else f"{x:.4g}"


def metric_interval(metric: str, pair: list[float | None]) -> str:
    low, high = pair
    if low is None or high is None:
        return "—"
    return f"[{metric_text(metric, low, signed=True)}, {metric_text(metric, high, signed=True)}]"


def invalid_why(summary: RunSummary) -> str:
    """Why a run is invalid, as its summary says (older summaries: errors and missing)."""
    reasons = summary.invalid_reasons
    if reasons is None:
        errors, missing = summary.errors, summary.missing_trials
        reasons = [f"{errors} harness errors"] if errors else []
        reasons += [f"{missing} missing trials"] if missing else []
    return "; ".join(reasons) or "the run did not complete"


def where_text(where: Mapping[str, Sequence[str]]) -> str:
    """A rule's slice as `suite=regression, risk=high|medium`."""
    return ", ".join(f"{k}={'|'.join(v)}" for k, v in where.items())
