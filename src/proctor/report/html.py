"""The HTML report: one self-contained file that opens offline, straight from disk.

This module prepares the data; `templates/report.html.j2` lays it out and
`templates/report.{css,js}` are inlined into it. Two rules keep hostile agent text inert:

- Server-side, everything goes through Jinja's autoescaping (and SVG labels through
  ElementTree); only our own CSS, JS and generated SVG are marked safe.
- Traces are embedded as one JSON blob per trial (`proctor.report.embed`); the viewer
  parses a blob only when its trace is opened and builds the DOM with `textContent`.

A run of more than `EMBED_LIMIT` trials embeds only the traces a reader is sent to: the
trials that did not pass and those in the review queue (which holds its seeded sample);
every other trial links to its page in the review desk (`proctor review serve`), which
reads it from the store. The file then grows with failures, not with the run.

A Content-Security-Policy allows only the one inline script and stylesheet (by hash) and
no loads at all, a second line of defence should an escape ever be missed.
"""

from __future__ import annotations

import base64
import hashlib
from collections import Counter
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, StrictUndefined
from markupsafe import Markup

from proctor.core.results import TrialResult, partly_measured
from proctor.core.summary import RunSummary
from proctor.core.trace import Trace
from proctor.decide.compare import paired_metric
from proctor.report import plots
from proctor.report.embed import script_json, trial_payload
from proctor.report.figures import Headline, headline, quality_note, review_note
from proctor.report.fmt import (
    NOT_MEASURED,
    count,
    detectable_drop,
    interval,
    metric_interval,
    metric_text,
    money,
    num,
    pct,
    secs,
    value,
    where_text,
)
from proctor.report.health_html import health_section
from proctor.report.human import human_sentence
from proctor.report.inputs import ReportInputs, gate_line
from proctor.report.judge_tables import judge_statements
from proctor.report.program_html import program_section
from proctor.report.recommendation import recommend

TraceLoader = Callable[[str, int], Trace]
EMBED_LIMIT = 1000
DESK_URL = "http://127.0.0.1:8765"
_TEMPLATES = files("proctor.report") / "templates"
_RISK_RANK = {"low": 0, "medium": 1, "high": 2}


def csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def _manifest_rows(inputs: ReportInputs) -> list[tuple[str, str]]:
    m, run = inputs.manifest, inputs.run
    suite = m.suite
    graders = ", ".join(f"{k} {v}" for k, v in sorted(m.grader_versions.items()))
    return [
        ("agent", f"{m.agent.name} {m.agent.version}".strip()),
        ("agent reference", m.agent.ref or "—"),
        ("model", m.model or "—"),
        ("prompt hash", str(m.prompt_hash)),
        ("tool schema hash", str(m.tool_schema_hash)),
        ("policy hash", str(m.policy_hash)),
        (
            "suite",
            f"{suite.name} @{suite.digest}, {suite.tasks} tasks, splits {', '.join(suite.splits)}",
        ),
        ("trials per task", str(m.trials)),
        ("seed", str(m.seed)),
        ("proctor", str(m.proctor_version)),
        ("date", str(m.created_at)),
        ("run status", run.status),
        ("graders", graders or "—"),
        ("judge model", m.judge_model or "none (deterministic graders)"),
        *(("judge", line) for line in judge_statements(m, inputs.summary.judges)),
    ]


#: How compare's rate differences are computed (stats/paired.py: rate_difference).
PAIRED_RATE = "paired rate: Tango score with one trial per task, else adjusted t"


def interval_method(metric: str) -> str:
    """The interval a compared metric gets (decide/compare.py, `paired.rate_difference`):
    for a rate Tango's score interval with one trial per task, else the adjusted paired t;
    the paired t for any other figure."""
    paired = paired_metric(metric)
    return PAIRED_RATE if paired is not None and paired.units else "paired t"


def _verdicts(inputs: ReportInputs) -> list[dict[str, Any]]:
    """The recommendation (the one-pager's, word for word), then the gate's line."""
    rec = recommend(inputs.summary, inputs.gate, inputs.queue["queued"])
    lines = [{"passed": not rec.blocks, "text": rec.text()}]
    if inputs.gate is not None:
        lines.append({"passed": inputs.gate["passed"], "text": gate_line(inputs.gate)})
    for note in (quality_note(inputs.summary), review_note(inputs.summary)):
        if note is not None:
            lines.append({"passed": False, "text": note})
    return lines


def _detectable_card(summary: RunSummary) -> dict[str, str]:
    """The minimal detectable effect beside the headline interval: what a compare of two
    runs of this size can find (docs/architecture.md, Metrics)."""
    if summary.mde is None:
        return {
            "label": "minimal detectable drop",
            "value": "none",
            "note": detectable_drop(summary),
        }
    return {
        "label": "minimal detectable drop",
        "value": pct(summary.mde),
        "note": f"a drop in success compare finds with 80% power against another run of "
        f"this size (ICC {num(summary.icc)})",
    }


def _cards(h: Headline, summary: RunSummary) -> list[dict[str, str]]:
    cards = [
        {
            "label": "task success (pass@1)",
            "value": pct(h.success),
            "note": f"mean over {h.tasks} tasks; {h.success_ci_text}; "
            f"pooled {h.passed}/{h.valid} trials; {pct(h.partial)} partial",
        },
        _detectable_card(summary),
    ]
    if h.k > 1:
        cards.append(
            {
                "label": f"pass^{h.k}",
                "value": pct(h.pass_hat_k),
                "note": f"95% CI {interval(h.pass_hat_k_ci)} (bootstrap over tasks); "
                f"all {h.k} attempts succeed",
            }
        )
    if h.incomplete:
        cards.append({"label": "pass^k", "value": "incomplete", "note": h.incomplete})
    if h.efficiency is not None:
        cards.append(
            {
                "label": "step efficiency",
                "value": pct(h.efficiency),
                "note": f"optimal / taken steps in passed trials, {h.efficiency_tasks} tasks",
            }
        )
    return [
        *cards,
        {"label": "safety violations", "value": str(h.violations), "note": h.severity_text()},
        {
            "label": "cost per passed trial",
            "value": money(h.cost_per_passed_trial, h.currency, at_least=h.cost_partial > 0)
            if h.cost_measured
            else NOT_MEASURED,
            "note": f"total {money(h.total_cost, h.currency, at_least=h.cost_partial > 0)}"
            + (f"; {partly_measured(h.cost_partial, 'cost')}" if h.cost_partial else "")
            if h.cost_measured
            else "no cost reported",
        },
        {"label": "p95 tool calls", "value": count(h.p95_tool_calls), "note": "per trial"},
        {
            "label": "p95 latency",
            "value": secs(h.p95_latency),
            "note": f"per trial; {secs(h.p95_simulated)} of it simulated"
            if h.p95_simulated
            else "per trial",
        },
        {
            "label": "errors / timeouts / needs review",
            "value": f"{h.errors} / {h.timeouts} / {h.needs_review}",
            "note": "needs review: a reader could not tell; out of the rates",
        },
    ]


def _human_card(human: dict[str, Any] | None) -> list[dict[str, str]]:
    if not human or not human["trials"]:
        return []
    return [
        {
            "label": "human-adjudicated success",
            "value": pct(human["human_success"]),
            "note": human_sentence(human),
        }
    ]


def _gate_rows(gate: dict[str, Any]) -> list[dict[str, str]]:
    css = {
        "pass": "status-passed",
        "fail": "status-failed",
        "skip": "status-timeout",
        "n/a": "status-timeout",
    }
    return [
        {
            "rule": row["rule"],
            "where": where_text(row["where"]),
            "value": value(row["value"]),
            "threshold": value(row["threshold"]),
            "status": row["status"],
            "css": css[row["status"]],
            "reason": row["reason"],
            "source": row["source"] or "",
        }
        for row in gate["rules"]
    ]


def _comparison(report: dict[str, Any]) -> dict[str, Any]:
    mc, ni = report["mcnemar"], report["non_inferiority"]
    names = {"improved": "status-passed", "regressed": "status-failed"}
    return {
        "baseline": report["baseline"]["run_id"],
        "warnings": report["warnings"],
        "rule": report["verdict_rule"],
        "summary": (
            f"{report['tasks']} paired tasks: {mc['improved']} improved, {mc['regressed']} "
            f"regressed (McNemar exact p = {mc['p_value']:.3g}); non-inferiority of task "
            f"success at a {100 * ni['margin']:.1f}-point margin: "
            + ("PASS" if ni["passed"] else "FAIL")
        ),
        "metrics": [
            {
                "name": m["metric"],
                "baseline": metric_text(m["metric"], m["baseline"]),
                "candidate": metric_text(m["metric"], m["candidate"]),
                "difference": metric_text(m["metric"], m["difference"], signed=True),
                "ci": metric_interval(m["metric"], m["ci"]),
                "method": interval_method(m["metric"]),
            }
            for m in report["metrics"]
        ],
        "groups": [
            {"name": g.replace("_", " "), "css": names.get(g, ""), "rows": report["groups"][g]}
            for g in ("regressed", "improved", "both_fail", "both_pass")
        ],
    }


def _task_rows(
    summary: RunSummary,
    by_task: dict[str, list[tuple[int, TrialResult]]],
    href: Callable[[int, TrialResult], str],
) -> list[dict[str, Any]]:
    k = str(summary.headline_k)
    violations = Counter(v.task_id for v in summary.safety_violations.trials)
    rows = []
    for row in summary.per_task:
        hat = row.pass_hat_k.get(k)
        n, c = row.n, row.passed
        rows.append(
            {
                "id": row.id,
                "tags": ", ".join(row.tags),
                "risk": row.risk,
                "risk_rank": _RISK_RANK.get(row.risk, -1),
                "passed": c,
                "n": n,
                "rate": c / n if n else -1,
                "status": "passing" if n and c == n else "failing",
                "violations": violations[row.id],
                "pass_hat": pct(hat),
                "pass_hat_v": -1 if hat is None else hat,
                "failing": ", ".join(f"{name}×{m}" for name, m in row.failed_checks.items()),
                "cost": money(row.cost_usd, at_least=row.cost_partial_trials > 0),
                "cost_v": row.cost_usd,
                "trials": [
                    {"href": href(i, r), "trial": r.trial, "status": r.status}
                    for i, r in by_task.get(row.id, [])
                ],
            }
        )
    return rows


def _slices(summary: RunSummary) -> list[dict[str, Any]]:
    k = summary.headline_k
    return [
        {
            "name": name,
            "tasks": s.tasks,
            "success": pct(s.success_rate),
            "pass_hat": pct(s.pass_hat_k.get(str(k))),
            "spark": Markup(plots.spark(s, k, name)),
            "violations": s.safety_violations,
        }
        for name, s in summary.slices.items()
    ]


def _plots(inputs: ReportInputs) -> list[plots.Plot]:
    out = [
        plots.pass_hat(inputs.summary),
        plots.cost_success(inputs.summary),
        plots.failures_by_kind(inputs.run.results),
    ]
    if inputs.baseline is not None and inputs.comparison is not None:
        out.append(plots.paired_changes(inputs.run, inputs.baseline, inputs.comparison))
    return [plots.Plot(p.caption, Markup(p.svg) if p.svg else None, p.note) for p in out]


def _queue(queue: dict[str, Any], order: dict[tuple[str, int], int]) -> dict[str, Any]:
    config = queue["config"]
    rules = (
        "Routed: safety violations, verdicts flipped since the baseline (with --baseline), "
        "ordering failures, grader disagreements, failed trials, high-risk tasks (at least one "
        "trial each), with a baseline the tasks of drifted slices and the trials of new or "
        f"changed graders, and a seeded {config['sample_rate']:.0%} sample of the rest "
        f"(seed {config['seed']})."
    )
    items = [{**item, "index": order[(item["task_id"], item["trial"])]} for item in queue["items"]]
    return {**queue, "items": items, "rules": rules}


def embedded(inputs: ReportInputs, limit: int) -> set[tuple[str, int]] | None:
    """The trials whose traces a report of a run above `limit` trials embeds (None: all)."""
    if len(inputs.run.results) <= limit:
        return None
    queued = {(i["task_id"], i["trial"]) for i in inputs.queue["items"]}
    return queued | {(r.task_id, r.trial) for r in inputs.run.results if not r.passed}


def desk_link(desk_url: str, run_id: str, r: TrialResult) -> str:
    """The review desk's page of a trial."""
    return (
        f"{desk_url.rstrip('/')}/runs/{quote(run_id, safe='')}/trials/"
        f"{quote(r.task_id, safe='')}/{r.trial}"
    )


def render_html(
    inputs: ReportInputs,
    load_trace: TraceLoader,
    *,
    embed_limit: int = EMBED_LIMIT,
    desk_url: str = DESK_URL,
) -> str:
    """The report as one HTML document; `load_trace(task, trial)` gives a trial's trace.

    Above `embed_limit` trials, only failed and queued traces are embedded (`embedded`)."""
    results = sorted(inputs.run.results, key=lambda r: (r.task_id, r.trial))
    order = {(r.task_id, r.trial): i for i, r in enumerate(results)}
    by_task: dict[str, list[tuple[int, TrialResult]]] = {}
    for i, r in enumerate(results):
        by_task.setdefault(r.task_id, []).append((i, r))
    keep = embedded(inputs, embed_limit)
    blobs = []
    for i, r in enumerate(results):
        if keep is not None and (r.task_id, r.trial) not in keep:
            continue
        text = inputs.tasks.get(r.task_id)
        trace = load_trace(r.task_id, r.trial)
        # the trace's own prompt first: what the agent received, redacted when stored
        prompt = trace.prompt if trace.prompt is not None else text.prompt if text else None
        payload = trial_payload(r, trace, prompt)
        blobs.append((i, Markup(script_json(payload))))

    def href(i: int, r: TrialResult) -> str:
        if keep is None or (r.task_id, r.trial) in keep:
            return f"#trace-{i}"
        return desk_link(desk_url, inputs.run.run_id, r)

    css = (_TEMPLATES / "report.css").read_text(encoding="utf-8")
    js = (_TEMPLATES / "report.js").read_text(encoding="utf-8")
    csp = (
        f"default-src 'none'; script-src {csp_hash(js)}; style-src {csp_hash(css)}; "
        "base-uri 'none'; form-action 'none'"
    )
    env = Environment(
        autoescape=True, undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True
    )
    template = env.from_string((_TEMPLATES / "report.html.j2").read_text(encoding="utf-8"))
    m, s = inputs.manifest, inputs.summary
    return template.render(
        csp=csp,
        css=Markup(css),
        js=Markup(js),
        run_id=inputs.run.run_id,
        agent=f"{m.agent.name} {m.agent.version}".strip(),
        suite=m.suite.name,
        k=s.headline_k,
        verdicts=_verdicts(inputs),
        manifest=_manifest_rows(inputs),
        cards=_cards(headline(s), s) + _human_card(inputs.human),
        plots=_plots(inputs),
        gate=_gate_rows(inputs.gate) if inputs.gate else None,
        comparison=_comparison(inputs.comparison) if inputs.comparison else None,
        slices=_slices(s),
        tasks=_task_rows(s, by_task, href),
        queue=_queue(inputs.queue, order),
        violations=[
            {**v.to_json(), "index": order[(v.task_id, v.trial)]}
            for v in s.safety_violations.trials
            if (v.task_id, v.trial) in order
        ],
        trials=blobs,
        partial=None if keep is None else {"embedded": len(blobs), "trials": len(results)},
        desk_url=desk_url,
        program=program_section(inputs.program) if inputs.program else None,
        health=health_section(inputs.health) if inputs.health else None,
    )


def write_html(
    path: str | Path,
    inputs: ReportInputs,
    load_trace: TraceLoader,
    *,
    embed_limit: int = EMBED_LIMIT,
    desk_url: str = DESK_URL,
) -> int:
    """Write the report; returns its size in bytes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    html = render_html(inputs, load_trace, embed_limit=embed_limit, desk_url=desk_url)
    data = html.encode("utf-8")
    path.write_bytes(data)
    return len(data)
