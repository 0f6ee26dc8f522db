"""Daemon threads for sync agents, reused from trial to trial.

A sync agent runs off the event loop, in a thread. Starting one per trial costs tens of
microseconds, a visible share of the harness's budget, so threads are kept and reused.
They are daemon threads, unlike `concurrent.futures`' pool (joined at exit): an agent that
never returns cannot hold the interpreter open. A thread held by such an agent is simply
never idle again, and the next trial gets a new one.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable


class AgentThreads:
    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0

    def submit(self, job: Callable[[], None]) -> None:
        """Run `job` on an idle thread, or on a new one when none is idle."""
        with self._lock:
            start = self._idle == 0
            if not start:
                self._idle -= 1  # that thread is promised this job
        self._jobs.put(job)
        if start:
            threading.Thread(target=self._serve, name="proctor-agent", daemon=True).start()

    def _serve(self) -> None:
        while True:
            self._jobs.get()()  # a job never raises: it hands its outcome to the event loop
            with self._lock:
                self._idle += 1


#: One pool per process: trials of every run share it.
AGENT_THREADS = AgentThreads()
