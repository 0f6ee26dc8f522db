"""Mutation testing of a suite: do its checks catch the defects an agent makes?

The reference agent runs once per task; from each task's first passing trial, the kinds
of proctor.health.mutants inject one defect at a time into its actions, and each mutant is
re-enacted in a fresh world of the task (proctor.env.reenact) and graded, without any
agent. A mutant the task fails is **killed**; one it passes **survives** and is a hole,
listed with the expectation that would kill it (checked: added to the task, it fails the
mutant and still passes the reference trial). A mutant whose change the world stopped
(a policy denial, a rejected argument) or that changed nothing observable (calls that
reached a tool, the ledger, the final state, the answer, the usage) is **equivalent**:
there is no defect to catch, and it is left out of the score.

mutation score = killed / (killed + survived), per task, per kind and for the suite.
`mutate_suite` returns data only; printing is proctor.report.health_tables.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from proctor.core.jsonvalues import canonical
from proctor.core.outcome import Outcome
from proctor.core.results import TrialResult
from proctor.core.trace import Trace
from proctor.env.reenact import ReenactError, reenact
from proctor.env.suite import Suite
from proctor.grade.context import GradeContext, calls_from_trace
from proctor.health.mutants import KINDS, Mutant, Reference, mutants_of
from proctor.run.runner import Runner
from proctor.run.trial import judge, usage_of
from proctor.store.sqlite import Store
from proctor.tasks.models import Task

Status = Literal["killed", "survived", "equivalent"]
#: A suite meeting this score catches the defects it is meant to catch.
TARGET = 0.95


@dataclass
class Graded:
    """A trial (reference or mutant) as graded: verdict and the checks that blocked."""

    passed: bool
    failed: list[str]
    signature: str


@dataclass
class MutantResult:
    task_id: str
    kind: str
    change: str
    status: Status
    killed_by: list[str] = field(default_factory=list)
    #: The expectation that would kill a survivor (an `expect` fragment), and whether it
    #: was checked: added to the task, it fails the mutant and passes the reference trial.
    hole: dict[str, Any] = field(default_factory=dict)
    hole_verified: bool = False
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "task_id": self.task_id,
            "kind": self.kind,
            "change": self.change,
            "status": self.status,
            "killed_by": self.killed_by,
        }
        if self.status == "survived":
            out["hole"] = {"expect": self.hole, "verified": self.hole_verified}
        if self.error:
            out["error"] = self.error
        return out


def _score(results: Sequence[MutantResult]) -> dict[str, Any]:
    counts = Counter(r.status for r in results)
    applicable = counts["killed"] + counts["survived"]
    return {
        "killed": counts["killed"],
        "survived": counts["survived"],
        "equivalent": counts["equivalent"],
        "applicable": applicable,
        "score": counts["killed"] / applicable if applicable else None,
    }


@dataclass
class MutationReport:
    suite: str
    agent: str
    results: list[MutantResult]
    #: Tasks the reference agent never passed: no mutant can start from them.
    reference_failed: list[str]
    tasks: list[str]

    @property
    def score(self) -> float | None:
        value: float | None = _score(self.results)["score"]
        return value

    def by_task(self) -> dict[str, dict[str, Any]]:
        return {t: _score([r for r in self.results if r.task_id == t]) for t in self.tasks}

    def by_kind(self) -> dict[str, dict[str, Any]]:
        return {k: _score([r for r in self.results if r.kind == k]) for k in KINDS}

    @property
    def holes(self) -> list[MutantResult]:
        return [r for r in self.results if r.status == "survived"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "agent": self.agent,
            "target": TARGET,
            **_score(self.results),
            "meets_target": self.score is not None and self.score >= TARGET,
            "reference_failed": self.reference_failed,
            "by_task": self.by_task(),
            "by_kind": self.by_kind(),
            "holes": [r.to_dict() for r in self.holes],
            "mutants": [r.to_dict() for r in self.results],
        }


def _signature(trace: Trace, outcome: Outcome) -> str:
    """What a mutant must change to be a defect at all: the calls that reached a tool, the
    ledger, the final state, the answer, the usage."""
    usage = usage_of(trace.events)
    return canonical(
        {
            "calls": [
                [c.tool, c.args] for c in calls_from_trace(trace) if c.attempted and not c.replayed
            ],
            "ledger": [[e.tool, e.args] for e in outcome.ledger],
            "state": outcome.final_state,
            "answer": trace.answer,
            "usage": usage.to_dict(),
        }
    )


def grade_trial(
    task: Task, ref: Reference, trace: Trace, outcome: Outcome, latency: float
) -> Graded:
    """Grade a trace of `ref`'s task as a trial is graded (run.trial.judge)."""
    usage = usage_of(trace.events)
    result = TrialResult("mutate", task.id, ref.trial, ref.seed, "error")
    judge(result, GradeContext(task, trace, outcome, usage, latency, ref.domain), [], None, None)
    failed = [c.name for c in result.checks if c.blocks]
    if result.error:
        failed.append(result.error)
    return Graded(result.status == "passed", failed, _signature(trace, outcome))


def with_hole(task: Task, hole: dict[str, Any]) -> Task:
    """`task` with the hole's expectations added (lists extended, mappings merged)."""
    data = task.model_dump(mode="json", exclude_unset=True)  # as written: `exists` stays alone
    expect = data.setdefault("expect", {})
    for key, value in hole.items():
        current = expect.get(key)
        if isinstance(value, list):
            expect[key] = [*(current or []), *value]
        elif isinstance(value, dict) and isinstance(current, dict):
            for sub, item in value.items():
                if isinstance(item, list) and isinstance(current.get(sub), list):
                    current[sub] = [*current[sub], *item]
                else:
                    current[sub] = item
        else:
            expect[key] = value
    return Task.model_validate(data)


def try_mutant(ref: Reference, mutant: Mutant, original: Graded) -> MutantResult:
    """Re-enact and grade one mutant; a survivor's hole is checked both ways."""
    task = ref.task
    result = MutantResult(task.id, mutant.kind, mutant.change, "equivalent")
    try:
        played = reenact(task, ref.domain, mutant.actions, seed=ref.seed, trace_id="mutant")
    except ReenactError as exc:
        result.error = f"the domain raised: {exc}"
        return result
    graded = grade_trial(task, ref, played.trace, played.outcome, played.latency_s)
    if graded.signature == original.signature:
        return result
    if not graded.passed:
        result.status, result.killed_by = "killed", graded.failed
        return result
    result.status = "survived"
    for hole in mutant.holes:
        try:
            fixed = with_hole(task, hole)
        except ValueError:  # not a valid task: never suggested
            continue
        kills = not grade_trial(fixed, ref, played.trace, played.outcome, played.latency_s).passed
        keeps = grade_trial(fixed, ref, ref.trace, ref.outcome, _latency(ref)).passed
        if not result.hole:
            result.hole = hole
        if kills and keeps:
            result.hole, result.hole_verified = hole, True
            break
    return result


def _latency(ref: Reference) -> float:
    return max((e.t for e in ref.trace.events), default=0.0)


def references_in(store: Store, run_id: str, suite: Suite) -> tuple[list[Reference], list[str]]:
    """The first passing trial of each task in a stored run of the reference agent, and
    the tasks it never passed."""
    members = {t.id: t for t in suite.tasks}
    refs: dict[str, Reference] = {}
    for stored in store.graded_trials(run_id, ()):
        r = stored.result
        if r.task_id in refs or stored.outcome is None or r.status != "passed":
            continue
        member = members[r.task_id]
        refs[r.task_id] = Reference(
            member.task, member.domain, r.trial, r.seed, stored.trace, stored.outcome
        )
    failed = [t.id for t in suite.tasks if t.id not in refs]
    return [refs[t.id] for t in suite.tasks if t.id in refs], failed


def references(
    suite: Suite, agent: Any, *, seed: int = 0, trials: int = 1
) -> tuple[list[Reference], list[str], str]:
    """The reference agent's first passing trial of each task; the tasks it never passed;
    the agent's name as the manifest records it."""
    store = Store(":memory:")
    try:
        report = Runner(suite, agent, trials=trials, seed=seed, store=store, concurrency=4).run()
        refs, failed = references_in(store, report.run_id, suite)
    finally:
        store.close()
    return refs, failed, report.manifest.agent.name


def mutate_references(
    suite: Suite,
    refs: Sequence[Reference],
    failed: list[str],
    agent_name: str,
    *,
    kinds: Sequence[str] = KINDS,
    progress: Callable[[MutantResult], None] | None = None,
) -> MutationReport:
    """Derive, re-enact and grade every mutant of the reference trials `refs`."""
    results = []
    for ref in refs:
        original = grade_trial(ref.task, ref, ref.trace, ref.outcome, _latency(ref))
        for mutant in mutants_of(ref, tuple(kinds)):
            outcome = try_mutant(ref, mutant, original)
            results.append(outcome)
            if progress is not None:
                progress(outcome)
    return MutationReport(suite.name, agent_name, results, failed, [t.id for t in suite.tasks])


def mutate_suite(
    suite: Suite,
    agent: Any,
    *,
    seed: int = 0,
    trials: int = 1,
    kinds: Sequence[str] = KINDS,
    progress: Callable[[MutantResult], None] | None = None,
) -> MutationReport:
    """Run the reference agent, then derive, re-enact and grade every mutant."""
    refs, failed, name = references(suite, agent, seed=seed, trials=trials)
    return mutate_references(suite, refs, failed, name, kinds=kinds, progress=progress)
