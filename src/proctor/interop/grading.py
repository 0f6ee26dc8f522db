"""Grade imported sessions against a suite's tasks and store them as a run.

A session meets its task by the task id it carries or by a mapping file (`{session id:
task id}`). Trajectory, answer, safety and budget checks apply as to a live trial. The
ledger of effects is rebuilt from the trace: its `state_change` events where it has them
(proctor's own export), else every successful call of a tool the domain declares a write.
Path checks on the final state apply only when the session carries that state; otherwise
they are left out, and the run's manifest lists them under `import.skipped_checks`.

The run gets a manifest like a live run's (agent name from the traces, suite digest,
grader versions), so `show`, `compare`, `gate`, `export` and reports work on it.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proctor.core.documents import read_yaml
from proctor.core.outcome import LedgerEntry, Outcome
from proctor.core.results import TrialResult
from proctor.core.trace import Trace, TraceEvent
from proctor.decide.scorecard import summary_with_scorecard
from proctor.decide.summary import DEFAULT_MAX_ERROR_RATE
from proctor.env.domain import Domain
from proctor.env.suite import Suite, SuiteTask
from proctor.grade.context import GradeContext
from proctor.grade.state import STATE_NOTE, state_recorded, without_state_checks
from proctor.interop.session import Session
from proctor.run.manifest import build_manifest
from proctor.run.runner import task_infos
from proctor.run.trial import TrialRecord, judge, trial_trace_id, usage_of

if TYPE_CHECKING:
    from proctor.store.sqlite import Store


@dataclass(frozen=True)
class ImportedAgent:
    """What the manifest records of the agent behind imported sessions."""

    name: str
    model: str | None = None
    version: str = ""
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass
class GradedRun:
    run_id: str
    manifest: dict[str, Any]
    summary: dict[str, Any]
    results: list[TrialResult]
    unmatched: list[str]


def load_mapping(path: str | Path) -> dict[str, str]:
    """A `{session id: task id}` YAML/JSON file; a bad one is a ValueError (one line)."""
    path = Path(path)
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: the mapping must be `session id: task id` pairs")
    return {str(k): str(v) for k, v in data.items()}


def match_sessions(
    sessions: Sequence[Session], suite: Suite, mapping: dict[str, str] | None = None
) -> tuple[list[tuple[SuiteTask, list[Session]]], list[str]]:
    """(task, its sessions in trial order) for every task with a session; the ids of
    sessions that match no task of the suite."""
    members = {t.id: t for t in suite.tasks}
    by_task: dict[str, list[Session]] = {}
    unmatched = []
    for session in sessions:
        task_id = (mapping or {}).get(session.id, session.task_id)
        if task_id in members:
            by_task.setdefault(task_id, []).append(session)
        else:
            unmatched.append(session.id)
    ordered = [
        (members[task_id], [s for _, s in sorted(enumerate(group), key=_trial_order)])
        for task_id, group in by_task.items()
    ]
    return ordered, unmatched


def _trial_order(item: tuple[int, Session]) -> int:
    """A recorded trial number (proctor's export, tau-bench) orders sessions; else the file."""
    index, session = item
    trial = session.metadata.get("trial")
    return trial if isinstance(trial, int) else index


def rebuilt_ledger(events: Sequence[TraceEvent], domain: Domain) -> list[LedgerEntry]:
    """The applied effects: `state_change` events where the trace has them, else the
    successful (not replayed) results of the domain's write tools."""
    proposals = {e.data.get("call_id"): e.data for e in events if e.kind == "tool_proposal"}
    changes = [e for e in events if e.kind == "state_change"]
    applied = changes or [
        e
        for e in events
        if e.kind == "tool_result"
        and not e.data.get("replayed")
        and getattr(domain.tools.get(str(e.data.get("tool"))), "kind", None) == "write"
    ]
    ledger = []
    for e in applied:
        proposed = proposals.get(e.data.get("call_id"), {}).get("args")
        args: dict[str, Any] = proposed if isinstance(proposed, dict) else {}
        tool = domain.tools.get(str(e.data.get("tool")))
        entity = args.get(tool.entity_arg) if tool is not None and tool.entity_arg else None
        ledger.append(
            LedgerEntry(
                seq=e.seq,
                tool=str(e.data.get("tool")),
                args=args,
                entity=None if entity is None else str(entity),
                idempotency_key=args.get("idempotency_key"),
            )
        )
    return ledger


def trace_id_for(session: Session, run_id: str, task_id: str, trial: int) -> str:
    """The source's own trace id when it is an OpenTelemetry one, so the graded trial
    links back to the production trace; else one derived like a live trial's."""
    given = session.trace_id or ""
    if len(given) == 32 and all(c in "0123456789abcdef" for c in given):
        return given
    return trial_trace_id(run_id, task_id, trial)


def grade_session(
    session: Session, member: SuiteTask, run_id: str, trial: int
) -> tuple[TrialRecord, list[str]]:
    """One session graded as trial `trial` of its task; the path checks left out."""
    task, events = member.task, list(session.events)
    skipped: list[str] = []
    if session.final_state is None:
        task, skipped = without_state_checks(task)
        if state_recorded(Trace("", "", events)):
            t = events[-1].t if events else 0.0
            events.append(TraceEvent(len(events) + 1, t, "note", {STATE_NOTE: "not recorded"}))
    trace_id = trace_id_for(session, run_id, task.id, trial)
    trace = Trace(f"{task.id}#{trial}", trace_id, events)
    outcome = Outcome(session.final_state or {}, rebuilt_ledger(events, member.domain))
    usage = usage_of(events)
    latency = (
        session.latency_s
        if session.latency_s is not None
        else max((e.t for e in session.events), default=0.0)
    )
    result = TrialResult(
        run_id=run_id,
        task_id=task.id,
        trial=trial,
        seed=0,
        status="error",  # until judge() decides
        usage=usage,
        latency_s=round(latency, 6),
        trace_id=trace_id,
    )
    ctx = GradeContext(task, trace, outcome, usage, latency, member.domain)
    judge(result, ctx, [], session.status, session.error if session.status else None)
    return TrialRecord(result, trace, session.answer, outcome), skipped


def imported_agent(sessions: Sequence[Session]) -> ImportedAgent:
    names = Counter(s.agent for s in sessions if s.agent)
    models = Counter(s.model for s in sessions if s.model)
    model = models.most_common(1)[0][0] if models else None
    return ImportedAgent(
        names.most_common(1)[0][0] if names else "imported",
        model,
        settings={"model": model, "source": "imported traces"},
    )


def grade_sessions(
    sessions: Sequence[Session],
    suite: Suite,
    *,
    store: Store | None = None,
    mapping: dict[str, str] | None = None,
    source: str = "",
    fmt: str = "auto",
    run_id: str | None = None,
    max_error_rate: float = DEFAULT_MAX_ERROR_RATE,
) -> GradedRun:
    """Grade every matched session and, with a store, store them as one run.

    Trials per task is the smallest number of sessions a matched task has (pass^k is
    defined up to it); tasks without a session are not part of the run.
    """
    matched, unmatched = match_sessions(sessions, suite, mapping)
    if not matched:
        raise ValueError(
            f"no session matches a task of the suite ({len(sessions)} sessions, "
            f"{len(suite.tasks)} tasks): give a mapping file or task ids in the traces"
        )
    run_id = run_id or uuid.uuid4().hex[:12]
    used = Suite(suite.name, suite.roots, [member for member, _ in matched])
    trials = min(len(group) for _, group in matched)
    agent = imported_agent([s for _, group in matched for s in group])
    manifest = build_manifest(
        run_id,
        used,
        agent,
        agent_ref=f"import:{source}",
        trials=trials,
        seed=0,
        timeout_s=None,
        concurrency=1,
        filters={"import": source},
        faults=[],
    )
    records = []
    skipped: set[str] = set()
    for member, group in matched:
        for trial, session in enumerate(group):
            record, left_out = grade_session(session, member, run_id, trial)
            records.append(record)
            skipped.update(left_out)
    manifest["import"] = {
        "source": source,
        "format": fmt,
        "sessions": len(sessions),
        "graded": len(records),
        "unmatched": len(unmatched),
        "skipped_checks": sorted(skipped),
    }
    if store is not None:
        store.create_run(run_id, manifest)
        store.begin()
        for record in records:
            store.write_trial(record.result, record.trace, record.answer, record.outcome)
        store.commit()
    results = [r.result for r in records]
    summary = summary_with_scorecard(
        run_id, manifest, results, task_infos(used), max_error_rate=max_error_rate
    )
    summary["status"] = "completed" if summary["valid"] else "invalid"
    if store is not None:
        store.finish_run(run_id, summary["status"], summary)
    return GradedRun(run_id, manifest, summary, results, unmatched)
