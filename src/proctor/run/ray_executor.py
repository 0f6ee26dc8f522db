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
start, with their process; a task still running `grace_s` past the limit (an agent
blocking its worker's event loop) is cancelled with force and recorded as `timeout`.
Cancelling asks the worker to end itself, which a worker that cannot run at all (stopped,
hung in the kernel) never does: it would keep its CPU and the next trial or run would wait
for it. So a worker that has not answered within `KILL_WAIT_S` is SIGKILLed by a task
placed on its node (SIGKILL ends a stopped process too), and the trial is recorded only
once Ray has seen that worker die: its CPU is free again.

Ray is an optional extra (`pip install 'proctor[ray]'`), imported when this executor
opens and nowhere else: the core never imports it.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import signal
import time
from pathlib import Path
from typing import Any

from proctor.core.trace import TraceEvent
from proctor.run.executor import Executor, Lane, RunContext, SerialLane
from proctor.run.trial import TrialRecord, TrialSpec, lost_trial
from proctor.run.worker_source import ExecutorError, TrialItem, TrialSource, run_item

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
#: Seconds a force-cancelled worker gets to end itself before it is killed from its node;
#: its task's answer is back by then if the trial ended just as it was cancelled.
KILL_WAIT_S = 2.0
#: Seconds the kill of an unanswering worker, and Ray's noticing its death, may take
#: before the trial is recorded all the same (its node may be gone with it).
REAP_S = 60.0


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
        self.reaper: Any = ray.remote(end_worker)
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


#: A worker process: its node id, pid and start time (`process_started`), which tells it
#: from a later process given the same pid.
WorkerProcess = tuple[str, int, str | None]


class StartBoard:
    """When each trial's latest attempt started, by the clock of the node the board is
    on (a Ray actor on the head): how long a trial has really been running; and the
    worker process running it, to be killed if it stops answering."""

    def __init__(self) -> None:
        self.at: dict[str, float] = {}
        self.workers: dict[str, WorkerProcess] = {}

    def start(self, key: str, worker: WorkerProcess) -> None:
        self.at[key] = time.monotonic()
        self.workers[key] = worker

    def worker(self, key: str) -> WorkerProcess | None:
        return self.workers.get(key)

    def age(self, key: str) -> float | None:
        """Seconds since the trial started; None while it waits for a worker."""
        started = self.at.get(key)
        return None if started is None else time.monotonic() - started

    def forget(self, key: str) -> None:
        self.at.pop(key, None)
        self.workers.pop(key, None)


def process_started(pid: int) -> str | None:
    """When process `pid` started, in clock ticks since boot (/proc/PID/stat, field 22);
    None where there is no /proc (the pid alone then names the process) or no process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # the name, in parentheses, may hold spaces


def end_worker(pid: int, started: str | None) -> bool:
    """A Ray task on the worker's node: SIGKILL the worker process if it is still the one
    that ran the trial, and wait until it has exited. Whether it was there to kill."""
    if process_started(pid) != started:
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    give_up = time.monotonic() + REAP_S
    while time.monotonic() < give_up and _running(pid):
        time.sleep(0.05)
    return True


def _running(pid: int) -> bool:
    """Whether `pid` exists and is not a zombie (exited, its parent yet to reap it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: whether a signal could reach it
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def run_on_node(source: TrialSource, item: TrialItem, starts: Any) -> TrialRecord:
    """A Ray task: one trial on this worker, its start and process told to the board
    (before the agent runs: an agent may stop the process), its node noted at the end of
    its trace."""
    import ray

    context = ray.get_runtime_context()
    node_id, pid = context.get_node_id(), os.getpid()
    ray.get(starts.start.remote(item.key, (node_id, pid, process_started(pid))))
    record = run_item(source, item)
    events = record.trace.events
    worker = {
        "executor": "ray",
        "node_ip": ray.util.get_node_ip_address(),
        "node_id": node_id,
        "pid": pid,
    }
    t = events[-1].t if events else 0.0
    events.append(TraceEvent(len(events) + 1, t, "note", {"worker": worker}))
    return record


def _retrieved(future: asyncio.Future[TrialRecord]) -> None:
    """Mark a task's error as seen: after a timeout or an interrupted run it is only the
    cancellation or the killed worker, and asyncio would log it as never retrieved."""
    if not future.cancelled():
        future.exception()


class _RayLane(SerialLane):
    def __init__(self, executor: RayExecutor) -> None:
        self._ex = executor

    async def run(self, spec: TrialSpec) -> TrialRecord:
        ex, ray = self._ex, self._ex.ray
        item = TrialItem.of(spec)
        ref = ex.task.remote(ex.source, item, ex.starts)
        future = asyncio.wrap_future(ref.future())
        future.add_done_callback(_retrieved)
        limit = ex.ctx.timeout_s
        try:
            return await self._outcome(future, item.key, limit)
        except TimeoutError:
            await self._end(ref, future, item.key)
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

    async def _outcome(
        self, future: asyncio.Future[TrialRecord], key: str, limit: float | None
    ) -> TrialRecord:
        """The task's record; TimeoutError once it has run `grace_s` past the limit."""
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

    async def _end(self, ref: Any, future: asyncio.Future[TrialRecord], key: str) -> None:
        """Cancel the trial's task; kill its worker from its node if it does not end
        itself, then wait until Ray has seen the task end (its CPU is free again)."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        ray = self._ex.ray
        ray.cancel(ref, force=True)
        done, _ = await asyncio.wait({future}, timeout=KILL_WAIT_S)
        if not done:
            # a node that died with the worker cannot run the reaper: nothing is left to kill
            with contextlib.suppress(ray.exceptions.RayError, TimeoutError):
                worker = await asyncio.wrap_future(self._ex.starts.worker.remote(key).future())
                if worker is not None:
                    node_id, pid, started = worker
                    on_node = NodeAffinitySchedulingStrategy(node_id, soft=False)
                    reap = self._ex.reaper.options(
                        num_cpus=0, max_retries=0, scheduling_strategy=on_node
                    )
                    await asyncio.wait_for(
                        asyncio.wrap_future(reap.remote(pid, started).future()), REAP_S
                    )
            await asyncio.wait({future}, timeout=REAP_S)

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
