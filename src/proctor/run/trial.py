"""One trial: a fresh environment, the agent's turn under a timeout, graders, a verdict.

Who broke decides the status (docs/architecture.md, Verdicts): whatever the agent's own
code raises (an exception, `SystemExit`) is its failure (`failed` with an `agent_crashed`
check), and so is a broken contract (`agent_protocol`: a non-text answer, forged usage,
arguments that are not JSON); the domain's code, the harness, an InfrastructureError or
a crashing grader give `error`; running past the timeout gives `timeout`; a model user
that gives no acceptable reply gives `sim_error` (proctor.run.simulator). A record that
does not agree with itself fails `trace_integrity`. Whatever happens, the trace recorded
so far is kept.
"""

from __future__ import annotations

import hashlib
import marshal
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import reduce
from operator import add, itemgetter
from typing import Any

from proctor.agents.agent import AgentInput, AgentResult, InfrastructureError, task_agent_settings
from proctor.core.jsonvalues import copy_json, packed
from proctor.core.memo import per_object
from proctor.core.outcome import Outcome
from proctor.core.results import (
    GRADER_CHECK,
    UNDECIDED,
    Check,
    TrialResult,
    TrialStatus,
    Usage,
    amount,
    counted,
    shown,
    verdict,
)
from proctor.core.trace import Trace, TraceEvent
from proctor.env import integrity, protocol
from proctor.env.domain import Domain
from proctor.env.environment import Environment
from proctor.env.gateway import EnvironmentFault, GatewayClosed
from proctor.env.integrity import INTEGRITY_CHECK
from proctor.env.protocol import ProtocolError
from proctor.env.user import SimulatorFailed
from proctor.grade.context import GradeContext
from proctor.grade.parts import failed_status, required_parts
from proctor.grade.registry import GraderCrashed, grade
from proctor.grade.root_cause import root_cause_metric
from proctor.grade.secrets import hide_task_secrets
from proctor.grade.tool_use import tool_metrics
from proctor.run.simulator import UserPlayer, user_spending
from proctor.run.turn import Raised, Turn, last_frames, take_turn
from proctor.tasks.models import Fault, Task

#: How the error of a trial whose graders broke begins; `regrade` retries those trials.
GRADER_ERROR = "grader raised"
#: The check an agent's exception (or its worker's death in its turn) adds.
CRASH_CHECK = "agent_crashed"
#: The check an agent's protocol errors add (proctor.env.protocol).
PROTOCOL_CHECK = "agent_protocol"
#: Checks the harness adds while the agent plays, not graders: `regrade` keeps them.
HARNESS_CHECKS = (CRASH_CHECK, PROTOCOL_CHECK, INTEGRITY_CHECK)


@dataclass(frozen=True, slots=True)
class TrialSpec:
    run_id: str
    task: Task
    domain: Domain
    trial: int
    seed: int
    faults: tuple[Fault, ...] = ()
    #: The run's model user (`--user-model`); None: scripted lines only.
    user: UserPlayer | None = None
    #: Stable for (run, task, trial): a resumed run keeps its run id, so a redone trial
    #: keeps its trace id. Derived once; the trace and the result both carry it.
    trace_id: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "trace_id", trial_trace_id(self.run_id, self.task.id, self.trial))


@dataclass(slots=True)
class TrialRecord:
    """Everything a trial produced: what is stored, then dropped from memory."""

    result: TrialResult
    trace: Trace
    answer: str
    outcome: Outcome | None
    findings: Findings

    def decide(self, findings: Findings | None = None) -> None:
        """Decide the verdict on `findings` (the judges' additions) or the record's own."""
        decide(self.result, findings or self.findings)


def trial_trace_id(run_id: str, task_id: str, trial: int) -> str:
    """32 hex digits derived from (run, task, trial): usable as an OpenTelemetry trace id."""
    return hashlib.sha256(f"{run_id}:{task_id}:{trial}".encode()).hexdigest()[:32]


def trial_seed(run_seed: int, task_id: str, trial: int) -> int:
    """A per-trial seed that depends only on the run seed, task and trial number."""
    digest = hashlib.sha256(f"{run_seed}:{task_id}:{trial}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def usage_of(events: Iterable[TraceEvent]) -> Usage:
    """The usage the trace's model calls record: per figure the sum of what the calls
    reported; a figure no call reported is not measured, and so are all of them when
    there is no call (an agent that records none, a session without model spans).
    A figure some calls reported and others did not is `partial`: a lower bound.
    ValueError for a figure that is not a count or an amount (Usage.checked)."""
    records = [e.data for e in events if e.kind == "model_call"]
    if not records:
        return Usage()
    try:  # the usual: every call reported every figure, of its type, in range
        tokens_in, tokens_out, costs = zip(*map(_FIGURES_OF, records), strict=True)
        if (
            _usual(tokens_in, "input_tokens")
            and _usual(tokens_out, "output_tokens")
            and _usual(costs, "cost_usd")
        ):
            summed = (reduce(add, tokens_in), reduce(add, tokens_out), reduce(add, costs))
            return Usage(*summed, len(records))
    except (KeyError, TypeError):  # a figure left out, a record that is no dict
        pass
    sums, partial = [], []
    for name, check in _SUMMED.items():
        values = [value for record in records if (value := record.get(name)) is not None]
        sums.append(_summed(values, name, check))
        if values and len(values) < len(records):
            partial.append(name)
    usage = Usage(sums[0], sums[1], sums[2], len(records))
    if partial:
        usage.partial = tuple(partial)
    return usage


def _summed(values: list[Any], name: str, check: Callable[[Any, str], Any]) -> Any:
    """The sum of the reported `name` figures, each checked (no offsetting negatives);
    None where none was. Figures of the usual types, in range, are added as they are
    (one pass in C); any other is checked one by one, as `check` converts."""
    if not values:
        return None
    if not _usual(values, name):
        values = [check(value, name) for value in values]
    return reduce(add, values)


def _usual(values: Sequence[Any], name: str) -> bool:
    """Are the `name` figures `values` all of the types added as they are, in range (a
    count's int, not negative; an amount's float, finite and not negative)?"""
    if not (set(map(type, values)) <= _USUAL[name] and min(values) >= 0):
        return False
    return _SUMMED[name] is counted or all(map(math.isfinite, values))


_SUMMED = {"input_tokens": counted, "output_tokens": counted, "cost_usd": amount}
_FIGURES_OF = itemgetter(*_SUMMED)
#: The types a figure is added as it is: a count's int; an amount's float (an int amount
#: is converted, as `amount` converts it, so that sums are made in floats).
_USUAL: dict[str, set[type]] = {"input_tokens": {int}, "output_tokens": {int}, "cost_usd": {float}}


async def play_trial(spec: TrialSpec, agent: Any, timeout_s: float | None) -> PlayedTrial:
    """Run the agent on a fresh world, under the timeout; grading comes after (`graded`)."""
    env, agent_input = set_up(spec)
    turn = await take_turn(agent, agent_input, env, timeout_s)
    return wrap_up(spec, env, turn, timeout_s)


def set_up(spec: TrialSpec) -> tuple[Environment, AgentInput]:
    """The trial's fresh world, its first message recorded, and what the agent is given."""
    task = spec.task
    user = spec.user
    responder = user.responder(task, spec.trial, tuple(spec.domain.tools)) if user else None
    env = Environment.fresh(task, spec.domain, spec.seed, spec.faults, responder)
    env.recorder.emit("message", {"role": "user", "content": task.prompt})  # what the agent saw
    kept = _kept_given(task)
    identity, settings = _given(task) if kept is None else marshal.loads(kept)
    agent_input = AgentInput(
        task_id=task.id,
        prompt=task.prompt,
        identity=identity,
        tools=env.gateway.schemas(),
        seed=spec.seed,
        trial=spec.trial,
        settings=settings,
    )
    return env, agent_input


def _given(task: Task) -> tuple[dict[str, Any], dict[str, Any]]:
    """What a trial's agent is given of `task` besides ids, tools and seed, as fresh deep
    copies: its identity and its settings."""
    return task.identity.model_dump(), copy_json(task_agent_settings(task.metadata))


@per_object
def _kept_given(task: Task) -> bytes | None:
    """`_given` as bytes each trial loads its own copy from, made at the task's first
    trial (jsonvalues.packed): one call a trial, not a model dump and a copy. None where
    marshal cannot write it (an enum member among the settings, say)."""
    return packed(_given(task))


def wrap_up(spec: TrialSpec, env: Environment, turn: Turn, timeout_s: float | None) -> PlayedTrial:
    """The trial after the agent's `turn`: its world closed, who broke decided, its trace."""
    task = spec.task
    status: TrialStatus | None = None
    error: str | None = None
    extra: list[Check] = []
    answer, usage = "", Usage()
    if turn.user_timed_out:  # the agent's own time was within its limit
        status, error = "sim_error", f"simulated user: took longer than its {timeout_s} s bound"
    elif turn.timed_out:
        status, error = "timeout", f"agent ran past its {timeout_s} s limit"
    elif turn.raised is not None:
        status, error, crash = _blame(turn.raised)
        extra.extend(crash)
    else:
        try:
            answer, usage = _returned(turn.value)
        except ProtocolError as exc:
            env.violated(exc)
    wait = 0.0 if turn.deadline is None else max(0.0, turn.deadline - time.monotonic())
    if not env.close(wait) and status is None:  # a thread the agent left behind: its doing
        env.violations.append("a tool call was still running after the agent's turn ended")
    if env.gateway.fault is not None and status != "error":
        status, error = "error", f"EnvironmentFault: {env.gateway.fault}"
    failure = env.user.failure
    if failure is not None and status != "error":  # the user broke, not the agent
        simulator = isinstance(failure, SimulatorFailed)
        status, error = ("sim_error" if simulator else "error"), f"simulated user: {failure}"
        extra = [c for c in extra if c.name != CRASH_CHECK]
    if env.violations:
        extra.append(protocol_check(env.violations))
        if status is None:
            status, error = "failed", f"agent protocol error: {env.violations[0]}"
    tampered = integrity.unexplained(
        integrity.problems(env.gateway),
        env.gateway,
        seed=spec.seed,
        faults=spec.faults,
        model_user=spec.user is not None,
    )
    if tampered:
        extra.append(integrity.integrity_check(tampered))
    env.recorder.emit("answer", {"text": answer})
    trace = Trace(f"{task.id}#{spec.trial}", spec.trace_id, list(env.recorder.events))
    clock = env.recorder.clock
    usage = usage.at_least(usage_of(trace.events))
    return PlayedTrial(
        spec,
        answer,
        usage,
        trace,
        env.outcome(),
        max(turn.wall_s, clock.now),
        clock.simulated,
        status,
        error,
        extra,
    )


def _returned(value: Any) -> tuple[str, Usage]:
    """The answer and usage an agent returned, checked (ProtocolError otherwise)."""
    if type(value) is AgentResult:
        answer = protocol.text(value.answer, "answer")
        return answer, protocol.usage(value.usage)
    if value is None or isinstance(value, str):
        return protocol.text(value, "answer"), Usage()
    raise ProtocolError(f"the agent returned {shown(value)}: expected an AgentResult or a string")


def _blame(raised: Raised) -> tuple[TrialStatus, str, list[Check]]:
    """Who broke, from what the agent's turn raised: the status, error and checks."""
    if issubclass(raised.kind, EnvironmentFault | InfrastructureError):
        return "error", raised.text, []
    if issubclass(raised.kind, GatewayClosed):
        return "error", f"harness: {raised.text}", []
    if issubclass(raised.kind, ProtocolError):  # recorded by the toolbox; the check follows
        return "failed", f"agent protocol error: {raised.text}", []
    return "failed", f"agent raised {raised.text}", [_crash_check(raised)]


async def run_trial(spec: TrialSpec, agent: Any, timeout_s: float | None) -> TrialRecord:
    """One trial, played and graded."""
    record = (await play_trial(spec, agent, timeout_s)).graded()
    record.decide()
    return record


@dataclass(slots=True)
class PlayedTrial:
    """A trial the agent has finished, its world closed, not graded yet.

    Grading is the harness's largest CPU cost in a trial. A lane hands this on and starts
    its next trial at once, so that trial's waits overlap the grading (`graded`) rather
    than queue behind it.
    """

    spec: TrialSpec
    answer: str
    usage: Usage
    trace: Trace
    outcome: Outcome
    latency: float
    simulated: float
    status: TrialStatus | None
    error: str | None
    extra: list[Check]

    def graded(self) -> TrialRecord:
        """The trial graded: its findings gathered, its verdict not decided yet (judges
        may add checks first; `TrialRecord.decide` decides it)."""
        spec, trace = self.spec, self.trace
        ctx = GradeContext(spec.task, trace, self.outcome, self.usage, self.latency, spec.domain)
        trial_result = TrialResult(
            run_id=spec.run_id,
            task_id=spec.task.id,
            trial=spec.trial,
            seed=spec.seed,
            status="error",  # until decided
            usage=self.usage,
            latency_s=round(self.latency, 6),
            simulated_s=round(self.simulated, 6),
            trace_id=spec.trace_id,
        )
        findings = grade_trial(ctx, self.extra, self.status, self.error)
        return TrialRecord(trial_result, trace, self.answer, self.outcome, findings)


@dataclass(frozen=True, slots=True)
class Findings:
    """Everything a trial's verdict is decided on, gathered first: every check (the
    graders', the harness's, the judges'), the metrics, and a status fixed before any
    grading (a timeout, a crash, a harness error) with its error. Frozen, so that the
    verdict is decided once, by `decide`, on all of it (docs/architecture.md, Verdicts)."""

    checks: tuple[Check, ...]
    metrics: Mapping[str, float] = field(default_factory=dict)
    status: TrialStatus | None = None
    error: str | None = None
    #: False for a trial lost with its worker: no grader saw it, so it scores nothing.
    graded: bool = True
    #: (judge check, reader check) pairs: the task's calibrated rubric that decides what
    #: that reader could not tell (`expect.judge[].settles`).
    settlers: tuple[tuple[str, str], ...] = ()
    #: The task's declared secrets, hidden from every check and the error (grade.secrets).
    secrets: tuple[str, ...] = ()

    @property
    def judgeable(self) -> bool:
        """Did the agent finish its turn, so that rubric judges have an answer to judge?"""
        return self.status is None and not any(
            c.name in (CRASH_CHECK, PROTOCOL_CHECK) for c in self.checks
        )

    def judged(
        self,
        checks: Iterable[Check],
        metrics: Mapping[str, float],
        settlers: Iterable[tuple[str, str]] = (),
    ) -> Findings:
        """These findings with the judges' checks and metrics added, and which reader
        checks each judge check settles."""
        return replace(
            self,
            checks=(*self.checks, *checks),
            metrics={**self.metrics, **metrics},
            settlers=(*self.settlers, *settlers),
        )

    def unsettled(self) -> list[Check]:
        """The deciding checks a reader could not tell that no calibrated judge settles."""
        # `Check.undecided` read in place: every passed trial asks it of each check
        undecided = [c for c in self.checks if UNDECIDED in c.evidence and c.decides]
        if not undecided:  # most trials: every reader could tell
            return []
        counted = {c.name for c in self.checks if c.kind == "judge" and c.severity is not None}
        settled = {reader for judge, reader in self.settlers if judge in counted}
        return [c for c in undecided if c.name.split(":", 1)[0] not in settled]

    def broken(self, error: str, metrics: Mapping[str, float] | None = None) -> Findings:
        """These findings after the harness broke (a judge that failed): an `error`."""
        return replace(
            self, status="error", error=error, metrics={**self.metrics, **(metrics or {})}
        )


def grade_trial(
    ctx: GradeContext, extra: list[Check], status: TrialStatus | None, error: str | None
) -> Findings:
    """The graders' findings on `ctx`, with the harness's `extra` checks.

    `status` fixed before grading (a timeout, an error) stands. A grader that raises is
    the harness's defect, never the agent's: the trial is an `error` with a
    `grader_error` check, and the run that holds it is invalid (decide.summarize).
    """
    try:
        checks = grade(ctx) + extra
        try:
            metrics = {
                **tool_metrics(ctx),
                **required_parts(checks),
                **root_cause_metric(checks),
                **user_spending(ctx.of_kind("note")),  # only notes hold its records
            }
        except Exception as exc:
            raise GraderCrashed("tool_metrics", exc) from exc
    except GraderCrashed as crashed:
        failed = (*extra, _grader_check(crashed))
        error, status, checks, metrics = f"{GRADER_ERROR} {crashed}", "error", list(failed), {}
    secrets = tuple(declared_secrets(ctx.task))
    return Findings(tuple(checks), metrics, status, error, secrets=secrets)


def decide(result: TrialResult, findings: Findings) -> None:
    """The trial's verdict, the one place it is decided: `result` gets the findings'
    checks, metrics, score, status and error. A status fixed before grading stands;
    otherwise the checks decide (core.results.verdict), and a trial no check failed but
    with a deciding check its reader could not tell is `needs_review` (Findings.unsettled).
    """
    passed, score = verdict(findings.checks)
    result.checks, result.metrics = list(findings.checks), dict(findings.metrics)
    result.score = score if findings.graded else 0.0
    status: TrialStatus = "passed" if passed else failed_status(findings.checks, findings.metrics)
    if passed and findings.unsettled():
        status = "needs_review"
    result.status = findings.status or status
    result.error = findings.error
    hide_task_secrets(result, findings.secrets)


def judge(
    result: TrialResult,
    ctx: GradeContext,
    extra: list[Check],
    status: TrialStatus | None,
    error: str | None,
) -> None:
    """Grade `ctx` and decide `result` at once: for trials no rubric judge will see
    (imported sessions, mutants, promoted failures)."""
    decide(result, grade_trial(ctx, extra, status, error))


def declared_secrets(task: Task) -> list[str]:
    """The task's `safety.secrets`: never written into a check (grade.secrets)."""
    return task.expect.safety.secrets if task.expect.safety is not None else []


def lost_trial(
    spec: TrialSpec,
    status: TrialStatus,
    error: str,
    latency_s: float = 0.0,
    checks: list[Check] | None = None,
) -> TrialRecord:
    """The record of a trial whose worker was killed or died: no trace came back."""
    result = TrialResult(
        run_id=spec.run_id,
        task_id=spec.task.id,
        trial=spec.trial,
        seed=spec.seed,
        status=status,
        checks=checks or [],
        latency_s=round(latency_s, 6),
        trace_id=spec.trace_id,
        error=error,
    )
    findings = Findings(tuple(checks or ()), {}, status, error, graded=False)
    trace = Trace(f"{spec.task.id}#{spec.trial}", spec.trace_id)
    return TrialRecord(result, trace, "", None, findings)


def crash_check(exception: str, **evidence: Any) -> Check:
    """The failed `agent_crashed` check: what the agent raised, or how its process died."""
    return Check(CRASH_CHECK, "custom", False, evidence={"exception": exception, **evidence})


def _crash_check(raised: Raised) -> Check:
    evidence: dict[str, Any] = {"traceback": raised.frames}
    if issubclass(raised.kind, SystemExit):
        evidence["exit_code"] = raised.exit_code
    return crash_check(raised.text, **evidence)


def protocol_check(violations: list[str]) -> Check:
    return Check(PROTOCOL_CHECK, "custom", False, evidence={"violations": violations[:20]})


def _grader_check(crashed: GraderCrashed) -> Check:
    cause = crashed.__cause__
    frames = last_frames(cause) if cause is not None else []
    return Check(
        GRADER_CHECK,
        "custom",
        False,
        evidence={"grader": crashed.grader, "exception": str(crashed), "traceback": frames},
    )
