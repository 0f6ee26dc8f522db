"""One trial: a fresh environment, the agent under a timeout, graders, a verdict.

Who broke decides the status (docs/architecture.md, Verdicts): an exception from the
agent's own code is its failure (`failed` with an `agent_crashed` check); the domain's
code, the harness, or an InfrastructureError give `error`; running past the timeout
gives `timeout`. Whatever happens, the trace recorded so far is kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from proctor.agents.base import (
    AgentInput,
    AgentResult,
    InfrastructureError,
    agent_callable,
    as_result,
    is_async_agent,
    task_agent_settings,
)
from proctor.core.jsonvalues import copy_json
from proctor.core.outcome import Outcome
from proctor.core.results import Check, TrialResult, TrialStatus, Usage, verdict
from proctor.core.trace import Trace, TraceEvent
from proctor.env.domain import Domain
from proctor.env.environment import Environment
from proctor.env.gateway import EnvironmentFault, GatewayClosed
from proctor.env.toolbox import SyncToolbox, Toolbox
from proctor.grade.context import GradeContext
from proctor.grade.metrics import tool_metrics
from proctor.grade.parts import required_parts
from proctor.grade.registry import grade
from proctor.grade.root_cause import root_cause_metric
from proctor.run.threads import AGENT_THREADS
from proctor.tasks.models import Fault, Task

#: How the error of a trial whose graders broke begins; `regrade` retries those trials.
GRADER_ERROR = "grader raised"
#: The check an agent's exception adds; not a grader's, so `regrade` keeps it.
CRASH_CHECK = "agent_crashed"


@dataclass(frozen=True, slots=True)
class TrialSpec:
    run_id: str
    task: Task
    domain: Domain
    trial: int
    seed: int
    faults: tuple[Fault, ...] = ()

    @property
    def trace_id(self) -> str:
        """Stable for (run, task, trial): a resumed run keeps its run id, so a redone trial
        keeps its trace id."""
        return trial_trace_id(self.run_id, self.task.id, self.trial)


@dataclass(slots=True)
class TrialRecord:
    """Everything a trial produced: what is stored, then dropped from memory."""

    result: TrialResult
    trace: Trace
    answer: str
    outcome: Outcome | None


def trial_trace_id(run_id: str, task_id: str, trial: int) -> str:
    """32 hex digits derived from (run, task, trial): usable as an OpenTelemetry trace id."""
    return hashlib.sha256(f"{run_id}:{task_id}:{trial}".encode()).hexdigest()[:32]


def trial_seed(run_seed: int, task_id: str, trial: int) -> int:
    """A per-trial seed that depends only on the run seed, task and trial number."""
    digest = hashlib.sha256(f"{run_seed}:{task_id}:{trial}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def usage_of(events: Iterable[TraceEvent]) -> Usage:
    """The usage the trace's model calls record (an agent that reported none, a session)."""
    calls = [e.data for e in events if e.kind == "model_call"]
    return Usage(
        sum(int(d.get("input_tokens", 0)) for d in calls),
        sum(int(d.get("output_tokens", 0)) for d in calls),
        sum(float(d.get("cost_usd", 0.0)) for d in calls),  # 0 + c1 + c2 ...: as before
        len(calls),
    )


async def _call_sync(fn: Any, agent_input: AgentInput, toolbox: SyncToolbox) -> Any:
    """Run a sync agent on a daemon thread, so one that hangs cannot block the exit."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(setter: Any, value: Any) -> None:
        if not future.done():
            setter(value)

    def work() -> None:
        try:
            value = fn(agent_input, toolbox)
        except BaseException as exc:  # handed to the event loop, judged there
            outcome = (future.set_exception, exc)
        else:
            outcome = (future.set_result, value)
        # If the loop is gone, the trial was already recorded as a timeout.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, *outcome)

    AGENT_THREADS.submit(work)
    return await future


async def _within(coro: Any, timeout_s: float | None) -> Any:
    """Await `coro` for at most `timeout_s`, even if it ignores cancellation.

    `asyncio.wait_for` waits for the cancelled coroutine to finish, so an agent that
    catches CancelledError would escape its limit; here the trial ends at the limit and
    the task is left cancelled (its gateway is closed, so it can change nothing).
    """
    task = asyncio.ensure_future(coro)
    done, _ = await asyncio.wait({task}, timeout=timeout_s)
    if not done:
        task.cancel()
        task.add_done_callback(_consume)
        raise TimeoutError
    return task.result()


def _consume(task: asyncio.Future[Any]) -> None:
    """Retrieve a late task's outcome so asyncio does not log it as never retrieved."""
    if not task.cancelled():
        task.exception()


async def play_trial(spec: TrialSpec, agent: Any, timeout_s: float | None) -> PlayedTrial:
    """Run the agent on a fresh world, under the timeout; grading comes after (`judged`)."""
    task = spec.task
    env = Environment.fresh(task, spec.domain, spec.seed, spec.faults)
    env.recorder.emit("message", {"role": "user", "content": task.prompt})  # what the agent saw
    agent_input = AgentInput(
        task_id=task.id,
        prompt=task.prompt,
        identity=task.identity.model_dump(),
        tools=env.gateway.schemas(),
        seed=spec.seed,
        trial=spec.trial,
        settings=task_agent_settings(task.metadata),
    )
    fn = agent_callable(agent)
    status: TrialStatus | None = None
    error: str | None = None
    extra: list[Check] = []
    result = AgentResult(answer="")
    started = time.perf_counter()
    try:
        if is_async_agent(agent):
            coro = fn(agent_input, Toolbox(env))
        else:
            coro = _call_sync(fn, agent_input, SyncToolbox(env))
        result = as_result(await _within(coro, timeout_s))
    except TimeoutError:
        status, error = "timeout", f"agent ran past its {timeout_s} s limit"
    except (EnvironmentFault, InfrastructureError) as exc:
        status, error = "error", f"{type(exc).__name__}: {exc}"
    except GatewayClosed as exc:
        status, error = "error", f"harness: {exc}"
    except Exception as exc:
        extra.append(_crash_check(exc))
        status, error = "failed", f"agent raised {type(exc).__name__}: {exc}"
    finally:
        env.close()
    wall = time.perf_counter() - started
    if env.gateway.fault is not None and status != "error":
        status, error = "error", f"EnvironmentFault: {env.gateway.fault}"
    env.recorder.emit("answer", {"text": result.answer})
    trace = Trace(f"{task.id}#{spec.trial}", spec.trace_id, list(env.recorder.events))
    latency = max(wall, env.recorder.clock.now)
    return PlayedTrial(spec, result, trace, env.outcome(), latency, status, error, extra)


async def run_trial(spec: TrialSpec, agent: Any, timeout_s: float | None) -> TrialRecord:
    """One trial, played and graded."""
    return (await play_trial(spec, agent, timeout_s)).judged()


@dataclass(slots=True)
class PlayedTrial:
    """A trial the agent has finished, its world closed, not graded yet.

    Grading is the harness's largest CPU cost in a trial. A lane hands this on and starts
    its next trial at once, so that trial's waits overlap the grading (`judged`) rather
    than queue behind it.
    """

    spec: TrialSpec
    result: AgentResult
    trace: Trace
    outcome: Outcome
    latency: float
    status: TrialStatus | None
    error: str | None
    extra: list[Check]

    def judged(self) -> TrialRecord:
        spec, result, trace = self.spec, self.result, self.trace
        usage = result.usage if not result.usage.is_empty() else usage_of(trace.events)
        ctx = GradeContext(spec.task, trace, self.outcome, usage, self.latency, spec.domain)
        trial_result = TrialResult(
            run_id=spec.run_id,
            task_id=spec.task.id,
            trial=spec.trial,
            seed=spec.seed,
            status="error",  # until judge() decides
            usage=usage,
            latency_s=round(self.latency, 6),
            trace_id=spec.trace_id,
        )
        judge(trial_result, ctx, self.extra, self.status, self.error)
        return TrialRecord(trial_result, trace, result.answer, self.outcome)


def judge(
    result: TrialResult,
    ctx: GradeContext,
    extra: list[Check],
    status: TrialStatus | None,
    error: str | None,
) -> None:
    """Grade `ctx` into `result`: checks, metrics, score, status and error.

    `status` decided before grading (a timeout, an error) stands; otherwise the verdict
    decides. Shared by a trial and by `regrade`, so both judge alike.
    """
    try:
        checks = grade(ctx) + extra
        metrics = {**tool_metrics(ctx), **required_parts(checks), **root_cause_metric(checks)}
        passed, score = verdict(checks)
    except Exception as exc:  # a grader bug is the harness's fault, never the agent's
        checks, metrics, passed, score = extra, {}, False, 0.0
        status, error = "error", f"{GRADER_ERROR} {type(exc).__name__}: {exc}"
    result.checks, result.metrics, result.score = checks, metrics, score
    result.status = status or ("passed" if passed else "failed")
    result.error = error


def lost_trial(
    spec: TrialSpec, status: TrialStatus, error: str, latency_s: float = 0.0
) -> TrialRecord:
    """The record of a trial whose worker was killed or died: no trace came back."""
    result = TrialResult(
        run_id=spec.run_id,
        task_id=spec.task.id,
        trial=spec.trial,
        seed=spec.seed,
        status=status,
        latency_s=round(latency_s, 6),
        trace_id=spec.trace_id,
        error=error,
    )
    return TrialRecord(result, Trace(f"{spec.task.id}#{spec.trial}", spec.trace_id), "", None)


def _crash_check(exc: BaseException) -> Check:
    frames = traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-3)
    return Check(
        CRASH_CHECK,
        "custom",
        False,
        severity=None,
        evidence={"exception": f"{type(exc).__name__}: {exc}", "traceback": copy_json(frames)},
    )
