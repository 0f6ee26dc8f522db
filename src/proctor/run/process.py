"""Worker processes: the one worker system of `--isolation process` and of grading pools.

A `Worker` is a process forked from a warm forkserver (the modules it runs imported once,
`worker_context`) that sets itself up once (a suite and agent loaded from their files:
the domain crosses once per worker, never per trial) and then runs the jobs sent over
its pipe, in order, sending each result back. Grading pools (`run/pool.py`) keep N of
them busy; process isolation gives each lane one.

Isolation: an agent stuck in a blocking call or a CPU-bound loop cannot be stopped inside
its own process: a thread cannot be killed, and one that holds the event loop stops the
timeout too. Here a lane's trials run in its worker, under the trial's timeout there (an
agent that yields or blocks its loop gets its partial trace graded exactly as
in-process: it plays off the worker's own loop), the next trial
sent a trial ahead so that the worker never waits for the parent. The lane waits
`grace_s` past the limit, then kills the worker, records the trial as `timeout`, and
sends the trials queued behind it to a fresh worker. A worker that reports a timeout is
replaced as well: its agent may still be running in a thread. A worker that dies during
the agent's turn (`os._exit`, a native crash) is the agent's failure: a `failed` trial
with an `agent_crashed` check holding the exit code. The worker marks in shared memory
which trial it started and which it finished playing, so telling the agent's death from
the harness's costs no message. Records come back over the pipe; the parent alone writes
the store.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Sequence
from multiprocessing import spawn
from multiprocessing.connection import Connection
from multiprocessing.context import BaseContext
from typing import Any

from proctor.grade.registry import BUILTIN
from proctor.run.executor import Executor, Lane, RunContext
from proctor.run.trial import TrialRecord, TrialSpec, crash_check, lost_trial
from proctor.run.worker_source import ExecutorError, TrialItem, TrialSource, load, run_item

#: Seconds a worker gets past the trial's timeout before it is killed.
GRACE_S = 1.0
_POLL_S = 0.2
#: Shared marks: the number of the trial a worker started, and of the one it played.
_STARTED, _PLAYED = 0, 1
#: What grading imports on first use, imported once by the forkserver so that no worker
#: imports it after its fork (~30 ms a worker): the built-in graders, and text2num (the
#: grounding grader reads numbers in words in most answers).
GRADING_PRELOAD = (*BUILTIN, "text_to_num")
#: What a trial worker runs: a trial's life, then its grading.
TRIAL_PRELOAD = ("proctor.run.worker_source", *GRADING_PRELOAD)
#: The name of every worker process (what `_preparation` knows them by).
WORKER_NAME = "proctor-worker"
_stdlib_preparation = spawn.get_preparation_data


def _preparation(name: str) -> dict[str, Any]:
    """What multiprocessing prepares a child with before its target runs; for a worker,
    without the parent's main module. A child otherwise runs the parent's main script
    again (the `proctor` console script: ~35 ms of imports the forkserver has not made;
    a user's script: whatever it does at import), in every worker, for nothing: a worker
    runs only proctor's own functions on arguments defined in proctor (the agent is
    loaded by reference).
    The forkserver's `__main__` preload, meant for this, never gets the path (CPython's
    forkserver asks for `main_path`, spawn names it `init_main_from_path`)."""
    data: dict[str, Any] = _stdlib_preparation(name)
    if name == WORKER_NAME:
        data.pop("init_main_from_path", None)
        data.pop("init_main_from_name", None)
    return data


def worker_context(preload: Sequence[str]) -> BaseContext:
    """How worker processes start: forked from a server that has imported `preload`
    once (the 0.7 s of importing proctor is not paid again by each worker; and no fork
    of this threaded process), or spawned where there is no forkserver. Its workers are
    prepared without the parent's main module (`_preparation`, installed here rather than
    at import: importing proctor changes nothing in multiprocessing)."""
    spawn.get_preparation_data = _preparation
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    if context.get_start_method() == "forkserver":
        context.set_forkserver_preload(list(preload))
    return context


def warm_up(mp: BaseContext) -> None:
    """Start `mp`'s forkserver now, on a thread: its interpreter imports what workers run
    (most of a first worker's start) while this process prepares its run; a worker
    started before it is up waits for it, as it would have."""
    if mp.get_start_method() == "forkserver":
        from multiprocessing import forkserver

        threading.Thread(
            target=forkserver.ensure_running, name="proctor-forkserver", daemon=True
        ).start()


class WorkerLost(Exception):
    """The worker process ended (killed, crashed, out of memory); `code` its exit code."""

    def __init__(self, code: int | None) -> None:
        super().__init__(f"worker process ended ({code})")
        self.code = code


class Worker:
    """A worker process: `setup(arg)` once, then each job `(fn, job)` sent, in order."""

    def __init__(
        self,
        mp: BaseContext,
        setup: Callable[[Any], None] | None = None,
        arg: Any = None,
    ) -> None:
        ctx: Any = mp
        self.marks = ctx.RawArray("q", 2)
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(
            target=serve, args=(child, setup, arg, self.marks), name=WORKER_NAME, daemon=True
        )
        self.proc.start()
        child.close()

    def ready(self) -> None:
        """Wait for the worker's setup; ExecutorError when it failed."""
        while not self.conn.poll(_POLL_S):
            if not self.proc.is_alive():
                self.kill()
                raise ExecutorError(f"worker process ended while starting ({self.proc.exitcode})")
        try:
            kind, payload = self.receive()
        except WorkerLost as lost:
            raise ExecutorError(f"worker process ended while starting ({lost.code})") from None
        if kind != "ready":
            self.kill()
            raise ExecutorError(f"worker process could not load the suite or agent: {payload}")

    def send(self, fn: Callable[[Any], Any], job: Any) -> None:
        self.conn.send((fn, job))

    def receive(self) -> tuple[str, Any]:
        """The next message; WorkerLost when the process ended instead."""
        try:
            message: tuple[str, Any] = self.conn.recv()
        except (EOFError, OSError):
            self.proc.join(1.0)
            code = self.proc.exitcode
            self.kill()
            raise WorkerLost(code) from None
        return message

    def result(self) -> Any:
        """The next job's result, or the exception it raised, raised here."""
        kind, payload = self.receive()
        if kind == "raised":
            raise payload
        return payload

    async def readable(self, timeout: float | None) -> bool:
        """Wait on this event loop until a message (or the end) can be read."""
        if self.conn.poll():
            return True
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        fd = self.conn.fileno()

        def arrived() -> None:
            if not ready.done():
                ready.set_result(None)

        loop.add_reader(fd, arrived)
        try:
            await asyncio.wait({ready}, timeout=timeout)
        finally:
            loop.remove_reader(fd)
        return ready.done()

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join()
        self.conn.close()

    def stop(self) -> None:
        """End the worker when it has finished its jobs (its pipe closed), or kill it."""
        self.conn.close()
        self.proc.join(1.0)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()


def serve(conn: Connection, setup: Callable[[Any], None] | None, arg: Any, marks: Any) -> None:
    """A worker's life: set up, then run jobs until the pipe closes."""
    global _marks
    _marks = marks
    _exit_with_parent()
    try:
        if setup is not None:
            setup(arg)
    except Exception as exc:
        conn.send(("error", one_line(exc)))
        return
    conn.send(("ready", None))
    while True:
        try:
            fn, job = conn.recv()
        except EOFError:
            return
        try:
            result = fn(job)
        except Exception as exc:
            conn.send(("raised", _sendable(exc)))
            continue
        try:
            conn.send(("done", result))
        except Exception as exc:  # a result that cannot be pickled
            conn.send(("raised", ExecutorError(f"worker: {one_line(exc)}")))


_marks: Any = None
_source: TrialSource | None = None


def _sendable(exc: Exception) -> Exception:
    """`exc` if it survives pickling, else an ExecutorError that names it."""
    import pickle

    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return ExecutorError(f"worker: {one_line(exc)}")
    return exc


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def _exit_with_parent() -> None:
    """Exit when the parent is gone (killed with -9 mid-trial), even if an agent hangs."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="proctor-watch-parent", daemon=True).start()


# -- process isolation ---------------------------------------------------------------------


def load_trials(source: TrialSource) -> None:
    """A trial worker's setup: the suite and agent, loaded once."""
    global _source
    load(source)
    _source = source


def play(job: tuple[int, TrialItem]) -> TrialRecord:
    """In a trial worker: run trial number `seq`, marking when it starts and is played."""
    seq, item = job
    assert _source is not None, "load_trials runs first"
    _marks[_STARTED] = seq
    return run_item(_source, item, lambda: _marks.__setitem__(_PLAYED, seq))


class ProcessExecutor(Executor):
    name = "process"
    needs_source = True

    def __init__(self, grace_s: float = GRACE_S) -> None:
        self.grace_s = grace_s
        # replacing a killed worker is a fork of a warm server, not a new interpreter
        self.mp = worker_context(TRIAL_PRELOAD)
        warm_up(self.mp)

    async def open(self, ctx: RunContext) -> int:
        self.ctx = ctx
        return ctx.concurrency

    def lane(self) -> Lane:
        return _ProcessLane(self)

    async def close(self) -> None:
        """Each lane killed its worker."""


class _ProcessLane(Lane):
    def __init__(self, executor: ProcessExecutor) -> None:
        self._ex = executor
        self._worker: Worker | None = None
        self._sent = 0
        #: Trials whose sending found the worker's pipe closed: it died after its last
        #: answer, so they never reached it (what it answered before can still be read).
        self._undelivered: set[int] = set()

    async def drive(
        self, specs: Iterator[TrialSpec], put: Callable[[TrialRecord], Awaitable[None]]
    ) -> None:
        ahead: deque[tuple[int, TrialSpec]] = deque()
        try:
            for spec in specs:
                ahead.append(await self._send(spec))
                if len(ahead) > 1:
                    await put(await self._receive(ahead))
            while ahead:
                await put(await self._receive(ahead))
        finally:
            self.close()

    def close(self) -> None:
        worker, self._worker = self._worker, None
        self._undelivered.clear()
        if worker is not None:
            worker.kill()

    async def _send(self, spec: TrialSpec) -> tuple[int, TrialSpec]:
        if self._worker is None:  # on a thread: the lanes' workers start side by side
            self._worker = await asyncio.to_thread(self._start)
        self._sent += 1
        try:
            self._worker.send(play, (self._sent, TrialItem.of(spec)))
        except OSError:  # a broken pipe: the trials ahead of it tell how the worker ended
            self._undelivered.add(self._sent)
        return self._sent, spec

    def _start(self) -> Worker:
        worker = Worker(self._ex.mp, load_trials, self._ex.ctx.source)
        worker.ready()
        return worker

    async def _receive(self, ahead: deque[tuple[int, TrialSpec]]) -> TrialRecord:
        """The first trial's record; the trials behind it go to a fresh worker when this
        one is killed or lost."""
        while ahead[0][0] in self._undelivered:  # nothing left to read from that worker
            await self._resend(ahead)
        seq, spec = ahead[0]
        record = await self._await(seq, spec)
        ahead.popleft()
        if self._worker is None:  # killed or lost: send what was queued behind it again
            await self._resend(ahead)
        return record

    async def _resend(self, ahead: deque[tuple[int, TrialSpec]]) -> None:
        """The trials in `ahead`, sent again to a fresh worker in the same order."""
        self.close()
        queued = [spec for _, spec in ahead]
        ahead.clear()
        for later in queued:
            ahead.append(await self._send(later))

    async def _await(self, seq: int, spec: TrialSpec) -> TrialRecord:
        worker = self._worker
        assert worker is not None
        limit = self._ex.ctx.timeout_s
        started = time.monotonic()
        deadline = None if limit is None else started + limit + self._ex.grace_s
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if await worker.readable(None if left is None else max(left, 0.0)):
                break
            if worker.marks[_STARTED] < seq:  # still behind the trial before: not its time
                deadline = None if limit is None else time.monotonic() + limit + self._ex.grace_s
            elif worker.marks[_PLAYED] >= seq:  # played: grading, the harness's own work
                deadline = None
            else:
                self.close()
                why = f"agent ran past its {limit} s limit; its worker process was killed"
                return lost_trial(spec, "timeout", why, limit or 0.0)
        try:
            kind, payload = worker.receive()
        except WorkerLost as lost:
            self._worker = None
            if worker.marks[_PLAYED] >= seq:
                return lost_trial(spec, "error", f"worker process died while grading ({lost.code})")
            why = f"the agent's worker process died in its turn (exit code {lost.code})"
            crash = crash_check(why, exit_code=lost.code)
            return lost_trial(spec, "failed", why, time.monotonic() - started, [crash])
        if kind != "done":
            return lost_trial(spec, "error", f"worker: {one_line(payload)}")
        if payload.findings.status == "timeout":
            self.close()
        return payload
