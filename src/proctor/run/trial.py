"""One trial: a fresh environment, the agent under a timeout, graders, a verdict.

Who broke decides the status (DESIGN.md, Verdict semantics): an exception from the
agent's own code is its failure (`failed` with an `agent_crashed` check); the domain's
code, the harness, or an InfrastructureError give `error`; running past the timeout
gives `timeout`. Whatever happens, the trace recorded so far is kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any

from proctor.agents.base import (
    AgentInput,
    AgentResult,
    InfrastructureError,
    Usage,
    agent_callable,
    as_result,
    is_async_agent,
)
from proctor.env.domain import Domain
from proctor.env.environment import Environment
from proctor.env.gateway import EnvironmentFault, GatewayClosed
from proctor.env.outcome import Outcome
from proctor.env.toolbox import SyncToolbox, Toolbox
from proctor.grade import GradeContext, grade, tool_metrics, verdict
from proctor.grade.check import Check
from proctor.jsonutil import copy_json
from proctor.run.result import TrialResult
from proctor.spec.models import Fault, Task
from proctor.trace import Trace


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
        """32 hex digits, stable for (run, task, trial): usable as an OpenTelemetry trace id."""
        key = f"{self.run_id}:{self.task.id}:{self.trial}"
        return hashlib.sha256(key.encode()).hexdigest()[:32]


@dataclass(slots=True)
class TrialRecord:
    """Everything a trial produced: what is stored, then dropped from memory."""

    result: TrialResult
    trace: Trace
    answer: str
    outcome: Outcome | None


def trial_seed(run_seed: int, task_id: str, trial: int) -> int:
    """A per-trial seed that depends only on the run seed, task and trial number."""
    digest = hashlib.sha256(f"{run_seed}:{task_id}:{trial}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def _usage_from_trace(trace: Trace) -> Usage:
    usage = Usage()
    for e in trace.of_kind("model_call"):
        d = e.data
        usage += Usage(
            int(d.get("input_tokens", 0)),
            int(d.get("output_tokens", 0)),
            float(d.get("cost_usd", 0.0)),
            1,
        )
    return usage


async def _call_sync(fn: Any, agent_input: AgentInput, toolbox: SyncToolbox) -> Any:
    """Run a sync agent in a daemon thread, so one that hangs cannot block the exit."""
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

    threading.Thread(target=work, name="proctor-agent", daemon=True).start()
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


async def run_trial(spec: TrialSpec, agent: Any, timeout_s: float | None) -> TrialRecord:
    task = spec.task
    env = Environment.fresh(task, spec.domain, spec.seed, spec.faults)
    agent_input = AgentInput(
        task_id=task.id,
        prompt=task.prompt,
        identity=task.identity.model_dump(),
        tools=env.gateway.schemas(),
        seed=spec.seed,
        trial=spec.trial,
    )
    fn = agent_callable(agent)
    status: str | None = None
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
    trace = Trace(f"{task.id}#{spec.trial}", spec.trace_id, env.recorder.events)
    usage = result.usage if not result.usage.is_empty() else _usage_from_trace(trace)
    latency = max(wall, env.recorder.clock.now)
    outcome = env.outcome()
    checks: list[Check] = []
    metrics: dict[str, float] = {}
    try:
        ctx = GradeContext(task, trace, outcome, usage, latency, spec.domain)
        checks = grade(ctx) + extra
        metrics = tool_metrics(ctx)
        passed, score = verdict(checks)
    except Exception as exc:  # a grader bug is the harness's fault, never the agent's
        checks, passed, score = extra, False, 0.0
        status = "error"
        error = f"grader raised {type(exc).__name__}: {exc}"
    if status is None:
        status = "passed" if passed else "failed"
    trial_result = TrialResult(
        run_id=spec.run_id,
        task_id=task.id,
        trial=spec.trial,
        seed=spec.seed,
        status=status,
        checks=checks,
        usage=usage,
        latency_s=round(latency, 6),
        trace_id=spec.trace_id,
        score=score,
        metrics=metrics,
        error=error,
    )
    return TrialRecord(trial_result, trace, result.answer, outcome)


def _crash_check(exc: BaseException) -> Check:
    frames = traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-3)
    return Check(
        "agent_crashed",
        "custom",
        False,
        severity=None,
        evidence={"exception": f"{type(exc).__name__}: {exc}", "traceback": copy_json(frames)},
    )
