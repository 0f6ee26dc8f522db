"""Reused daemon threads, as many as are busy at once: where a sync agent runs
(proctor.run.threads) and where an async agent's question to a model user waits
(proctor.env.toolbox), off every event loop.

Starting a thread per job costs tens of microseconds, so threads are kept and reused;
a job never waits for a thread, because one is started whenever none is idle. A pool of
fixed size (asyncio's default one for `to_thread`: min(32, CPUs + 4)) makes the jobs past
its size queue, and a trial waiting in that queue is charged for time that is neither its
agent's nor its user's. They are daemon threads, unlike `concurrent.futures`' pool (joined
at exit): a job that never returns cannot hold the interpreter open. A thread held by such
a job is simply never idle again, and the next job gets a new one.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")


class DaemonThreads:
    def __init__(self, name: str) -> None:
        self.name = name  # its threads' name
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Callable[[Any], None] | None]] = (
            queue.SimpleQueue()
        )
        self._lock = threading.Lock()
        self._idle = 0

    def submit(self, job: Callable[[], Any], then: Callable[[Any], None] | None = None) -> None:
        """Run `job` (which never raises) on an idle thread, or on a new one when none is
        idle; then `then(what job returned)`, once the thread counts itself idle again: a
        hand-off there lets the next job its receiver submits find this thread."""
        with self._lock:
            start = self._idle == 0
            if not start:
                self._idle -= 1  # that thread is promised this job
        self._jobs.put((job, then))
        if start:
            threading.Thread(target=self._serve, name=self.name, daemon=True).start()

    def call(self, fn: Callable[[], T]) -> Future[T]:
        """`fn()` on one of these threads; its value or what it raised in the future."""
        future: Future[T] = Future()

        def work() -> tuple[bool, Any] | None:
            if not future.set_running_or_notify_cancel():
                return None
            try:
                return True, fn()
            except BaseException as exc:  # the caller's to judge, not this thread's
                return False, exc

        def deliver(outcome: tuple[bool, Any] | None) -> None:
            if outcome is None:
                return
            done, value = outcome
            if done:
                future.set_result(value)
            else:
                future.set_exception(value)

        self.submit(work, deliver)
        return future

    def _serve(self) -> None:
        while True:
            job, then = self._jobs.get()
            out = job()
            with self._lock:
                self._idle += 1
            if then is not None:
                then(out)
