"""Process isolation (`--isolation process`): each lane owns a worker process.

An agent stuck in a blocking call or a CPU-bound loop cannot be stopped inside its own
process: a thread cannot be killed, and one that holds the event loop stops the timeout
too. Here a lane's trials run in its worker process, under the trial's timeout there (an
agent that yields gets its partial trace graded exactly as in-process). The lane waits
`grace_s` longer, then kills the worker, records the trial as `timeout`, and starts a
fresh worker for its next trial. A worker that reports a timeout is replaced as well: its
agent may still be running in a thread. A worker that dies during the agent's turn
(`os._exit`, a native crash) is the agent's failure: a `failed` trial with an
`agent_crashed` check holding the exit code, and a fresh worker. Records come back over
a pipe; the parent alone writes the store.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from proctor.run.executor import Executor, Lane, RunContext, SerialLane
from proctor.run.pool import worker_context
from proctor.run.source import ExecutorError, TrialItem, TrialSource, load, run_item
from proctor.run.trial import TrialRecord, TrialSpec, crash_check, lost_trial

#: Seconds a worker gets past the trial's timeout before it is killed.
GRACE_S = 1.0
_POLL_S = 0.2


class ProcessExecutor(Executor):
    name = "process"
    needs_source = True

    def __init__(self, grace_s: float = GRACE_S) -> None:
        self.grace_s = grace_s

    async def open(self, ctx: RunContext) -> int:
        # replacing a killed worker is a fork of a warm server, not a new interpreter
        self.mp = worker_context(["proctor.run.source"])
        self.ctx = ctx
        self.threads = ThreadPoolExecutor(ctx.concurrency, thread_name_prefix="proctor-lane")
        self.closing = threading.Event()
        return ctx.concurrency

    def lane(self) -> Lane:
        return _ProcessLane(self)

    async def close(self) -> None:
        self.closing.set()
        self.threads.shutdown(wait=False, cancel_futures=True)


class _ProcessLane(SerialLane):
    def __init__(self, executor: ProcessExecutor) -> None:
        self._ex = executor
        self._worker: tuple[BaseProcess, Connection] | None = None

    async def run(self, spec: TrialSpec) -> TrialRecord:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._ex.threads, self._roundtrip, spec)

    def close(self) -> None:
        self._stop()

    def _roundtrip(self, spec: TrialSpec) -> TrialRecord:
        """Send one trial to the worker and wait for its record, killing it at the limit.

        The worker says when the agent's turn is over (`played`): a death before that is
        the agent's (`os._exit`, a crash in a native library), a death after it, while
        grading, the harness's.
        """
        if self._worker is None:
            self._worker = self._start()
        proc, conn = self._worker
        limit = self._ex.ctx.timeout_s
        started = time.monotonic()
        deadline = None if limit is None else started + limit + self._ex.grace_s
        played = False
        try:
            conn.send(TrialItem.of(spec))
            while True:
                while not conn.poll(_POLL_S):
                    if self._ex.closing.is_set():
                        self._stop()
                        return lost_trial(spec, "error", "the run was closed")
                    if not played and deadline is not None and time.monotonic() > deadline:
                        self._stop()
                        why = f"agent ran past its {limit} s limit; its worker process was killed"
                        return lost_trial(spec, "timeout", why, limit or 0.0)
                kind, payload = conn.recv()
                if kind != "played":
                    break
                played = True
        except (EOFError, OSError):
            proc.join(1.0)
            code = proc.exitcode
            self._stop()
            if played:
                return lost_trial(spec, "error", f"worker process died while grading ({code})")
            why = f"the agent's worker process died in its turn (exit code {code})"
            crash = crash_check(why, exit_code=code)
            return lost_trial(spec, "failed", why, time.monotonic() - started, [crash])
        if kind == "error":
            return lost_trial(spec, "error", f"worker: {payload}")
        if payload.findings.status == "timeout":
            self._stop()
        return payload

    def _start(self) -> tuple[BaseProcess, Connection]:
        mp: Any = self._ex.mp
        parent, child = mp.Pipe()
        proc = mp.Process(
            target=worker_main, args=(child, self._ex.ctx.source), name="proctor-worker"
        )
        proc.daemon = True
        proc.start()
        child.close()
        while not parent.poll(_POLL_S):
            if not proc.is_alive() or self._ex.closing.is_set():
                proc.kill()
                raise ExecutorError(f"worker process ended while starting ({proc.exitcode})")
        kind, payload = parent.recv()
        if kind != "ready":
            proc.join()
            raise ExecutorError(f"worker process could not load the suite or agent: {payload}")
        return proc, parent

    def _stop(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            proc, conn = worker
            proc.kill()
            proc.join()
            conn.close()


def worker_main(conn: Connection, source: TrialSource) -> None:
    """A worker's life: load the suite and agent, then run trials until the pipe closes."""
    _exit_with_parent()
    try:
        load(source)
    except Exception as exc:
        conn.send(("error", _one_line(exc)))
        return
    conn.send(("ready", None))
    while True:
        try:
            item = conn.recv()
        except EOFError:
            return
        try:
            record = run_item(source, item, lambda: conn.send(("played", None)))
            conn.send(("record", record))
        except Exception as exc:  # a harness error, or a record that cannot be pickled
            conn.send(("error", _one_line(exc)))


def _one_line(exc: BaseException) -> str:
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
