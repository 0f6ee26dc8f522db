"""No test hangs the suite: pytest-timeout fails a test past its limit with the stack of
every thread, the fixtures' teardown still runs, a long test prints progress lines, and
a test no signal reaches is ended by tests/hang_guard.py after the atexit handlers ran.

Each case is a pytest run of its own in a folder here, configured as this suite is
(pyproject.toml), with the guard's periods shortened.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import hang_guard

TESTS = Path(__file__).parent

CONFTEST = f"""
import atexit, pathlib, sys
sys.path.insert(0, {str(TESTS)!r})
import hang_guard

hang_guard.PROGRESS_S = 1.0
hang_guard.BACKSTOP_S = 1.0
hang_guard.TICK_S = 0.1


def pytest_configure(config):
    config.pluginmanager.register(hang_guard.HangGuard(config), "proctor-hang-guard")
    atexit.register(lambda: pathlib.Path("atexit-ran").touch())
"""


def pytest_run(tmp_path: Path, test: str, timeout_s: float) -> subprocess.CompletedProcess[str]:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_case.py").write_text(textwrap.dedent(test))
    (tmp_path / "pytest.ini").write_text(
        f"[pytest]\ntimeout = {timeout_s}\ntimeout_method = signal\n"
    )
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_test_past_its_limit_fails_with_every_thread_and_its_teardown(tmp_path: Path) -> None:
    done = tmp_path / "torn-down"
    ran = pytest_run(
        tmp_path,
        f"""
        import threading, time
        import pytest

        @pytest.fixture
        def held():
            yield
            open({str(done)!r}, "w").close()

        def helper_thread_waits():
            time.sleep(60)

        def test_sleeps(held):
            threading.Thread(target=helper_thread_waits, daemon=True).start()
            time.sleep(60)
        """,
        timeout_s=2,
    )
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "Timeout (>2.0s) from pytest-timeout" in ran.stdout
    assert "helper_thread_waits" in ran.stdout  # the stack of the other thread too
    assert "1 failed" in ran.stdout and done.exists()


def test_a_long_test_prints_progress_lines(tmp_path: Path) -> None:
    ran = pytest_run(
        tmp_path,
        """
        import time

        def test_takes_a_while():
            time.sleep(2.5)
        """,
        timeout_s=30,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    lines = [line for line in ran.stderr.splitlines() if "running for" in line]
    assert lines == [
        "test_case.py::test_takes_a_while: running for 1 s",
        "test_case.py::test_takes_a_while: running for 2 s",
    ]


def test_a_test_no_signal_reaches_is_ended_after_the_atexit_handlers(tmp_path: Path) -> None:
    ran = pytest_run(
        tmp_path,
        """
        import signal, time

        def test_blocks_the_alarm():
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
            time.sleep(60)
        """,
        timeout_s=1,
    )
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "test_blocks_the_alarm: not ended by its timeout; stopping" in ran.stderr
    assert "in test_blocks_the_alarm" in ran.stderr  # the dumped stack
    assert (tmp_path / "atexit-ran").exists()
    assert "Timeout" not in ran.stdout  # pytest-timeout's signal never arrived


def test_the_suite_has_a_limit_per_test(pytestconfig: pytest.Config) -> None:
    assert float(pytestconfig.getini("timeout")) > 0
    assert pytestconfig.getini("timeout_method") == "signal"
    assert pytestconfig.pluginmanager.has_plugin("proctor-hang-guard")
    assert hang_guard.BACKSTOP_S > 0
