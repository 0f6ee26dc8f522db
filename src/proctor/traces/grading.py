"""Grade imported sessions against a suite's tasks and store them as a run.

A session meets its task by the task id it carries or by a mapping file (`{session id:
task id}`). Trajectory, answer, safety and budget checks apply as to a live trial. The
ledger of effects is rebuilt from the trace: its `state_change` events where it has them
(proctor's own export), else every successful call of a tool the domain declares a write.
Path checks on the final state apply only when the session carries that state; otherwise
they are left out, and the run's manifest lists them under `import.skipped_checks`.

The run gets a manifest like a live run's (agent name from the traces, suite digest,
grader versions), so `show`, `compare`, `gate`, `export` and reports work on it.

Matched sessions are graded in batches on a pool (run/pool.py; docs/architecture.md,
Regrade at scale): here, in worker processes or on Ray, each batch carrying its
sessions. This process numbers the trials before and writes the records after, in file
order, so the run is the same whatever the number of workers.
"""

from __future__ import annotations

import functools
import itertools
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proctor.core.documents import read_yaml
from proctor.core.manifest import Manifest
from proctor.core.outcome import LedgerEntry, Outcome
from proctor.core.results import TrialResult
from proctor.core.summary import RunSummary
from proctor.core.trace import Trace, TraceEvent
from proctor.decide.scorecard import summary_with_scorecard
from proctor.decide.summarize import DEFAULT_MAX_ERROR_RATE, Tally
from proctor.env.domain import Domain
from proctor.env.suite import Suite, SuiteTask
from proctor.grade.context import GradeContext
from proctor.grade.state import STATE_NOTE, state_recorded, without_state_checks
from proctor.run.manifest_build import build_manifest
from proctor.run.pool import InlinePool, Pool
from proctor.run.runner import task_infos
from proctor.run.trial import TrialRecord, grade_trial, trial_trace_id, usage_of
from proctor.run.worker_source import SuiteSource
from proctor.traces.imported import Session

if TYPE_CHECKING:
    from proctor.store.sqlite import Store


@dataclass(frozen=True)
class ImportedAgent:
    """What the manifest records of the agent behind imported sessions."""

    name: str
    model: str | None = None
    version: str = ""
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GradedRun:
    """What grading imported sessions made: the run's id, manifest and summary, its
    results (without a store: every one in full; with one: as summaries read them), and
    the sessions no task matched."""

    run_id: str
    manifest: Manifest
    summary: RunSummary
    results: list[TrialResult]
    unmatched: list[str]


def load_mapping(path: str | Path) -> dict[str, str]:
    """A `{session id: task id}` YAML/JSON file; a bad one is a ValueError (one line)."""
    path = Path(path)
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: the mapping must be `session id: task id` pairs")
    return {str(k): str(v) for k, v in data.items()}


class TrialNumbers:
    """A session's trial number within its task: the one it recorded (proctor's export,
    tau-bench) when that is still free, else the lowest free number, in file order."""

    def __init__(self) -> None:
        self.taken: dict[str, set[int]] = {}

    def assign(self, task_id: str, session: Session) -> int:
        taken = self.taken.setdefault(task_id, set())
        recorded = session.metadata.get("trial")
        if isinstance(recorded, int) and not isinstance(recorded, bool) and recorded >= 0:
            number = recorded if recorded not in taken else _lowest_free(taken)
        else:
            number = _lowest_free(taken)
        taken.add(number)
        return number


def _lowest_free(taken: set[int]) -> int:
    return next(i for i in range(len(taken) + 1) if i not in taken)


def match_sessions(
    sessions: Iterable[Session], suite: Suite, mapping: dict[str, str] | None = None
) -> tuple[list[tuple[SuiteTask, list[Session]]], list[str]]:
    """(task, its sessions in trial order) for every task with a session; the ids of
    sessions that match no task of the suite."""
    members = {t.id: t for t in suite.tasks}
    by_task: dict[str, list[tuple[int, Session]]] = {}
    numbers = TrialNumbers()
    unmatched = []
    for session in sessions:
        task_id = (mapping or {}).get(session.id, session.task_id)
        if task_id in members:
            by_task.setdefault(task_id, []).append((numbers.assign(task_id, session), session))
        else:
            unmatched.append(session.id)
    ordered = [
        (members[task_id], [s for _, s in sorted(group, key=lambda item: item[0])])
        for task_id, group in by_task.items()
    ]
    return ordered, unmatched


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
        status="error",  # until decided
        usage=usage,
        latency_s=round(latency, 6),
        trace_id=trace_id,
    )
    ctx = GradeContext(task, trace, outcome, usage, latency, member.domain)
    findings = grade_trial(ctx, [], session.status, session.error if session.status else None)
    record = TrialRecord(result, trace, session.answer, outcome, findings)
    record.decide()
    return record, skipped


def imported_agent(names: Counter[str], models: Counter[str]) -> ImportedAgent:
    model = models.most_common(1)[0][0] if models else None
    return ImportedAgent(
        names.most_common(1)[0][0] if names else "imported",
        model,
        settings={"model": model, "source": "imported traces"},
    )


#: Graded trials written between two commits.
COMMIT_EVERY = 256
#: Sessions per batch a worker grades.
BATCH = 200


@dataclass(frozen=True)
class SessionBatch:
    """Matched sessions, each with its task id and trial number, for one worker."""

    suite: SuiteSource | None
    run_id: str
    items: list[tuple[Session, str, int]]


def grade_batch(
    batch: SessionBatch, members: dict[str, SuiteTask] | None = None
) -> list[tuple[TrialRecord, list[str]]]:
    """Grade a batch (in a worker: the suite rebuilt from its files, once per process)."""
    if members is None:
        assert batch.suite is not None
        members = batch.suite.members()
    return [
        grade_session(session, members[task_id], batch.run_id, trial)
        for session, task_id, trial in batch.items
    ]


def grade_sessions(
    sessions: Iterable[Session],
    suite: Suite,
    *,
    store: Store | None = None,
    mapping: dict[str, str] | None = None,
    source: str = "",
    fmt: str = "auto",
    run_id: str | None = None,
    max_error_rate: float = DEFAULT_MAX_ERROR_RATE,
    pool: Pool | None = None,
) -> GradedRun:
    """Grade every matched session on `pool` (by default here) and, with a store, store
    them as one run.

    Sessions stream past: each is graded and written as it comes, and only what the
    summary reads is kept (a Tally), so a file of any size grades in bounded memory. A
    file refused part-way leaves its run `interrupted`. Trials per task is the smallest
    number of sessions a matched task has (pass^k is defined up to it); tasks without a
    session are not part of the run.
    """
    run = _ImportRun(run_id or uuid.uuid4().hex[:12], suite, store, source, fmt)
    pool = pool or InlinePool()
    shipped = None if pool.inline else pool.ship(SuiteSource.of(suite))
    grade = functools.partial(grade_batch, members=run.members) if pool.inline else grade_batch
    refused: list[Exception] = []
    try:
        batches = run.batches(sessions, mapping or {}, shipped, refused)
        for record, left_out in itertools.chain.from_iterable(pool.map(grade, batches)):
            run.write(record, left_out)
        if refused:  # a session the file could not give: what came before it is stored
            raise refused[0]
    except Exception:
        if store is not None and run.graded:
            run.finish(max_error_rate, "interrupted")
        raise
    if not run.graded:
        raise ValueError(
            f"no session matches a task of the suite ({run.total} sessions, "
            f"{len(suite.tasks)} tasks): give a mapping file or task ids in the traces"
        )
    manifest, summary = run.finish(max_error_rate)
    results = run.kept if store is None else run.tally.results
    return GradedRun(run.run_id, manifest, summary, results, run.unmatched)


@dataclass
class _ImportRun:
    """What grading a stream of sessions keeps: counts, a Tally, who and what ran."""

    run_id: str
    suite: Suite
    store: Store | None
    source: str
    fmt: str
    numbers: TrialNumbers = field(default_factory=TrialNumbers)
    tally: Tally = field(default_factory=Tally)
    kept: list[TrialResult] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)
    skipped: set[str] = field(default_factory=set)
    names: Counter[str] = field(default_factory=Counter)
    models: Counter[str] = field(default_factory=Counter)
    total: int = 0
    graded: int = 0

    def __post_init__(self) -> None:
        self.members = {t.id: t for t in self.suite.tasks}

    def batches(
        self,
        sessions: Iterable[Session],
        mapping: dict[str, str],
        suite: SuiteSource | None,
        refused: list[Exception],
    ) -> Iterator[SessionBatch]:
        """The matched sessions, numbered, in batches; a failure reading the sessions
        ends the batches (the last one holding what came before it) and is kept in
        `refused`."""
        items: list[tuple[Session, str, int]] = []
        try:
            for session in sessions:
                matched = self.match(session, mapping.get(session.id, session.task_id))
                if matched is not None:
                    items.append(matched)
                if len(items) == BATCH:
                    yield SessionBatch(suite, self.run_id, items)
                    items = []
        except Exception as exc:
            refused.append(exc)
        if items:
            yield SessionBatch(suite, self.run_id, items)

    def match(self, session: Session, task_id: str | None) -> tuple[Session, str, int] | None:
        """The session with its task and trial number; None (noted) when it has none."""
        self.total += 1
        member = self.members.get(task_id) if task_id is not None else None
        if member is None:
            self.unmatched.append(session.id)
            return None
        self.names.update([session.agent] if session.agent else [])
        self.models.update([session.model] if session.model else [])
        return session, member.id, self.numbers.assign(member.id, session)

    def write(self, record: TrialRecord, left_out: list[str]) -> None:
        """Store (or keep) a graded session's record."""
        self.skipped.update(left_out)
        if self.store is not None:
            if self.graded == 0:  # the run exists once a session matched; its manifest last
                self.store.create_run(self.run_id, {"run_id": self.run_id})
                self.store.begin()
            self.store.write_trial(record.result, record.trace, record.answer, record.outcome)
            if (self.graded + 1) % COMMIT_EVERY == 0:
                self.store.commit()
                self.store.begin()
        else:
            self.kept.append(record.result)
        self.tally.add(record.result)
        self.graded += 1

    def finish(
        self, max_error_rate: float, status: str | None = None
    ) -> tuple[Manifest, RunSummary]:
        """The manifest and summary of what was graded; with a store, the run is finished
        (`status` None: completed or invalid by its summary)."""
        counts = {task_id: len(taken) for task_id, taken in self.numbers.taken.items()}
        used = Suite(
            self.suite.name, self.suite.roots, [t for t in self.suite.tasks if t.id in counts]
        )
        manifest = build_manifest(
            self.run_id,
            used,
            imported_agent(self.names, self.models),
            agent_ref=f"import:{self.source}",
            trials=min(counts.values()),
            seed=0,
            timeout_s=None,
            concurrency=1,
            filters={"import": self.source},
            faults=[],
        )
        notes = {
            "source": self.source,
            "format": self.fmt,
            "sessions": self.total,
            "graded": self.graded,
            "unmatched": len(self.unmatched),
            "skipped_checks": sorted(self.skipped),
        }
        manifest = manifest.model_copy(update={"import_": notes})
        summary = summary_with_scorecard(
            self.run_id,
            manifest,
            self.tally.results,
            task_infos(used),
            max_error_rate=max_error_rate,
        )
        status = status or ("completed" if summary.valid else "invalid")
        summary = summary.model_copy(update={"status": status})
        if self.store is not None:
            self.store.commit()
            self.store.reopen_run(self.run_id, manifest)  # what was graded, known now
            self.store.finish_run(self.run_id, status, summary)
        return manifest, summary
