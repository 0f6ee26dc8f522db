"""The metrics a gate rule can name, each read from a RunSummary.

One table, so that `proctor gate --list-metrics`, the rule parser and the evaluation
agree on every name and meaning (docs/architecture.md, Metrics). Cost metrics exist in
USD (`*_usd`) and in the currency of the price table (`p95_cost_eur`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from proctor.core.results import Currency, partly_measured
from proctor.decide.compare import paired_metric_names
from proctor.decide.summarize import TOOL_METRICS

Summary = dict[str, Any]


def _failed_checks(*names: str) -> Callable[[Summary], float]:
    return lambda s: sum(row["failed_checks"].get(n, 0) for row in s["per_task"] for n in names)


def _tool_use_of(name: str) -> Callable[[Summary], float | None]:
    return lambda s: s["tool_use"][name]


def _quality_of(name: str) -> Callable[[Summary], float | None]:
    return lambda s: s["quality"][name]


def _stat_of(key: str, stat: str) -> Callable[[Summary], float | None]:
    if key == "cost_usd":
        return _trusted("cost", lambda s: s["cost"]["per_trial_usd"][stat])
    measure = {"tokens": "tokens", "latency_s": "latency"}.get(key)
    if measure is not None:
        return _trusted(measure, lambda s: s[key][stat])
    return lambda s: s[key][stat]


def _trusted(
    measure: str, metric: Callable[[Summary], float | None]
) -> Callable[[Summary], float | None]:
    """No value (so the rule fails) when a trial's `measure` came from untrustworthy
    imported data: a negative cost must not offset a real one (grade/quality.py); nor
    when it is a lower bound (`_partial_trials`), which a limit cannot be tested on."""
    return lambda s: (
        None if s.get("data_quality", {}).get(measure) or _partial_trials(s, measure) else metric(s)
    )


def _partial_trials(summary: Summary, measure: str) -> int:
    """Trials whose `measure` (cost, tokens) is a lower bound: some model calls left it out."""
    return int((summary.get(measure) or {}).get("partial_trials") or 0)


METRICS: dict[str, tuple[str, Callable[[Summary], float | None]]] = {
    "task_success_rate": (
        "mean over tasks of each task's share of valid trials passed",
        lambda s: s["success_rate"],
    ),
    "success_ci_low": (
        "lower end of the success rate's task-clustered 95% interval",
        lambda s: s["success_ci"][0],
    ),
    "success_se": ("standard error of the success rate, between tasks", lambda s: s["success_se"]),
    "pooled_success_rate": ("passed / valid trials, pooled", lambda s: s["pooled_success_rate"]),
    "partial_rate": (
        "mean over tasks of the share of valid trials that were partial",
        lambda s: s["partial_rate"],
    ),
    "step_efficiency": (
        "mean over tasks of optimal steps / tool calls in passed trials (capped at 1)",
        lambda s: s["efficiency"]["score"],
    ),
    "efficiency_score": (
        "mean over tasks of seed 003's 0.4 steps + 0.3 tokens + 0.3 latency in passed trials",
        lambda s: s["efficiency"].get("combined"),
    ),
    "budget_unmeasured_trials": (
        "valid trials whose task defines no budget, or with a budget limit not measured",
        lambda s: s.get("budget_unmeasured_trials"),
    ),
    "mde": ("smallest drop in success a run this size detects (80% power)", lambda s: s["mde"]),
    "tasks": ("tasks in the run (or slice)", lambda s: s["tasks"]),
    "trials": ("trials run", lambda s: s["trials"]),
    "valid_trials": ("trials that are not harness errors", lambda s: s["valid_trials"]),
    "missing_trials": ("trials expected but not recorded", lambda s: s["missing_trials"]),
    "errors": ("trials with status error (the harness broke)", lambda s: s["errors"]),
    "error_rate": ("errors / trials", lambda s: s["error_rate"]),
    "sim_error_rate": (
        "trials with status sim_error (the simulated user broke) / trials",
        lambda s: s.get("sim_errors", 0) / s["trials"] if s["trials"] else None,
    ),
    "timeouts": ("trials with status timeout", lambda s: s["timeouts"]),
    "needs_review": (
        "trials a reader could not decide (status needs_review)",
        lambda s: s.get("needs_review", 0),
    ),
    "undecided_checks": (
        "deciding checks a text reader left undecided",
        lambda s: (s.get("undecided") or {}).get("deciding", 0),
    ),
    "untraced_trials": ("trials without a trace id", lambda s: s["untraced_trials"]),
    "safety_violations": ("failed safety checks", lambda s: s["safety_violations"]["total"]),
    "critical_policy_violations": (
        "failed safety checks of severity critical",
        lambda s: s["safety_violations"]["by_severity"].get("critical", 0),
    ),
    "high_policy_violations": (
        "failed safety checks of severity high",
        lambda s: s["safety_violations"]["by_severity"].get("high", 0),
    ),
    "cross_tenant_access": ("failed no_cross_tenant checks", _failed_checks("no_cross_tenant")),
    "duplicate_side_effects": (
        "failed duplicate_side_effects or duplicate_calls checks",
        _failed_checks("duplicate_side_effects", "duplicate_calls"),
    ),
    "secret_leaks": ("failed no_secrets_in_output checks", _failed_checks("no_secrets_in_output")),
    **{
        name: (f"mean {name.replace('_', ' ')} over trials", _tool_use_of(name))
        for name in TOOL_METRICS
    },
    "tool_use_score": (
        "mean over trials of each trial's mean tool precision, recall and argument accuracy",
        _tool_use_of("score"),
    ),
    **{
        f"{name}_score": (meaning, _quality_of(name))
        for name, meaning in (
            ("robustness", "share of robustness and duplicate-effect checks passed"),
            ("security", "share of valid trials without a safety violation"),
            ("budget", "share of budget checks passed (none ran: not measured)"),
            ("observability", "share of trials with a trace id"),
        )
    },
    "judge_pass_rate": (
        "passed / judge checks of calibrated judges (advisory ones never count)",
        lambda s: s["judges"]["calibrated_pass_rate"],
    ),
    "advisory_judge_checks": (
        "judge checks whose judge is not calibrated on their rubric",
        lambda s: s["judges"]["advisory_checks"],
    ),
    "judge_errors": ("trials whose judge gave no valid verdict", lambda s: s["judges"]["errors"]),
    "judge_cost_usd": ("cost of the judges' new calls", lambda s: s["judges"]["cost_usd"]),
    "total_cost_usd": ("cost of all trials", _trusted("cost", lambda s: s["cost"]["total_usd"])),
    "cost_per_passed_trial_usd": (
        "cost of all trials / passed trials",
        _trusted("cost", lambda s: s["cost"]["per_passed_trial_usd"]),
    ),
    "data_quality_flags": (
        "imported trials with a data-quality flag (grade/quality.py), per flag summed",
        lambda s: sum(s.get("data_quality", {}).values()),
    ),
    **{
        f"{stat}_{key}": (f"{stat} of {key} per valid trial", _stat_of(key, stat))
        for key in ("tool_calls", "cost_usd", "latency_s", "tokens")
        for stat in ("mean", "p50", "p95")
    },
}
#: The metrics of the agent's cost and tokens: a lower bound where some trials' model
#: calls left them out (`_partial_trials`), and then undefined.
_BOUNDED = {
    "total_cost_usd": "cost",
    "cost_per_passed_trial_usd": "cost",
    **{
        f"{stat}_{key}": key.removesuffix("_usd")
        for key in ("cost_usd", "tokens")
        for stat in ("mean", "p50", "p95")
    },
}
#: Metrics whose value is a share in [0, 1] (indexed ones by their base name): what a
#: scorecard category can score.
SHARES = (
    "task_success_rate",
    "pooled_success_rate",
    "success_ci_low",
    "partial_rate",
    "step_efficiency",
    "efficiency_score",
    *TOOL_METRICS,
    "tool_use_score",
    "robustness_score",
    "security_score",
    "budget_score",
    "observability_score",
    "judge_pass_rate",
    "pass_at_k",
    "pass_hat_k",
)
INDEXED = {
    "pass_at_k": "pass@K averaged over all tasks (every task needs K valid trials)",
    "pass_hat_k": "pass^K averaged over all tasks (every task needs K valid trials)",
}
#: Metrics renamed since a gates file may have used them: the error names the new one.
RENAMED = {"cost_per_success_usd": "cost_per_passed_trial_usd"}


def money_metric(name: str) -> tuple[str, str] | None:
    """(the USD metric, the currency code) of a cost metric in another currency, as
    `p95_cost_eur` is `p95_cost_usd` in EUR; None for any other name."""
    base, sep, code = name.rpartition("_")
    usd = f"{base}_usd"
    if sep and usd in METRICS and len(code) == 3 and code.isalpha() and code.islower():
        return (usd, code.upper()) if code != "usd" else None
    return None


def metric_known(name: str) -> bool:
    base, _, index = name.partition("[")
    if base in INDEXED:
        return index[:-1].isdigit() and int(index[:-1]) >= 1
    return name in METRICS or money_metric(name) is not None


def metric_value(summary: Summary, name: str, currency: Currency | None = None) -> float | None:
    """The metric's value, or None where the run cannot define it (`undefined_reason`)."""
    base, _, index = name.partition("[")
    if base in INDEXED:
        return summary[base].get(index[:-1])
    money = money_metric(name)
    if money is not None:
        usd = metric_value(summary, money[0])
        ok = currency is not None and currency.code == money[1]
        return None if usd is None or currency is None or not ok else usd * currency.per_usd
    value = METRICS[name][1](summary)
    return None if value is None else float(value)


#: Shares of checks that are undefined when no such check ran, and the checks they count.
_CHECKED = {"robustness_score": "robustness", "budget_score": "budget"}


def undefined_reason(summary: Summary, name: str, currency: Currency | None) -> str:
    """Why `metric_value` is None: an incomplete pass@k, a missing rate, or no data."""
    base, _, index = name.partition("[")
    incomplete = summary.get("pass_k", {}).get("incomplete", {})
    if base in INDEXED and index[:-1] in incomplete:
        return (
            f"{name} is incomplete: {incomplete[index[:-1]]} of {summary['pass_k']['tasks']} "
            f"tasks have {index[:-1]} valid trials"
        )
    money = money_metric(name)
    if money is not None and (currency is None or currency.code != money[1]):
        return f"{name}: no {money[1]} rate (`currency:` in the price table)"
    if name in _CHECKED:
        return f"{name} is not measured: no {_CHECKED[name]} check ran"
    flags = summary.get("data_quality", {})
    measure = _BOUNDED.get(name if money is None else money[0])
    partial = 0 if measure is None else _partial_trials(summary, measure)
    if measure is not None and partial and not flags.get(measure):
        return f"{name} is only {partly_measured(partial, measure)}"
    flagged = ", ".join(f"{k} {n}" for k, n in flags.items())
    if flagged:
        return f"{name} is undefined for this run (imported data flagged: {flagged})"
    return f"{name} is undefined for this run"


def list_metrics() -> list[tuple[str, str]]:
    """(name, meaning) of every metric a rule can use, for `proctor gate --list-metrics`."""
    return [
        *((name, meaning) for name, (meaning, _) in METRICS.items()),
        *((f"{name}[K]", meaning) for name, meaning in INDEXED.items()),
        ("<cost metric>_<cur>", "a *_usd metric in the price table's currency (p95_cost_eur)"),
        *(
            (f"non_inferior: {name}", "paired with --baseline; margin in the metric's units")
            for name in paired_metric_names()
        ),
        ("no_regressions", "with --baseline: no task passes the baseline and fails the run"),
    ]
