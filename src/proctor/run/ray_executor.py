"""Ray (`--executor ray`): trials as Ray tasks, spread over a cluster.

Each trial is one Ray task. Its worker rebuilds the suite and the agent from the
TrialSource (once per worker process), runs the trial under the run's timeout, and notes
the node it ran on at the end of the trace (`{"worker": {...}}`, after grading); the
record streams back to the driver, which alone writes the store.

Files. With `working_dir`, that folder is shipped to the cluster as the job's Ray runtime
environment (a content-hashed zip, `.gitignore` honoured) and the workers run in their
unpacked copy, so the suite and agent paths travel relative to it: a laptop can drive a
remote cluster. Without it the files must be at the same paths on every node.

Failures (docs/architecture.md, Verdicts). A trial whose worker process or node dies is
run again (`retries` times, the same seed) and, if it dies again, recorded as `error`:
never lost, never stored twice. The limit counts from when a trial's latest attempt
started, not from when it was submitted: a trial queued behind others after a node died
is not the agent running late. Workers tell a small actor on the head node when they
start; a task still running `grace_s` past the limit (an agent blocking its worker's
event loop) is cancelled with force and recorded as `timeout`.

Ray is an optional extra (`pip install 'proctor[ray]'`), imported when this executor
opens and nowhere else: the core never imports it.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import time
from pathlib import Path
from typing import Any

from proctor.core.trace import TraceEvent
from proctor.run.executor import Executor, Lane, RunContext
from proctor.run.source import ExecutorError, TrialItem, TrialSource, run_item
from proctor.run.trial import TrialRecord, TrialSpec, lost_trial

#: Seconds a Ray task gets past the trial's timeout before it is cancelled.
GRACE_S = 5.0
#: Times a trial is run again when its worker process or node dies.
RETRIES = 1
#: The resource Ray gives the head node: where the start board lives.
HEAD_RESOURCE = "node:__internal_head__"
#: Tries of a `ray://` connection whose session server failed to start on the head. Ray's
#: client server forks that server while gRPC threads run, and the child now and then
#: dies at once (ray-project/ray#63202): a later try gets a new one.
CONNECT_TRIES = 3


class RayExecutor(Executor):
    name = "ray"
    needs_source = True

    def __init__(
        self,
        address: str | None = None,
        *,
        num_cpus: float = 1.0,
        grace_s: float = GRACE_S,
        retries: int = RETRIES,
        working_dir: str | Path | None = None,
        init: dict[str, Any] | None = None,
    ) -> None:
        """`address`: `HOST:PORT`, `auto`, `ray://HOST:PORT`, or None (Ray's default:
        `RAY_ADDRESS`, else a new local instance); ignored when Ray is already
        initialised. `num_cpus`: what each trial reserves. `working_dir`: a folder holding
        the suite and agent files, shipped to the cluster. `init`: further `ray.init`
        arguments.
        """
        if importlib.util.find_spec("ray") is None:  # before the run is created
            raise ExecutorError("the ray executor needs Ray: pip install 'proctor[ray]'")
        self.address = address
        self.num_cpus = num_cpus
        self.grace_s = grace_s
        self.retries = retries
        self.working_dir = None if working_dir is None else Path(working_dir).resolve()
        if self.working_dir is not None and not self.working_dir.is_dir():
            raise ExecutorError(f"--working-dir {working_dir}: not a folder")
        self.init = dict(init or {})

    def worker_source(self, source: TrialSource) -> TrialSource:
        """Paths relative to the shipped working directory, if there is one."""
        return source if self.working_dir is None else source.shipped(self.working_dir)

    async def open(self, ctx: RunContext) -> int:
        import ray

        self.ray: Any = ray
        self.owned = not ray.is_initialized()
        if self.owned:
            connect(ray, self.address, self.working_dir, self.init)
        elif self.working_dir is not None:
            raise ExecutorError(
                "Ray is initialised already: ship the files with "
                "ray.init(runtime_env={'working_dir': ...}) and no working_dir here"
            )
        self.ctx = ctx
        self.task: Any = ray.remote(run_on_node).options(
            num_cpus=self.num_cpus, max_retries=self.retries
        )
        self.source: Any = ray.put(ctx.source)
        resources = ray.cluster_resources()
        placement = {"resources": {HEAD_RESOURCE: 0.001}} if HEAD_RESOURCE in resources else {}
        self.starts: Any = ray.remote(StartBoard).options(num_cpus=0, **placement).remote()
        capacity = int(resources.get("CPU", 1) / self.num_cpus)
        return max(1, min(ctx.concurrency, capacity))

    def lane(self) -> Lane:
        return _RayLane(self)

    async def close(self) -> None:
        if self.owned:
            self.ray.shutdown()
        else:
            self.ray.kill(self.starts)


def connect(ray: Any, address: str | None, working_dir: Path | None, init: dict[str, Any]) -> None:
    """`ray.init`, shipping `working_dir` as the job's runtime environment; one line on
    failure (no cluster there, a Ray or Python version that differs, a package too big)."""
    options = dict(init)
    if working_dir is not None:
        runtime_env = dict(options.get("runtime_env") or {})
        options["runtime_env"] = {**runtime_env, "working_dir": str(working_dir)}
    client = str(address or "").startswith("ray://")
    for attempt in range(1, CONNECT_TRIES + 1):
        try:
            ray.init(address=address, **options)
            return
        except Exception as exc:
            lines = [line for line in str(exc).strip().splitlines() if line.strip()]
            why = lines[0] if lines else type(exc).__name__
            transient = client and why.startswith("Initialization failure from server")
            if transient and attempt < CONNECT_TRIES:
                with contextlib.suppress(Exception):
                    ray.shutdown()  # the failed client session, before the next try
                time.sleep(attempt)
                continue
            if why.endswith(":") and len(lines) > 1:  # a server's traceback: its last line
                why = f"{why} {lines[-1].strip()}"
            tries = f" ({attempt} tries)" if attempt > 1 else ""
            where = address or "a local Ray"
            raise ExecutorError(f"ray: cannot connect to {where}: {why}{tries}") from None


class StartBoard:
    """When each trial's latest attempt started, by the clock of the node the board is
    on (a Ray actor on the head): how long a trial has really been running."""

    def __init__(self) -> None:
        self.at: dict[str, float] = {}

    def start(self, key: str) -> None:
        self.at[key] = time.monotonic()

    def age(self, key: str) -> float | None:
        """Seconds since the trial started; None while it waits for a worker."""
        started = self.at.get(key)
        return None if started is None else time.monotonic() - started

    def forget(self, key: str) -> None:
        self.at.pop(key, None)


def run_on_node(source: TrialSource, item: TrialItem, starts: Any) -> TrialRecord:
    """A Ray task: one trial on this worker, its start told to the board, its node noted
    at the end of its trace."""
    import ray

    starts.start.remote(item.key)
    record = run_item(source, item)
    events = record.trace.events
    context = ray.get_runtime_context()
    worker = {
        "executor": "ray",
        "node_ip": ray.util.get_node_ip_address(),
        "node_id": context.get_node_id(),
        "pid": os.getpid(),
    }
    t = events[-1].t if events else 0.0
    events.append(TraceEvent(len(events) + 1, t, "note", {"worker": worker}))
    return record


class _RayLane(Lane):
    def __init__(self, executor: RayExecutor) -> None:
        self._ex = executor

    async def run(self, spec: TrialSpec) -> TrialRecord:
        ex, ray = self._ex, self._ex.ray
        item = TrialItem.of(spec)
        ref = ex.task.remote(ex.source, item, ex.starts)
        limit = ex.ctx.timeout_s
        try:
            return await self._outcome(ref, item.key, limit)
        except TimeoutError:
            ray.cancel(ref, force=True)
            why = f"agent ran past its {limit} s limit; its Ray worker was killed"
            return lost_trial(spec, "timeout", why, limit or 0.0)
        except ray.exceptions.RayError as exc:
            lines = str(exc).strip().splitlines()
            return lost_trial(spec, "error", f"ray: {lines[-1] if lines else type(exc).__name__}")
        except asyncio.CancelledError:
            ray.cancel(ref, force=True)
            raise
        finally:
            ex.starts.forget.remote(item.key)

    async def _outcome(self, ref: Any, key: str, limit: float | None) -> TrialRecord:
        """The task's record; TimeoutError once it has run `grace_s` past the limit."""
        future = asyncio.wrap_future(ref.future())
        if limit is None:
            return await future
        allowed = limit + self._ex.grace_s
        wait_s = allowed
        while True:
            done, _ = await asyncio.wait({future}, timeout=wait_s)
            if done:
                return future.result()
            age = await self._age(key)
            if age is not None and age >= allowed:
                raise TimeoutError
            wait_s = allowed - (age or 0.0)

    async def _age(self, key: str) -> float | None:
        """How long the trial has run; as long as allowed when the board is gone."""
        try:
            ref = self._ex.starts.age.remote(key)
            age: float | None = await asyncio.wrap_future(ref.future())
        except self._ex.ray.exceptions.RayError:
            return float("inf")
        return age

    def close(self) -> None:
        """Nothing held: Ray owns the workers."""
