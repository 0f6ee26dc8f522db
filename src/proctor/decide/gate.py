"""Release gates: rules over named run metrics that turn a run into ship / do not ship.

A gates file is a list of rules (or `rules:` holding one). A rule is a test in the
`proctor.decide.rules` grammar, optionally on a slice, or a comparison with a baseline run:

    rules:
      - critical_policy_violations == 0
      - task_success_rate >= 0.85
      - {rule: p95_tool_calls <= 6, where: {suite: regression}}
      - {non_inferior: task_success_rate, margin: 0.02}
      - {no_regressions: {suite: regression}}
      - {rule: sim_error_rate <= baseline_sim_error_rate + 0.02, allow_changed: [user_model]}

Every metric is read from a RunSummary recomputed from the run's trial results (for a
slice, from that slice's trials), so a rule means the same on the whole run and on a
slice. A baseline rule fails when an instrument component of the two manifests
differs (the simulated user, proctor.decide.changes.MATCHED) unless the rule, or the whole
file, says `allow_changed:` with its name. The run's validity is checked first: an
invalid run fails the gate whatever the rules say. A metric the run cannot define
(pass^5 with 3 trials) fails its rule. The scorecard's gates are rules of this same
language (proctor.decide.scorecard).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, get_args

from proctor.core.documents import (
    Lines,
    Loc,
    Problem,
    SpecError,
    format_loc,
    line_of,
    read_document,
)
from proctor.core.results import Currency, TaskInfo
from proctor.core.runs import RunData
from proctor.decide import rules as grammar
from proctor.decide.changes import MATCHED, manifest_changes, unmatched, unmatched_warnings
from proctor.decide.compare import DEFAULT_MARGIN, Pairing, paired_metric, paired_metric_names
from proctor.decide.metrics import (
    RENAMED,
    Summary,
    metric_known,
    metric_value,
    money_metric,
    undefined_reason,
)
from proctor.decide.summarize import DEFAULT_MAX_ERROR_RATE, summarize
from proctor.tasks.models import Difficulty, Risk, Split, SuiteKind

_WHERE = {
    "tag": None,
    "suite": set(get_args(SuiteKind)),
    "risk": set(get_args(Risk)),
    "split": set(get_args(Split)),
    "difficulty": set(get_args(Difficulty)),
}


#: A metric name so prefixed reads the baseline run's value on the same slice, so a rule can
#: compare the candidate with the baseline as seed 001's release gate does:
#: `task_success_rate >= baseline_task_success_rate - 0.01`.
BASELINE = "baseline_"


def currencies(rules: Iterable[Rule]) -> set[str]:
    """The currency codes the rules' cost metrics are in (a rate must exist for each)."""
    names = {
        n.removeprefix(BASELINE) for r in rules if r.node is not None for n in grammar.names(r.node)
    }
    return {money[1] for money in map(money_metric, names) if money is not None}


@dataclass(frozen=True)
class Rule:
    kind: str  # "test" | "versus" (a test reading baseline_ metrics) | "non_inferior" | ...
    text: str
    source: str
    where: dict[str, list[str]] = field(default_factory=dict)
    node: grammar.Node | None = None
    metric: str = ""
    margin: float = DEFAULT_MARGIN
    #: Baseline tasks whose content change, or removal, the gates file accepts.
    accept_changed: frozenset[str] = frozenset()
    accept_removed: frozenset[str] = frozenset()
    #: Deciding checks a text reader left undecided that the rule's slice may hold
    #: (`max_undecided:` in the gates file); more fails the rule (docs/architecture.md,
    #: Reading).
    max_undecided: int = 0
    #: Instrument components (changes.MATCHED) the rule compares across when they differ.
    allow_changed: frozenset[str] = frozenset()

    def selects(self, info: TaskInfo) -> bool:
        keys = set(info.slices())
        return all(any(f"{k}:{v}" in keys for v in vs) for k, vs in self.where.items())


class _RuleError(ValueError):
    def __init__(self, loc: Loc, message: str) -> None:
        super().__init__(message)
        self.loc = loc


def parse_where(value: Any) -> dict[str, list[str]]:
    """A slice (`{suite: regression}`) as a scorecard category writes it; a ValueError
    says what is wrong."""
    return _where(value, ())


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
    unknown = sorted(n for n in grammar.names(node) if not metric_known(n.removeprefix(BASELINE)))
    if unknown and unknown[0] in RENAMED:
        raise _RuleError(loc, f"metric {unknown[0]!r} is now {RENAMED[unknown[0]]!r}")
    if unknown:
        raise _RuleError(loc, f"unknown metric {unknown[0]!r} (see proctor gate --list-metrics)")
    return text.strip(), node


def _kind(node: grammar.Node) -> str:
    """`versus` for a test that reads the baseline's metrics (`baseline_` names), which
    needs --baseline like the other relative rules; `test` otherwise."""
    return "versus" if any(n.startswith(BASELINE) for n in grammar.names(node)) else "test"


def _rule(item: Any, loc: Loc, source: str) -> Rule:
    if isinstance(item, str):
        text, node = _test(item, loc)
        return Rule(_kind(node), text, source, node=node)
    if not isinstance(item, dict):
        raise _RuleError(loc, "a rule is a text or a mapping")
    kinds = [k for k in ("rule", "non_inferior", "no_regressions") if k in item]
    if len(kinds) != 1:
        raise _RuleError(
            loc, "a rule mapping needs one of `rule`, `non_inferior`, `no_regressions`"
        )
    kind = kinds[0]
    allowed = {kind, "where", "allow_changed", *(["margin"] if kind == "non_inferior" else [])}
    for key in item:
        if key not in allowed:
            raise _RuleError((*loc, key), f"unknown field (allowed: {', '.join(sorted(allowed))})")
    where = _where(item["where"], (*loc, "where")) if "where" in item else {}
    allow = (
        _allow(item["allow_changed"], (*loc, "allow_changed"))
        if "allow_changed" in item
        else frozenset()
    )
    if kind == "rule":
        text, node = _test(item["rule"], (*loc, "rule"))
        if allow and _kind(node) == "test":
            raise _RuleError(
                (*loc, "allow_changed"),
                "only a rule that reads the baseline compares across a change",
            )
        return Rule(_kind(node), text, source, where, node=node, allow_changed=allow)
    if kind == "no_regressions":
        value = item["no_regressions"]
        if value is not True:
            where = {**where, **_where(value, (*loc, "no_regressions"))}
        return Rule("no_regressions", "no_regressions", source, where, allow_changed=allow)
    metric, margin = item["non_inferior"], item.get("margin", DEFAULT_MARGIN)
    paired = paired_metric(metric) if isinstance(metric, str) else None
    if paired is None:
        known = ", ".join(paired_metric_names())
        raise _RuleError((*loc, "non_inferior"), f"non_inferior takes one of: {known}")
    _check_margin(margin, paired.units is not None, (*loc, "margin"))
    text = f"non_inferior {metric} (margin {margin:g})"
    rule = Rule("non_inferior", text, source, where, metric=metric, margin=float(margin))
    return replace(rule, allow_changed=allow)


def _allow(value: Any, loc: Loc) -> frozenset[str]:
    """The instrument components (changes.MATCHED) an `allow_changed:` list names."""
    if not isinstance(value, list) or not all(isinstance(v, str) and v in MATCHED for v in value):
        raise _RuleError(loc, f"a list of: {', '.join(MATCHED)}")
    return frozenset(value)


def _check_margin(margin: Any, rate: bool, loc: Loc) -> None:
    """A margin is a finite number >= 0; on a rate, a rate below 1 (2 points is 0.02)."""
    if isinstance(margin, bool) or not isinstance(margin, int | float):
        raise _RuleError(loc, f"margin must be a number >= 0, not {margin!r}")
    if not math.isfinite(margin) or margin < 0:
        raise _RuleError(loc, f"margin must be a finite number >= 0, not {margin!r}")
    if rate and margin >= 1:
        raise _RuleError(
            loc,
            f"margin {margin:g} on a rate: give it as a rate below 1 "
            f"({margin / 100:g} for {margin:g} points)",
        )


def make_rule(item: Any, source: str) -> Rule:
    """One rule from its text or mapping, as a gates file writes it; a ValueError says why not."""
    return _rule(item, (), source)


def parse_rules(
    items: list[Any], path: Path, lines: Lines, prefix: Loc
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


ACCEPT_KEYS = ("accept_changed", "accept_removed")
#: The other top-level fields of a gates file.
GATES_KEYS = ("rules", *ACCEPT_KEYS, "allow_changed", "max_undecided")


def _accepted(data: dict[str, Any], path: Path, lines: Lines) -> dict[str, frozenset[str]]:
    """The task ids a gates file accepts as changed or removed since the baseline."""
    out = {}
    for key in ACCEPT_KEYS:
        ids = data.get(key, [])
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise SpecError.one(path, line_of(lines, (key,)), key, "a list of task ids")
        out[key] = frozenset(ids)
    return out


def load_rules(path: str | Path) -> list[Rule]:
    """Read a gates file; every problem is a SpecError line with file:line.

    The file is a list of rules, or a mapping with `rules:` and optionally
    `accept_changed:` / `accept_removed:` (task ids), which the baseline rules carry, and
    `max_undecided:` (deciding checks a reader left undecided that a slice may hold; 0),
    and `allow_changed:` (instrument components every baseline rule compares across).
    """
    path = Path(path)
    data, lines = read_document(path)
    prefix: Loc = ()
    accepted = {key: frozenset[str]() for key in ACCEPT_KEYS}
    most = 0
    allow = frozenset[str]()
    if isinstance(data, dict):
        unknown = sorted(set(data) - set(GATES_KEYS))
        if unknown:
            message = f"unknown field (allowed: {', '.join(GATES_KEYS)})"
            raise SpecError.one(path, line_of(lines, (unknown[0],)), unknown[0], message)
        accepted = _accepted(data, path, lines)
        most = data.get("max_undecided", 0)
        if isinstance(most, bool) or not isinstance(most, int) or most < 0:
            line = line_of(lines, ("max_undecided",))
            raise SpecError.one(path, line, "max_undecided", "a whole number >= 0")
        if "allow_changed" in data:
            try:
                allow = _allow(data["allow_changed"], ("allow_changed",))
            except _RuleError as exc:
                raise SpecError.one(
                    path, line_of(lines, exc.loc), "allow_changed", str(exc)
                ) from None
        data, prefix = data.get("rules"), ("rules",)
    if not isinstance(data, list) or not data:
        raise SpecError.one(path, 1, "", "a gates file holds a list of rules (or `rules:` one)")
    parsed, problems = parse_rules(data, path, lines, prefix)
    if problems:
        raise SpecError(problems)
    changed, removed = accepted["accept_changed"], accepted["accept_removed"]
    return [
        replace(r, max_undecided=most)
        if r.kind == "test"
        else replace(
            r,
            accept_changed=changed,
            accept_removed=removed,
            max_undecided=most,
            allow_changed=r.allow_changed | allow,
        )
        for r in parsed
    ]


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
    `currency`: the rate for cost metrics in another currency; by default the one the run
    recorded from its price table.
    """

    def __init__(
        self,
        run: RunData,
        baseline: RunData | None = None,
        *,
        summary: Summary | None = None,
        currency: Currency | None = None,
    ) -> None:
        self.run, self.baseline = run, baseline
        self.infos = run.task_infos()
        self._summaries: dict[str, Summary | None] = {} if summary is None else {"[]": summary}
        self.pairing = Pairing(baseline, run) if baseline is not None else None
        #: Instrument components (changes.MATCHED) that differ from the baseline's, once
        #: for every baseline-relative rule.
        self.differ = unmatched(baseline.manifest, run.manifest) if baseline is not None else {}
        self._baseline_gate = Gate(baseline, currency=currency) if baseline is not None else None
        recorded = run.manifest.currency
        self.currency = currency or (Currency.parse(recorded) if recorded else None)

    def summary(self, rule: Rule | None) -> Summary | None:
        """The RunSummary of the rule's slice (of the whole run without one); None if empty."""
        key = repr(sorted(rule.where.items())) if rule else "[]"
        if key not in self._summaries:
            tasks = {t: i for t, i in self.infos.items() if rule is None or rule.selects(i)}
            results = [r for r in self.run.results if r.task_id in tasks]
            stored = self.run.summary
            limit = stored.max_error_rate if stored is not None else DEFAULT_MAX_ERROR_RATE
            self._summaries[key] = (
                summarize(
                    self.run.run_id,
                    results,
                    tasks,
                    trials_per_task=self.run.manifest.trials,
                    max_error_rate=limit,
                )
                if tasks
                else None
            )
        return self._summaries[key]

    def validity(self) -> dict[str, Any]:
        s = self.summary(None)
        assert s is not None
        reasons = list(s["invalid_reasons"])
        if self.run.status in ("running", "interrupted"):
            reasons.append(f"the run is {self.run.status}")
        value = f"{s['errors']} errors, {s['missing_trials']} missing"
        threshold = f"error rate <= {s['max_error_rate']:.0%}, none missing"
        return _row(None, "fail" if reasons else "pass", value, threshold, "; ".join(reasons))

    def test(self, rule: Rule, *, no_task: str = "fail") -> dict[str, Any]:
        """The rule's row. A slice with no task gets the status `no_task`: `fail` for a
        release gate, `n/a` for the scorecard's gates. `baseline_` names read the
        baseline's summary of the same slice."""
        assert rule.node is not None
        s = self.summary(rule)
        if s is None:
            return _row(rule, no_task, None, None, "no task in this slice: nothing to measure")
        base = self._baseline_gate.summary(rule) if self._baseline_gate is not None else None
        found: dict[str, float | None] = {}
        whys: list[str] = []
        for name in grammar.names(rule.node):
            metric, of = name.removeprefix(BASELINE), base if name.startswith(BASELINE) else s
            found[name] = None if of is None else metric_value(of, metric, self.currency)
            if found[name] is None:
                whys.append(
                    f"the baseline has no task in this slice ({name})"
                    if of is None
                    else undefined_reason(of, metric, self.currency)
                    + (" in the baseline" if of is base else "")
                )
        values = {name: v for name, v in found.items() if v is not None}
        if whys:
            return _row(rule, "fail", None, None, "; ".join(whys))
        node = rule.node
        try:
            if isinstance(node, grammar.Op) and node.op in grammar.COMPARE and node.right:
                value: Any = grammar.evaluate(node.left, values)
                bound = grammar.evaluate(node.right, values)
                threshold: Any = f"{node.op} {bound:g}"
                why = f"{value:.4g} is not {threshold}"
            else:  # a compound test: show what it read
                value = ", ".join(f"{name}={v:.4g}" for name, v in sorted(values.items()))
                threshold = "the rule"
                why = "the rule is false for these values"
            ok = grammar.evaluate(node, values)
        except grammar.ExprError as exc:
            return _row(rule, "fail", None, None, str(exc))
        unread = (s.get("undecided") or {}).get("deciding", 0)
        if ok and unread > rule.max_undecided:
            why = f"{unread} deciding checks undecided by their readers (max_undecided "
            return _row(rule, "fail", value, threshold, why + f"{rule.max_undecided})")
        return _row(rule, "pass" if ok else "fail", value, threshold, "" if ok else why)

    def _suite_changes(self, pairing: Pairing, rule: Rule) -> str:
        """The baseline tasks of the rule's slice the candidate no longer measures as they
        were: removed, changed in content, or without a valid trial; '' when none. A gate
        passed by editing the suite would be no gate, so only the changes the gates file
        accepts (`accept_removed`, `accept_changed`) are left out."""
        infos = pairing.infos
        parts = []
        for key, accepted, why in (
            ("only_in_baseline", rule.accept_removed, "removed (accept_removed)"),
            ("content_changed", rule.accept_changed, "changed (accept_changed)"),
            ("no_valid_trials", frozenset(), "without a valid trial"),
        ):
            ids = [
                t
                for t in pairing.excluded[key]
                if t not in accepted and (t not in infos or rule.selects(infos[t]))
            ]
            if ids:
                parts.append(f"baseline tasks {why}: {', '.join(ids)}")
        return "; ".join(parts)

    def _instruments_differ(self, rule: Rule) -> str:
        """The instrument components (changes.MATCHED) that differ from the baseline's
        and the rule does not allow; '' when none. Two simulators' noise cannot be paired
        out, so a difference between the runs may be the simulator's."""
        return "; ".join(
            f"the {MATCHED[key]} differs from the baseline's ({what}); "
            f"`allow_changed: [{key}]` compares anyway"
            for key, what in self.differ.items()
            if key not in rule.allow_changed
        )

    def relative(self, rule: Rule) -> dict[str, Any]:
        if self.pairing is None:
            return _row(rule, "skip", None, None, "needs --baseline")
        differ = self._instruments_differ(rule)
        if differ:
            return _row(rule, "fail", None, None, differ)
        changes = self._suite_changes(self.pairing, rule)
        if changes:
            return _row(rule, "fail", None, None, changes)
        tasks = self.pairing.select(rule.selects)
        if not tasks:
            return _row(rule, "fail", None, None, "no task shared with the baseline in this slice")
        if rule.kind == "versus":
            return self.test(rule)
        if rule.kind == "no_regressions":
            regressed = [r["id"] for r in self.pairing.verdicts(tasks)["groups"]["regressed"]]
            reason = f"regressed: {', '.join(regressed)}" if regressed else ""
            return _row(rule, "fail" if regressed else "pass", len(regressed), "== 0", reason)
        metric = paired_metric(rule.metric)
        assert metric is not None
        fig = self.pairing.figure(metric, tasks, margin=rule.margin)
        low, high = fig["ci"]
        if low is None or high is None:
            return _row(rule, "fail", fig["difference"], None, "needs two tasks with a value")
        end = "low > " if metric.higher_is_better else "high < "
        threshold = f"95% CI {end}{-rule.margin if metric.higher_is_better else rule.margin:g}"
        reason = f"95% CI [{low:+.4g}, {high:+.4g}] over {fig['tasks']} tasks"
        if not fig["conclusive"]:
            reason = f"{fig['note']}; {reason}"
        status = "pass" if fig["non_inferior"]["passed"] else "fail"
        return _row(rule, status, fig["difference"], threshold, reason)

    def warnings(self) -> list[str]:
        """What `proctor compare` warns of: more than one manifest component changed
        (proctor.decide.changes), then the pairing's warnings."""
        if self.pairing is None or self.baseline is None:
            return []
        b, c = self.baseline.manifest, self.run.manifest
        changed = manifest_changes(b, c)["warning"]
        return [*([changed] if changed else []), *unmatched_warnings(b, c), *self.pairing.warnings]

    def evaluate(self, rules: list[Rule]) -> dict[str, Any]:
        """Every rule's row, the validity row first, the verdict, and the pairing's
        warnings (the ones `proctor compare` prints) when there is a baseline."""
        rows = [self.validity()]
        rows += [self.test(r) if r.kind == "test" else self.relative(r) for r in rules]
        return {
            "run_id": self.run.run_id,
            "baseline_id": self.baseline.run_id if self.baseline else None,
            "passed": all(row["status"] != "fail" for row in rows),
            "failed": sum(row["status"] == "fail" for row in rows),
            "skipped": sum(row["status"] == "skip" for row in rows),
            "warnings": self.warnings(),
            "rules": rows,
        }
