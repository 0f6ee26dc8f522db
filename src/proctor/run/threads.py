"""Where agent code runs: reused daemon threads for sync agents, an event loop of its own
for async ones. Never on the harness's loop, so whatever an agent does there (block in
`time.sleep`, swallow cancellation, raise `SystemExit`) the harness still keeps time.

A sync agent runs off the event loop, in a thread (proctor.core.daemon_threads: kept and
reused, a new one whenever none is idle). They are daemon threads: an agent that never
returns cannot hold the interpreter open. A thread held by such an agent is simply never
idle again, and the next trial gets a new one.

Async agents share one event loop on a daemon thread (they may share loop-bound objects
across trials, as on any single loop). A loop an agent blocked is abandoned: trials that
start later get a new one.
"""

from __future__ import annotations

import asyncio
import threading

from proctor.core.daemon_threads import DaemonThreads


class AgentLoop:
    """The event loop async agents run on, on a daemon thread of its own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None

    def get(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                self._loop = _serving_loop()
            return self._loop

    def serves(self, loop: asyncio.AbstractEventLoop) -> bool:
        """Is `loop` still the one handed out (not abandoned)?"""
        return self._loop is loop

    def abandon(self, loop: asyncio.AbstractEventLoop) -> None:
        """Stop handing out `loop` (an agent blocked it); its thread is left to itself."""
        with self._lock:
            if self._loop is loop:
                self._loop = None


def _serving_loop() -> asyncio.AbstractEventLoop:
    loop = asyncio.new_event_loop()
    started = threading.Event()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(started.set)
        while True:
            try:
                loop.run_forever()
            except BaseException:  # an agent's stray task raised SystemExit
                continue

    threading.Thread(target=serve, name="proctor-agent-loop", daemon=True).start()
    started.wait()
    return loop


#: One of each per process: trials of every run share them.
AGENT_THREADS = DaemonThreads("proctor-agent")
AGENT_LOOP = AgentLoop()
