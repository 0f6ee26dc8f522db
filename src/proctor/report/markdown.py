"""The one-page Markdown report for people who decide: a governance committee, a product owner.

Every sentence is built from the run's figures (the RunSummary, the gate, the comparison,
the review queue); nothing is praise written in advance. Lists are capped so the page
fits on one printed sheet; the HTML report has everything. Identifiers (task ids, check
names, rules) are set in code spans and free text is escaped, so a name from a task file
cannot turn into Markdown or HTML.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from proctor.core.results import partly_measured
from proctor.report.figures import (
    Headline,
    consistency,
    headline,
    quality_note,
    review_note,
)
from proctor.report.fmt import (
    NOT_MEASURED,
    count,
    detectable_drop,
    money,
    pct,
    secs,
    value,
    where_text,
)
from proctor.report.human import human_sentence
from proctor.report.inputs import ReportInputs, gate_line
from proctor.report.judge_tables import judge_statements
from proctor.report.recommendation import recommend

MAX_VIOLATION_LINES = 6
MAX_RULE_LINES = 4
_PURPOSE = {
    "capability": "whether it can do the job",
    "regression": "whether it still does what worked before",
    "adversarial": "whether it resists attacks and misuse",
    "replay": "how it handles recorded real cases",
}
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|#&])")


def esc(text: Any) -> str:
    """Free text with Markdown and HTML specials backslash-escaped, on one line."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


def code(text: Any) -> str:
    """An inline code span that no backtick inside the text can close."""
    text = " ".join(str(text).split())
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _and(items: list[str]) -> str:
    return (
        ", ".join(items[:-1]) + (" and " if len(items) > 1 else "") + (items[-1] if items else "")
    )


def _n(number: int, noun: str) -> str:
    """`1 trial`, `2 trials`: the noun agrees with the number."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _trials(numbers: list[int]) -> str:
    return ("trial " if len(numbers) == 1 else "trials ") + ", ".join(map(str, numbers))


def _evaluated(inputs: ReportInputs, h: Headline) -> list[str]:
    m, s = inputs.manifest, inputs.summary
    slices = s.slices
    kinds = [k for k in _PURPOSE if f"suite:{k}" in slices]
    domains = ", ".join(sorted(m.suite.domains)) or "simulated"
    parts = [f"{slices[f'suite:{k}'].tasks} {k}" for k in kinds]

    def tasks_in(name: str) -> int:
        return slices[name].tasks if name in slices else 0

    purposes = _and([_PURPOSE[k] for k in kinds]) or "its behaviour on these tasks"
    return [
        "## What was evaluated, and why",
        "",
        f"The agent {esc(m.agent.name)} ({code(m.agent.ref or 'unknown')}) was given "
        f"{_n(s.tasks, 'task')} in a simulated environment ({esc(domains)}), "
        f"{_n(h.k, 'attempt')} each ({_n(s.trials, 'trial')}), every attempt in a fresh "
        "copy of the environment. "
        f"The suite tests {purposes}. Tasks: {', '.join(parts) or 'no suite labels'} "
        f"(a task may be in several); {tasks_in('risk:high')} high-risk; "
        f"{tasks_in('split:holdout')} held out from development; "
        f"adversarial cases: {tasks_in('suite:adversarial')}.",
    ]


def _reliability(inputs: ReportInputs, h: Headline) -> list[str]:
    s = inputs.summary
    groups = consistency(s)
    counted = sum(len(v) for v in groups.values())
    weakest = sorted(
        ((name, sl.success_rate) for name, sl in s.slices.items() if sl.success_rate is not None),
        key=lambda item: (item[1], item[0]),
    )[:3]
    lines = [
        "## Success and reliability",
        "",
        f"- Task success: **{pct(h.success)}**, the mean over {_n(h.tasks, 'task')} of each "
        f"task's pass rate (pass@1: a single attempt succeeds this often; "
        f"{h.success_ci_text}). Pooled over trials: {h.passed} of "
        f"{h.valid} valid trials passed ({pct(h.pooled)}); {pct(h.partial)} were partial.",
    ]
    if h.k > 1:
        lines.append(
            f"- pass^{h.k}: **{pct(h.pass_hat_k)}**: the agent succeeds on every one of {h.k} "
            f"attempts for {pct(h.pass_hat_k)} of tasks."
        )
    if h.incomplete:
        lines.append(f"- {esc(h.incomplete)}.")
    if h.efficiency is not None:
        lines.append(
            f"- Step efficiency: {pct(h.efficiency)} (optimal steps / tool calls in passed "
            f"trials, over {_n(h.efficiency_tasks, 'task')} that state their optimal steps)."
        )
    return [
        *lines,
        f"- Of {_n(counted, 'task')}, {len(groups['always'])} always succeeded, "
        f"{len(groups['sometimes'])} only sometimes, {len(groups['never'])} never.",
        "- Weakest slices: "
        + ", ".join(f"{code(name)} {pct(rate)}" for name, rate in weakest)
        + ".",
    ]


def _escalation(inputs: ReportInputs) -> str:
    tallies = {}
    for name, what in (("escalated", "escalated"), ("declined_out_of_scope", "declined")):
        checks = [c for r in inputs.run.results if r.valid for c in r.checks if c.name == name]
        if checks:
            tallies[what] = (sum(c.passed for c in checks), len(checks))
    if not tallies:
        return "Escalation: no task in this suite tested handing off to a human or declining."
    parts = []
    if "escalated" in tallies:
        ok, n = tallies["escalated"]
        parts.append(f"it escalated to a human in {ok} of {n} trials that required it")
    if "declined" in tallies:
        ok, n = tallies["declined"]
        parts.append(f"declined out-of-scope requests in {ok} of {n} trials")
    return "Escalation: " + "; ".join(parts) + "."


def _safety(inputs: ReportInputs, h: Headline) -> list[str]:
    grouped: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for v in inputs.summary.safety_violations.trials:
        grouped[(v.severity or "unknown", v.check, v.task_id)].append(v.trial)
    rank = {s: i for i, s in enumerate(h.by_severity)}
    keys = sorted(grouped, key=lambda key: (rank.get(key[0], 99), key[1], key[2]))
    lines = ["## Safety", ""]
    if not keys:
        lines.append("No safety check failed: 0 violations.")
    else:
        affected = len({(v.task_id, v.trial) for v in inputs.summary.safety_violations.trials})
        lines.append(
            f"{_n(h.violations, 'safety violation')} ({h.severity_text()}) in "
            f"{_n(affected, 'trial')}:"
        )
        lines.append("")
        for key in keys[:MAX_VIOLATION_LINES]:
            sev, check, task = key
            lines.append(f"- {esc(sev)}: {code(check)} on {code(task)}, {_trials(grouped[key])}")
        if len(keys) > MAX_VIOLATION_LINES:
            lines.append(f"- … {len(keys) - MAX_VIOLATION_LINES} more in the HTML report.")
    lines += ["", _escalation(inputs)]
    return lines


def _cost(inputs: ReportInputs, h: Headline) -> list[str]:
    s = inputs.summary
    bound = h.cost_partial > 0
    per_success = (
        "no trial passed"
        if h.cost_per_passed_trial is None
        else f"{money(h.cost_per_passed_trial, h.currency, at_least=bound)} per passed trial"
    )
    cost = (
        f"Total {money(h.total_cost, h.currency, at_least=bound)} for {_n(s.trials, 'trial')}"
        + (f" ({partly_measured(h.cost_partial, 'cost')})" if bound else "")
        + f"; {per_success}"
        if h.cost_measured
        else f"Cost {NOT_MEASURED} (no trial reported one)"
    )
    tokens = (
        f"{'≥ ' if h.tokens_partial else ''}{count(s.tokens.mean)} tokens on average"
        + (f" ({partly_measured(h.tokens_partial, 'tokens')})" if h.tokens_partial else "")
        if h.tokens_measured
        else f"tokens {NOT_MEASURED}"
    )
    simulated = (
        f" Of a trial's time, p95 {secs(h.p95_simulated)} was simulated (tool latencies, "
        "injected faults, waits), not timed."
        if h.p95_simulated
        else ""
    )
    return [
        "## Cost and time",
        "",
        f"{cost}; per trial, p95 latency {secs(h.p95_latency)} and p95 "
        f"{count(h.p95_tool_calls)} tool calls; {tokens}.{simulated}",
    ]


def _review(inputs: ReportInputs) -> list[str]:
    q = inputs.queue
    counts = ", ".join(f"{n} {name.replace('_', ' ')}" for name, n in q["counts"].items())
    return [
        "## Human review",
        "",
        f"{q['queued']} of {q['trials']} trials are queued for a person to read"
        + (f" (a trial may have several reasons: {counts})" if counts else "")
        + f"; see the HTML report or `proctor review-queue {inputs.run.run_id}`.",
        *(["", esc(human_sentence(inputs.human))] if inputs.human else []),
    ]


def _gate(inputs: ReportInputs) -> list[str]:
    lines = ["## Release gate", ""]
    gate = inputs.gate
    if gate is None:
        lines.append("No gate rules were evaluated for this report.")
    else:
        lines.append(gate_line(gate) + ".")
        failed = [row for row in gate["rules"] if row["status"] == "fail"]
        lines += [""] if failed else []
        for row in failed[:MAX_RULE_LINES]:
            where = where_text(row["where"])
            reason = f"; {esc(row['reason'])}" if row["reason"] else ""
            lines.append(
                f"- failed {code(row['rule'])}"
                + (f" on {code(where)}" if where else "")
                + f": value {esc(value(row['value']))}{reason}"
            )
        if len(failed) > MAX_RULE_LINES:
            lines.append(
                f"- … {len(failed) - MAX_RULE_LINES} more failed rules in the HTML report."
            )
    c = inputs.comparison
    if c is not None:
        mc, ni = c["mcnemar"], c["non_inferiority"]
        lines += [
            "",
            f"Against baseline {code(c['baseline']['run_id'])} on {c['tasks']} shared tasks: "
            f"{mc['improved']} improved, {mc['regressed']} regressed (McNemar p = "
            f"{mc['p_value']:.3g}); task success non-inferior at a "
            f"{100 * ni['margin']:.1f}-point margin: {'yes' if ni['passed'] else 'no'}.",
        ]
    return lines


def _limits(inputs: ReportInputs, h: Headline) -> list[str]:
    s, m = inputs.summary, inputs.manifest
    low, high = h.success_ci
    lines = [
        "## Not measured",
        "",
        "- The real-world effect: whether people who act on the agent's output (clinicians, "
        "case workers, customers) decide better or worse with it.",
        "- Human factors: over-reliance, automation bias, workload, how answers are read.",
        "- Real systems: tools, records and users are simulated; replies are scripted.",
        "",
        "## Limitations",
        "",
    ]
    if s.mde is not None:
        lines.append(
            f"- Size: {s.tasks} tasks × {h.k} attempts. Compared with another run of this "
            f"size, only drops in success of {100 * s.mde:.1f} points or more are found "
            "(80% power)."
        )
    elif s.success_rate is not None:
        lines.append(f"- Size: {s.tasks} tasks × {h.k} attempts: {detectable_drop(s)}.")
    if low is not None and high is not None:
        lines.append(f"- The 95% interval of task success is {100 * (high - low):.1f} points wide.")
    if m.judges:
        lines += [f"- {esc(line)}" for line in judge_statements(m, s.judges)]
    else:
        lines.append(
            "- Answers are checked by rules (phrases, patterns, grounding), not by an expert."
        )
    holdout, dev = s.slices.get("split:holdout"), s.slices.get("split:dev")
    if holdout is None:
        lines.append("- No held-out tasks: the agent may have been tuned on these very tasks.")
    elif dev is not None:
        lines.append(
            f"- Held-out tasks: {pct(holdout.success_rate)} success, against "
            f"{pct(dev.success_rate)} on development tasks."
        )
    if s.errors:
        lines.append(
            f"- {_n(s.errors, 'trial')} broke in the harness; they are left out of the figures."
        )
    if (note := quality_note(s)) is not None:
        lines.append(f"- {esc(note)}")
    if (note := review_note(s)) is not None:
        lines.append(f"- {esc(note)}")
    return lines


def render_markdown(inputs: ReportInputs) -> str:
    """The one-pager as Markdown text."""
    m = inputs.manifest
    h = headline(inputs.summary)
    rec = recommend(inputs.summary, inputs.gate, inputs.queue["queued"])
    why = esc("; ".join(rec.reasons))
    agent = f"{m.agent.name} {m.agent.version}".strip()
    head = [
        f"# Agent evaluation: {esc(agent)} on the {esc(m.suite.name)} suite",
        "",
        f"{esc(m.created_at or '')} · run {code(inputs.run.run_id)} · model "
        f"{esc(m.model or 'unknown')} · suite {code('@' + m.suite.digest)} · "
        f"seed {m.seed} · proctor {esc(m.proctor_version or '')}",
        "",
        f"**Recommendation: {rec.decision}.** {why[0].upper() + why[1:]}.",
        "",
    ]
    sections = [
        _evaluated(inputs, h),
        _reliability(inputs, h),
        _safety(inputs, h),
        _cost(inputs, h),
        _review(inputs),
        _gate(inputs),
        _limits(inputs, h),
    ]
    return "\n".join(head + [line for part in sections for line in [*part, ""]]).rstrip() + "\n"


def write_markdown(path: str | Path, inputs: ReportInputs) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_markdown(inputs), encoding="utf-8")
