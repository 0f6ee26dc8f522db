"""A process pool sends each job to a worker with room and yields results in job order.

The jobs here coordinate through a file, not through time: the first job waits until a
later one marks the file, so a pool that dealt jobs in turn (the later one queued behind
the waiting job on the same worker) would only get past it when the wait gives up.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from proctor.run.pool import ProcessPool
from proctor.run.worker_source import ExecutorError

#: Seconds a waiting job waits for its mark before it gives up (and the test fails).
GIVE_UP_S = 30.0


def job(arg: tuple[str, str]) -> int:
    """`wait` until the file is marked, `mark` it, `raise`, `die`, or just run; the
    worker's pid."""
    kind, path = arg
    if kind == "wait":
        given_up = time.monotonic() + GIVE_UP_S
        while not os.path.exists(path) and time.monotonic() < given_up:
            time.sleep(0.01)
    elif kind == "mark":
        Path(path).touch()
    elif kind == "raise":
        raise ValueError(f"job {path} broke")
    elif kind == "die":
        os._exit(3)
    return os.getpid()


def test_a_worker_held_up_gets_no_more_jobs_and_results_come_in_job_order(
    tmp_path: Path,
) -> None:
    mark = str(tmp_path / "mark")
    kinds = ["wait", "run", "run", "run", "mark", "run", "run", "run"]
    with ProcessPool(2) as pool:
        pids = list(pool.map(job, [(kind, mark) for kind in kinds]))
    assert len(pids) == len(kinds) and len(set(pids)) == 2
    # dealt in turn, the mark would have waited behind the first job on its worker
    assert pids[4] != pids[0]
    assert pids.count(pids[0]) < pids.count(pids[4])  # the held-up worker ran fewer


def test_a_job_that_raised_raises_in_its_turn_after_the_results_before_it(
    tmp_path: Path,
) -> None:
    """The error of job 3 arrives before job 0's result (job 0 waits for job 4, on the
    other worker): the results before it are still handed back first, none after it."""
    mark = str(tmp_path / "mark")
    kinds = ["wait", "run", "run", "raise", "mark", "run"]
    jobs = [(kind, "3" if kind == "raise" else mark) for kind in kinds]
    got: list[int] = []
    with ProcessPool(2) as pool, pytest.raises(ValueError, match="job 3 broke"):
        for pid in pool.map(job, jobs):
            got.append(pid)
    assert len(got) == 3


def test_a_worker_that_died_is_an_error_not_a_wait() -> None:
    """The worker's end is read as its result comes (not in its turn): the map says so."""
    with ProcessPool(2) as pool, pytest.raises(ExecutorError, match="worker process died"):
        list(pool.map(job, [("run", ""), ("die", ""), ("run", ""), ("run", "")]))
