"""Release gates: rules over named run metrics that turn a run into ship / do not ship.

A gates file is a list of rules (or `rules:` holding one). A rule is a test in the
`proctor.decide.rules` grammar, optionally on a slice, or a comparison with a baseline run:

    rules:
      - critical_policy_violations == 0
      - task_success_rate >= 0.85
      - {rule: p95_tool_calls <= 6, where: {suite: regression}}
      - {non_inferior: task_success_rate, margin: 0.02}
      - {no_regressions: {suite: regression}}

Every metric is read from a RunSummary recomputed from the run's trial results (for a
slice, from that slice's trials), so a rule means the same on the whole run and on a
slice. The run's validity is checked first: an invalid run fails the gate whatever the
rules say. A metric the run cannot define (pass^5 with 3 trials) fails its rule. The
scorecard's gates are rules of this same language (proctor.decide.scorecard).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from proctor.core.documents import (
    Loc,
    Problem,
    SpecError,
    format_loc,
    line_of,
    read_list_document,
)
from proctor.core.results import TaskInfo
from proctor.decide import rules as grammar
from proctor.decide.compare import DEFAULT_MARGIN, Pairing, paired_metric, paired_metric_names
from proctor.decide.summary import DEFAULT_MAX_ERROR_RATE, TOOL_METRICS, summarize
from proctor.store.export import RunData
from proctor.tasks.models import Risk, Split, SuiteKind

Summary = dict[str, Any]


def _failed_checks(*names: str) -> Callable[[Summary], float]:
    return lambda s: sum(row["failed_checks"].get(n, 0) for row in s["per_task"] for n in names)


def _tool_use_of(name: str) -> Callable[[Summary], float | None]:
    return lambda s: s["tool_use"][name]


def _stat_of(key: str, stat: str) -> Callable[[Summary], float | None]:
    if key == "cost_usd":
        return lambda s: s["cost"]["per_trial_usd"][stat]
    return lambda s: s[key][stat]


METRICS: dict[str, tuple[str, Callable[[Summary], float | None]]] = {
    "task_success_rate": ("passed / valid trials", lambda s: s["success_rate"]),
    "success_ci_low": (
        "lower end of the success rate's Wilson 95% interval",
        lambda s: s["success_ci"][0],
    ),
    "success_se": ("task-clustered standard error of the success rate", lambda s: s["success_se"]),
    "mde": ("smallest drop in success a run this size detects (80% power)", lambda s: s["mde"]),
    "tasks": ("tasks in the run (or slice)", lambda s: s["tasks"]),
    "trials": ("trials run", lambda s: s["trials"]),
    "valid_trials": ("trials that are not harness errors", lambda s: s["valid_trials"]),
    "missing_trials": ("trials expected but not recorded", lambda s: s["missing_trials"]),
    "errors": ("trials with status error (the harness broke)", lambda s: s["errors"]),
    "error_rate": ("errors / trials", lambda s: s["error_rate"]),
    "timeouts": ("trials with status timeout", lambda s: s["timeouts"]),
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
    "total_cost_usd": ("cost of all trials", lambda s: s["cost"]["total_usd"]),
    "cost_per_success_usd": (
        "total cost / passed trials",
        lambda s: s["cost"]["per_successful_task_usd"],
    ),
    **{
        f"{stat}_{key}": (f"{stat} of {key} per valid trial", _stat_of(key, stat))
        for key in ("tool_calls", "cost_usd", "latency_s", "tokens")
        for stat in ("mean", "p50", "p95")
    },
}
INDEXED = {
    "pass_at_k": "pass@K averaged over tasks (K <= trials per task)",
    "pass_hat_k": "pass^K averaged over tasks (K <= trials per task)",
}
_WHERE = {
    "tag": None,
    "suite": set(get_args(SuiteKind)),
    "risk": set(get_args(Risk)),
    "split": set(get_args(Split)),
}


def metric_known(name: str) -> bool:
    base, _, index = name.partition("[")
    return name in METRICS or (base in INDEXED and index[:-1].isdigit() and int(index[:-1]) >= 1)


def metric_value(summary: Summary, name: str) -> float | None:
    base, _, index = name.partition("[")
    if base in INDEXED:
        return summary[base].get(index[:-1])
    value = METRICS[name][1](summary)
    return None if value is None else float(value)


def list_metrics() -> list[tuple[str, str]]:
    """(name, meaning) of every metric a rule can use, for `proctor gate --list-metrics`."""
    return [
        *((name, meaning) for name, (meaning, _) in METRICS.items()),
        *((f"{name}[K]", meaning) for name, meaning in INDEXED.items()),
        *(
            (f"non_inferior: {name}", "paired with --baseline; margin in the metric's units")
            for name in paired_metric_names()
        ),
        ("no_regressions", "with --baseline: no task passes the baseline and fails the run"),
    ]


@dataclass(frozen=True)
class Rule:
    kind: str  # "test" | "non_inferior" | "no_regressions"
    text: str
    source: str
    where: dict[str, list[str]] = field(default_factory=dict)
    node: grammar.Node | None = None
    metric: str = ""
    margin: float = DEFAULT_MARGIN

    def selects(self, info: TaskInfo) -> bool:
        keys = set(info.slices())
        return all(any(f"{k}:{v}" in keys for v in vs) for k, vs in self.where.items())


class _RuleError(ValueError):
    def __init__(self, loc: Loc, message: str) -> None:
        super().__init__(message)
        self.loc = loc


def _where(value: Any, loc: Loc) -> dict[str, list[str]]:
    if not isinstance(value, dict) or not value:
        raise _RuleError(loc, "a slice is a mapping like {suite: regression}")
    out = {}
    for key, raw in value.items():
        if key not in _WHERE:
            raise _RuleError((*loc, key), f"unknown slice field (one of: {', '.join(_WHERE)})")
        values = [str(v) for v in (raw if isinstance(raw, list) else [raw])]
        allowed = _WHERE[key]
        if not values:
            raise _RuleError((*loc, key), f"{key} needs at least one value")
        if allowed is not None and not set(values) <= allowed:
            raise _RuleError((*loc, key), f"{key} must be one of {sorted(allowed)}")
        out[key] = values
    return out


def _test(text: Any, loc: Loc) -> tuple[str, grammar.Node]:
    if not isinstance(text, str):
        raise _RuleError(loc, "a rule is a text like `task_success_rate >= 0.85`")
    try:
        node = grammar.parse(text)
    except grammar.ExprError as exc:
        raise _RuleError(loc, f"{text!r}: {exc}") from None
    unknown = sorted(n for n in grammar.names(node) if not metric_known(n))
    if unknown:
        raise _RuleError(loc, f"unknown metric {unknown[0]!r} (see proctor gate --list-metrics)")
    return text.strip(), node


def _rule(item: Any, loc: Loc, source: str) -> Rule:
    if isinstance(item, str):
        text, node = _test(item, loc)
        return Rule("test", text, source, node=node)
    if not isinstance(item, dict):
        raise _RuleError(loc, "a rule is a text or a mapping")
    kinds = [k for k in ("rule", "non_inferior", "no_regressions") if k in item]
    if len(kinds) != 1:
        raise _RuleError(
            loc, "a rule mapping needs one of `rule`, `non_inferior`, `no_regressions`"
        )
    kind = kinds[0]
    allowed = {kind, "where", *(["margin"] if kind == "non_inferior" else [])}
    for key in item:
        if key not in allowed:
            raise _RuleError((*loc, key), f"unknown field (allowed: {', '.join(sorted(allowed))})")
    where = _where(item["where"], (*loc, "where")) if "where" in item else {}
    if kind == "rule":
        text, node = _test(item["rule"], (*loc, "rule"))
        return Rule("test", text, source, where, node=node)
    if kind == "no_regressions":
        value = item["no_regressions"]
        if value is not True:
            where = {**where, **_where(value, (*loc, "no_regressions"))}
        return Rule("no_regressions", "no_regressions", source, where)
    metric, margin = item["non_inferior"], item.get("margin", DEFAULT_MARGIN)
    if not isinstance(metric, str) or paired_metric(metric) is None:
        known = ", ".join(paired_metric_names())
        raise _RuleError((*loc, "non_inferior"), f"non_inferior takes one of: {known}")
    if isinstance(margin, bool) or not isinstance(margin, int | float) or margin < 0:
        raise _RuleError((*loc, "margin"), "margin must be a number >= 0")
    text = f"non_inferior {metric} (margin {margin:g})"
    return Rule("non_inferior", text, source, where, metric=metric, margin=float(margin))


def make_rule(item: Any, source: str) -> Rule:
    """One rule from its text or mapping, as a gates file writes it; a ValueError says why not."""
    return _rule(item, (), source)


def parse_rules(
    items: list[Any], path: Path, lines: dict[Loc, int], prefix: Loc
) -> tuple[list[Rule], list[Problem]]:
    """The rules of a list in a document (at `prefix`), and a file:line problem for each
    item that is not one."""
    parsed, problems = [], []
    for i, item in enumerate(items):
        loc = (*prefix, i)
        try:
            parsed.append(_rule(item, loc, f"{path}:{line_of(lines, loc)}"))
        except _RuleError as exc:
            problems.append((path, line_of(lines, exc.loc), format_loc(exc.loc), str(exc)))
    return parsed, problems


def load_rules(path: str | Path) -> list[Rule]:
    """Read a gates file; every problem is a SpecError line with file:line."""
    path = Path(path)
    data, lines, prefix = read_list_document(path, "rules")
    if not isinstance(data, list) or not data:
        raise SpecError.one(path, 1, "", "a gates file holds a list of rules (or `rules:` one)")
    parsed, problems = parse_rules(data, path, lines, prefix)
    if problems:
        raise SpecError(problems)
    return parsed


def _row(
    rule: Rule | None, status: str, value: Any, threshold: Any, reason: str = ""
) -> dict[str, Any]:
    return {
        "rule": rule.text if rule else "run is valid",
        "source": rule.source if rule else None,
        "where": rule.where if rule else {},
        "value": value,
        "threshold": threshold,
        "status": status,
        "reason": reason,
    }


class Gate:
    """Evaluates rules on one run, and a baseline for the baseline-relative ones.

    `summary`: the whole run's RunSummary when the caller has just computed it from the
    same trial results (the scorecard of a finishing run), so it is not computed twice.
    """

    def __init__(
        self, run: RunData, baseline: RunData | None = None, *, summary: Summary | None = None
    ) -> None:
        self.run, self.baseline = run, baseline
        self.infos = run.task_infos()
        self._summaries: dict[str, Summary | None] = {} if summary is None else {"[]": summary}
        self._pairing: Pairing | None = None

    def summary(self, rule: Rule | None) -> Summary | None:
        """The RunSummary of the rule's slice (of the whole run without one); None if empty."""
        key = repr(sorted(rule.where.items())) if rule else "[]"
        if key not in self._summaries:
            tasks = {t: i for t, i in self.infos.items() if rule is None or rule.selects(i)}
            results = [r for r in self.run.results if r.task_id in tasks]
            limit = (self.run.summary or {}).get("max_error_rate", DEFAULT_MAX_ERROR_RATE)
            self._summaries[key] = (
                summarize(
                    self.run.run_id,
                    results,
                    tasks,
                    trials_per_task=self.run.manifest["trials"],
                    max_error_rate=limit,
                )
                if tasks
                else None
            )
        return self._summaries[key]

    def validity(self) -> dict[str, Any]:
        s = self.summary(None)
        assert s is not None
        reasons = []
        if s["error_rate"] > s["max_error_rate"]:
            reasons.append(
                f"harness error rate {s['error_rate']:.1%} above {s['max_error_rate']:.1%}"
            )
        if s["missing_trials"]:
            reasons.append(f"{s['missing_trials']} of {s['expected_trials']} trials missing")
        if self.run.status in ("running", "interrupted"):
            reasons.append(f"the run is {self.run.status}")
        value = f"{s['errors']} errors, {s['missing_trials']} missing"
        threshold = f"error rate <= {s['max_error_rate']:.0%}, none missing"
        return _row(None, "fail" if reasons else "pass", value, threshold, "; ".join(reasons))

    def test(self, rule: Rule, *, no_task: str = "fail") -> dict[str, Any]:
        """The rule's row. A slice with no task gets the status `no_task`: `fail` for a
        release gate, `n/a` for the scorecard's gates."""
        assert rule.node is not None
        s = self.summary(rule)
        if s is None:
            return _row(rule, no_task, None, None, "no task in this slice")
        found = {name: metric_value(s, name) for name in grammar.names(rule.node)}
        values = {name: v for name, v in found.items() if v is not None}
        undefined = sorted(found.keys() - values.keys())
        if undefined:
            return _row(rule, "fail", None, None, f"undefined for this run: {', '.join(undefined)}")
        node = rule.node
        try:
            if isinstance(node, grammar.Op) and node.op in grammar.COMPARE and node.right:
                value = grammar.evaluate(node.left, values)
                bound = grammar.evaluate(node.right, values)
                threshold: Any = f"{node.op} {bound:g}"
            else:
                value, threshold = None, None
            ok = grammar.evaluate(node, values)
        except grammar.ExprError as exc:
            return _row(rule, "fail", None, None, str(exc))
        return _row(rule, "pass" if ok else "fail", value, threshold)

    def relative(self, rule: Rule) -> dict[str, Any]:
        if self.baseline is None:
            return _row(rule, "skip", None, None, "needs --baseline")
        if self._pairing is None:
            self._pairing = Pairing(self.baseline, self.run)
        tasks = self._pairing.select(rule.selects)
        if not tasks:
            return _row(rule, "fail", None, None, "no task shared with the baseline in this slice")
        if rule.kind == "no_regressions":
            regressed = [r["id"] for r in self._pairing.verdicts(tasks)["groups"]["regressed"]]
            reason = f"regressed: {', '.join(regressed)}" if regressed else ""
            return _row(rule, "fail" if regressed else "pass", len(regressed), "== 0", reason)
        metric = paired_metric(rule.metric)
        assert metric is not None
        fig = self._pairing.figure(metric, tasks, margin=rule.margin)
        low, high = fig["ci"]
        if low is None or high is None:
            return _row(rule, "fail", fig["difference"], None, "needs two tasks with a value")
        end = "low > " if metric.higher_is_better else "high < "
        threshold = f"95% CI {end}{-rule.margin if metric.higher_is_better else rule.margin:g}"
        reason = f"95% CI [{low:+.4g}, {high:+.4g}] over {fig['tasks']} tasks"
        status = "pass" if fig["non_inferior"]["passed"] else "fail"
        return _row(rule, status, fig["difference"], threshold, reason)

    def evaluate(self, rules: list[Rule]) -> dict[str, Any]:
        """Every rule's row, the validity row first, and the verdict."""
        rows = [self.validity()]
        rows += [self.test(r) if r.kind == "test" else self.relative(r) for r in rules]
        return {
            "run_id": self.run.run_id,
            "baseline_id": self.baseline.run_id if self.baseline else None,
            "passed": all(row["status"] != "fail" for row in rows),
            "failed": sum(row["status"] == "fail" for row in rows),
            "skipped": sum(row["status"] == "skip" for row in rows),
            "rules": rows,
        }
