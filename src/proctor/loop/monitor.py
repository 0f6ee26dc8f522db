"""Monitor production: online signals per time window and slice, drift from the baseline.

Production sessions are read from trace files (every format `proctor grade` reads), one
by one, so an unreadable file is skipped and said, not fatal. The mapping
(proctor.loop.mapping) gives each session its tags and, through a suite task, its
outcome; proctor.loop.signals reads its signals. Figures are computed for the whole log,
each time window and each tag; the offline baseline run's trials are read the same way,
and each figure of production is tested against the baseline's (proctor.stats.drift),
Holm-adjusted across all tests. Every session keeps the identifiers that join it to the
rest of the record: its trace id, model and prompt versions, policy decisions, outcome,
user feedback and, once the review desk labels it, the review label.

`monitor` returns data (what `--json` writes); proctor.report.monitor_html renders it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from proctor.core.runs import RunData
from proctor.core.summary import RunSummary
from proctor.core.trace import Trace
from proctor.env.suite import Suite, SuiteTask
from proctor.labels.final import labels_by_trace
from proctor.loop.mapping import Mapping, TagRule
from proctor.loop.signals import Signals, first_of, logged_outcome, parse_time, read_signals
from proctor.stats import rates as stats
from proctor.stats.drift import fisher_exact, mann_whitney
from proctor.stats.paired import holm
from proctor.store.sqlite import RunNotFound, Store
from proctor.tasks.regex import search
from proctor.traces.grading import grade_session
from proctor.traces.imported import Session
from proctor.traces.trace_files import TraceInputError, load_sessions

#: Drift is called when the Holm-adjusted p-value is below this.
ALPHA = 0.05
#: The rate figures: name -> how a session counts (None: not observable for it).
RATES: dict[str, Callable[[Signals], bool | None]] = {
    "success": lambda s: s.outcome,
    "escalation": lambda s: s.escalated,
    "undo": lambda s: s.undone,
    "repeated_calls": lambda s: s.repeated > 0,
    "denied": lambda s: s.denied > 0,
    "abandonment": lambda s: s.abandoned,
}
#: Per-session distributions tested with Mann–Whitney (None: not measured, left out).
DISTRIBUTIONS: dict[str, Callable[[Signals], float | None]] = {
    "latency_s": lambda s: s.latency_s,
    "cost_usd": lambda s: s.cost_usd,
}
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


class MonitorError(ValueError):
    """Input the monitor cannot use; `str()` says which files and why, on one line each."""


@dataclass
class Skipped:
    path: str
    reason: str


def window_seconds(text: str) -> int:
    """`30m`, `6h`, `1d`, `1w` as seconds; ValueError for anything else."""
    number, unit = text[:-1], text[-1:]
    if unit not in UNITS or not number.isdigit() or int(number) < 1:
        raise ValueError(f"window {text!r}: a whole number and one of {', '.join(UNITS)} (6h, 1d)")
    return int(number) * UNITS[unit]


def read_sessions(
    paths: Sequence[str | Path], fmt: str = "auto"
) -> tuple[list[tuple[Session, str]], list[Skipped]]:
    """Every session of every trace file under `paths` (a folder: its files, recursively),
    with the file it came from; files that are not trace files are skipped, with why."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files += sorted(
                p for p in path.rglob("*") if p.is_file() and not p.name.startswith(".")
            )
        elif path.is_file():
            files.append(path)
        else:
            raise MonitorError(f"{path}: no such file or folder")
    sessions, skipped = [], []
    for file in files:
        try:
            sessions += [(s, str(file)) for s in load_sessions(file, fmt)]
        except TraceInputError as exc:
            why = str(exc).removeprefix(f"{file}:").strip()  # the file is named beside it
            skipped.append(Skipped(str(file), f"line {why}" if why[:1].isdigit() else why))
    return sessions, skipped


def _rule_holds(rule: TagRule, session: Session) -> bool:
    if rule.tools and not {tool for tool, _ in session.calls()} & set(rule.tools):
        return False
    if rule.prompt is not None and search(rule.prompt, session.prompt) is None:
        return False
    return all(session.metadata.get(k) == v for k, v in rule.metadata.items())


def session_signals(
    session: Session, source: str, mapping: Mapping, member: SuiteTask | None, trial: int
) -> Signals:
    """Tags, outcome, signals and identifiers of one production session."""
    meta, f = session.metadata, mapping.fields
    tags = [t for t, rule in mapping.tags.items() if _rule_holds(rule, session)]
    escalation = set(mapping.escalation)
    outcome, how = logged_outcome(first_of(meta, f.outcome)), "logged"
    trace = Trace(session.id, session.trace_id or "", session.events)
    if member is not None:
        tags = [*member.task.tags, *(t for t in tags if t not in member.task.tags)]
        safety = member.task.expect.safety
        if safety is not None and safety.escalate is not None:
            escalation |= {p.tool for p in safety.escalate.patterns}
        record, _ = grade_session(session, member, "monitor", trial)
        outcome, how, trace = record.result.passed, "graded", record.trace
    time = parse_time(first_of(meta, f.time))
    version = first_of(meta, f.prompt_version)
    return Signals(
        session_id=session.id,
        trace_id=trace.trace_id or session.id,
        tags=tags,
        task_id=member.id if member is not None else session.task_id,
        time=time,
        model=session.model,
        prompt_version=None if version is None else str(version),
        outcome=outcome,
        outcome_source=how if outcome is not None else None,
        feedback=first_of(meta, f.feedback),
        source=source,
        **read_signals(
            trace,
            escalation=escalation,
            inverses=mapping.inverses,
            domain=member.domain if member is not None else None,
            latency_s=session.latency_s,
        ),
    )


def figures(records: Sequence[Signals]) -> dict[str, Any]:
    """The monitor's figures of a group of sessions (or trials)."""
    out: dict[str, Any] = {"sessions": len(records)}
    for name, count in RATES.items():
        seen = [v for v in map(count, records) if v is not None]
        out[name] = {
            "events": sum(seen),
            "n": len(seen),
            "rate": sum(seen) / len(seen) if seen else None,
        }
    for name, value in DISTRIBUTIONS.items():
        values = measured(value, records)
        p50, p95 = stats.percentiles(values, (50, 95))
        out[name] = {"mean": stats.mean(values), "p50": p50, "p95": p95, "total": sum(values)}
    proposals = sum(r.proposals for r in records)
    out["denied_per_proposal"] = sum(r.denied for r in records) / proposals if proposals else None
    successes = out["success"]["events"]
    costs = measured(DISTRIBUTIONS["cost_usd"], [r for r in records if r.outcome is not None])
    out["cost_per_success_usd"] = sum(costs) / successes if successes and costs else None
    return out


def measured(value: Callable[[Signals], float | None], records: Sequence[Signals]) -> list[float]:
    """A distribution's values over the sessions that measured it."""
    return [v for v in map(value, records) if v is not None]


def _window_label(moment: datetime | None, width: int) -> str:
    if moment is None:
        return "no time"
    start = int(moment.timestamp()) // width * width
    return datetime.fromtimestamp(start, UTC).strftime("%Y-%m-%dT%H:%MZ")


def by_slice(records: Sequence[Signals]) -> dict[str, list[Signals]]:
    groups: dict[str, list[Signals]] = {}
    for r in records:
        for tag in r.tags:
            groups.setdefault(f"tag:{tag}", []).append(r)
    return dict(sorted(groups.items()))


@dataclass
class Baseline:
    """The offline run production is held against, read as sessions."""

    run_id: str
    records: list[Signals]
    #: Signals read from traces (False for an exported run file: outcome, latency, cost only).
    traced: bool
    summary: RunSummary | None = None


def baseline_signals(
    run: RunData, store: Store | None, mapping: Mapping, suite: Suite | None
) -> Baseline:
    """Each valid trial of the baseline run as a session: its traces when the store has
    them (so every signal is read the same way), else its results alone."""
    infos = run.task_infos()
    members = {t.id: t for t in suite.tasks} if suite is not None else {}
    records, traced = [], store is not None
    for r in run.results:
        if not r.valid:
            continue
        info = infos.get(r.task_id)
        tags = list(info.tags) if info is not None else []
        record = Signals(f"{r.task_id}#{r.trial}", r.trace_id, tags, r.task_id)
        record.outcome, record.outcome_source = r.passed, "graded"
        record.latency_s, record.cost_usd = r.latency_s, r.usage.complete("cost")
        if store is not None:
            try:
                trace, _, _ = store.trace(run.run_id, r.task_id, r.trial)
            except RunNotFound:
                traced = False
            else:
                member = members.get(r.task_id)
                escalation = set(mapping.escalation)
                if (
                    member is not None
                    and member.task.expect.safety
                    and member.task.expect.safety.escalate
                ):
                    escalation |= {p.tool for p in member.task.expect.safety.escalate.patterns}
                for key, value in read_signals(
                    trace,
                    escalation=escalation,
                    inverses=mapping.inverses,
                    domain=member.domain if member else None,
                    latency_s=r.latency_s,
                ).items():
                    setattr(record, key, value)
        records.append(record)
    return Baseline(run.run_id, records, traced, run.summary)


def drift_tests(
    production: dict[str, list[Signals]], baseline: dict[str, list[Signals]], traced: bool
) -> list[dict[str, Any]]:
    """Every figure of every scope both sides have, tested; Holm-adjusted together."""
    rows: list[dict[str, Any]] = []
    for scope, records in production.items():
        base = baseline.get(scope)
        if not base:
            continue
        for name, count in RATES.items():
            if not traced and name != "success":
                continue
            p_seen = [v for v in map(count, records) if v is not None]
            b_seen = [v for v in map(count, base) if v is not None]
            if not p_seen or not b_seen:
                continue
            pk, bk = sum(p_seen), sum(b_seen)
            rows.append(
                {
                    "scope": scope,
                    "metric": f"{name}_rate",
                    "test": "fisher_exact",
                    "production": pk / len(p_seen),
                    "baseline": bk / len(b_seen),
                    "n": [len(p_seen), len(b_seen)],
                    "p": fisher_exact(pk, len(p_seen), bk, len(b_seen)),
                }
            )
        for name, value in DISTRIBUTIONS.items():
            p_values, b_values = measured(value, records), measured(value, base)
            p = mann_whitney(p_values, b_values)
            if p is None:
                continue
            rows.append(
                {
                    "scope": scope,
                    "metric": name,
                    "test": "mann_whitney",
                    "production": stats.percentile(p_values, 50),
                    "baseline": stats.percentile(b_values, 50),
                    "n": [len(p_values), len(b_values)],
                    "p": p,
                }
            )
    for row, adjusted in zip(rows, holm([r["p"] for r in rows]), strict=True):
        row["p_holm"] = adjusted
        row["drifted"] = adjusted < ALPHA
    return rows


@dataclass
class MonitorInputs:
    paths: list[str]
    mapping: Mapping
    window: str = "1d"
    suite: Suite | None = None
    baseline: RunData | None = None
    store: Store | None = None
    fmt: str = "auto"
    mapping_path: str = ""


def monitor(inputs: MonitorInputs) -> tuple[dict[str, Any], list[Signals]]:
    """The monitor's figures (JSON-ready) and the session records they come from."""
    width = window_seconds(inputs.window)
    sessions, skipped = read_sessions(inputs.paths, inputs.fmt)
    if not sessions:
        why = "; ".join(f"{s.path}: {s.reason}" for s in skipped) or "no files"
        raise MonitorError(f"no production session to monitor ({why})")
    members = {t.id: t for t in inputs.suite.tasks} if inputs.suite is not None else {}
    records = []
    for i, (session, source) in enumerate(sessions):
        task_id = inputs.mapping.sessions.get(session.id, session.task_id)
        records.append(
            session_signals(session, source, inputs.mapping, members.get(task_id or ""), i)
        )
    if inputs.store is not None:  # the review desk's label of the trial a session became
        labels = labels_by_trace(inputs.store, [r.trace_id for r in records])
        for r in records:
            r.review_label = labels.get(r.trace_id)
    if not any(r.tags or r.task_id in members for r in records):
        raise MonitorError(
            f"{inputs.mapping_path or 'the mapping'}: maps nothing: none of the {len(records)} "
            "sessions got a tag or a suite task (check `tags` rules, `sessions` ids, --suite)"
        )
    windows: dict[str, list[Signals]] = {}
    for r in sorted(
        records, key=lambda r: (r.time is None, r.time or datetime.min.replace(tzinfo=UTC))
    ):
        windows.setdefault(_window_label(r.time, width), []).append(r)
    slices = by_slice(records)
    out: dict[str, Any] = {
        "sources": inputs.paths,
        "mapping": inputs.mapping_path,
        "window": inputs.window,
        "sessions": len(records),
        "skipped": [{"path": s.path, "reason": s.reason} for s in skipped],
        "overall": figures(records),
        "windows": [{"window": w, **figures(rs)} for w, rs in windows.items()],
        "slices": {name: figures(rs) for name, rs in slices.items()},
        "baseline": None,
        "drift": [],
        "records": [r.to_dict() for r in records],
    }
    if inputs.baseline is not None:
        base = baseline_signals(inputs.baseline, inputs.store, inputs.mapping, inputs.suite)
        base_slices = by_slice(base.records)
        out["baseline"] = {
            "run_id": base.run_id,
            "traced": base.traced,
            "overall": figures(base.records),
            "slices": {name: figures(rs) for name, rs in base_slices.items()},
        }
        out["drift"] = drift_tests(
            {"overall": records, **slices}, {"overall": base.records, **base_slices}, base.traced
        )
    return out, records
