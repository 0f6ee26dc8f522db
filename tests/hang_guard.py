"""Every test watched: a line on the terminal for each `PROGRESS_S` a test runs, and a
hard stop where pytest-timeout's own cannot end it.

pytest-timeout (pyproject.toml: `timeout`, `timeout_method = "signal"`) fails a test
past its limit with SIGALRM, after dumping the stack of every thread, and the fixtures'
teardown runs (a Ray cluster is stopped). A test stuck where no signal handler runs (C
code that neither returns nor lets Python in) is ended here `BACKSTOP_S` later: the stack
of every thread dumped, the atexit handlers run (tests/ray_cluster.py stops its clusters
there), and the process exits 1; under pytest-xdist its worker is replaced and the test
reported as crashed. Registered by tests/conftest.py.
"""

from __future__ import annotations

import atexit
import faulthandler
import os
import threading
import time
from collections.abc import Generator
from typing import IO, Any

import pytest

#: Seconds between two progress lines of a long test.
PROGRESS_S = 30.0
#: Seconds past a test's pytest-timeout limit before this guard ends the process.
BACKSTOP_S = 60.0
#: How often the watchdog looks at the clock.
TICK_S = 1.0


class HangGuard:
    def __init__(self, config: pytest.Config) -> None:
        #: The pytest-xdist worker this runs in ("gw0"...), named on its lines; None outside.
        worker = getattr(config, "workerinput", {}).get("workerid")
        self.where = f"[{worker}] " if worker else ""
        # The terminal as it is now, outside pytest's capture (suspended while plugins
        # are configured): a test's own output is captured, these lines are not.
        self.out: IO[str] = os.fdopen(os.dup(2), "w", buffering=1)
        self.hard_at: float | None = None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, None, None]:
        done = threading.Event()
        watcher = threading.Thread(
            target=self.watch, args=(item.nodeid, done), name="hang-guard", daemon=True
        )
        watcher.start()
        try:
            yield
        finally:
            done.set()
            watcher.join()
            self.hard_at = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_timeout_set_timer(self, item: pytest.Item, settings: Any) -> None:
        """pytest-timeout's limit for this test; its own timer is set as well."""
        self.hard_at = time.monotonic() + settings.timeout + BACKSTOP_S

    def watch(self, nodeid: str, done: threading.Event) -> None:
        began = time.monotonic()
        said = 0
        where = self.where
        while not done.wait(TICK_S):
            now = time.monotonic()
            if int((now - began) // PROGRESS_S) > said:
                said += 1
                self.out.write(f"\n{where}{nodeid}: running for {said * PROGRESS_S:.0f} s\n")
            if self.hard_at is not None and now >= self.hard_at:
                self.out.write(f"\n{where}{nodeid}: not ended by its timeout; stopping\n")
                faulthandler.dump_traceback(self.out, all_threads=True)
                atexit._run_exitfuncs()
                os._exit(1)
