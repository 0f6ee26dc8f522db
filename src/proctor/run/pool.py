"""Grading spread over worker processes or a Ray cluster, its results handed back in order.

Regrading a run and grading imported traces are CPU-bound and independent per trial. The
work is cut into jobs (a share of a run's trials, a batch of sessions); each job runs in
a worker, and the results come back in job order, so the parent, which alone writes the
store, writes them as one process would: the same rows and the same summary whatever the
number of workers. At most two jobs per worker are in flight, and a process pool holds a
few results while an earlier one is awaited, so memory stays bounded.

`InlinePool` runs the jobs here, one at a time; `ProcessPool` in N worker processes, the
same workers as `--isolation process` (run/process.py), each job sent to a worker with
room as results come back (not dealt in turn: a worker slowed down by whatever else the
machine runs would hold up the end of the map while the others wait); `RayPool` as Ray
tasks of one CPU each on the cluster it connects to, whose scheduler places them. Ray
workers may be on other machines: they cannot open files at this machine's paths, so
jobs for them carry what they read (`Pool.local` is False).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from itertools import count
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from proctor.run.process import GRADING_PRELOAD, Worker, WorkerLost, worker_context
from proctor.run.worker_source import ExecutorError, SuiteSource

J = TypeVar("J")
R = TypeVar("R")
#: No job left.
_END: Any = object()


class Pool(ABC):
    """Runs a module-level function on jobs; `map` yields the results in job order."""

    #: Workers run on this machine and read its files (the store) themselves.
    local: ClassVar[bool] = True
    #: Jobs run in this process (and may be handed objects that cannot be pickled).
    inline: ClassVar[bool] = False
    workers: int
    #: The folder shipped to the workers as their working directory, if any.
    working_dir: Path | None = None

    def ship(self, source: SuiteSource) -> SuiteSource:
        """`source` as the workers see it: relative to the shipped folder."""
        return source if self.working_dir is None else source.shipped(self.working_dir)

    @abstractmethod
    def map(self, fn: Callable[[J], R], jobs: Iterable[J]) -> Iterator[R]:
        """`fn(job)` of each job, in job order; a job's error raised at its turn."""

    @abstractmethod
    def close(self) -> None:
        """Release the workers."""

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class InlinePool(Pool):
    inline = True
    workers = 1

    def map(self, fn: Callable[[J], R], jobs: Iterable[J]) -> Iterator[R]:
        return (fn(job) for job in jobs)

    def close(self) -> None:
        """No workers to release."""


class ProcessPool(Pool):
    """N worker processes (run/process.py). Each job goes to a worker with room (two jobs:
    one running, one queued behind it, so that none waits for the parent), the one with
    fewer first; results are read as they come and yielded in job order, at most
    `AHEAD` jobs per worker sent or held ahead of the one awaited."""

    #: What grading jobs run: regrade's shares and imported sessions' batches.
    PRELOAD = ("proctor.run.regrade", "proctor.traces.grading", *GRADING_PRELOAD)
    #: Jobs a worker holds at once.
    QUEUED = 2
    #: Jobs per worker sent and not yet yielded: the results held here while an earlier
    #: job's is awaited are bounded by it.
    AHEAD = 3

    def __init__(self, workers: int) -> None:
        self.workers = workers
        mp = worker_context(self.PRELOAD)
        self.procs = [Worker(mp) for _ in range(workers)]
        try:
            for worker in self.procs:
                worker.ready()
        except ExecutorError:
            self.close()
            raise

    def map(self, fn: Callable[[J], R], jobs: Iterable[J]) -> Iterator[R]:
        pending = iter(jobs)
        held: dict[Worker, deque[int]] = {worker: deque() for worker in self.procs}
        by_conn = {worker.conn: worker for worker in self.procs}
        done: dict[int, tuple[bool, Any]] = {}  # job number -> (raised, result or error)
        sent = 0
        for turn in count():
            while turn not in done:
                sent = self._send(fn, pending, held, sent, turn)
                if turn == sent:
                    return
                for conn in wait([w.conn for w in self.procs if held[w]]):
                    worker = by_conn[conn]
                    done[held[worker].popleft()] = self._result(worker)
            raised, result = done.pop(turn)
            if raised:
                raise result
            yield result

    def _send(
        self,
        fn: Callable[[J], R],
        pending: Iterator[J],
        held: dict[Worker, deque[int]],
        sent: int,
        turn: int,
    ) -> int:
        """Jobs sent to the workers with room, the one holding fewer first, while fewer
        than `AHEAD` a worker are out past `turn`; returns how many were sent in all."""
        while sent - turn < self.AHEAD * self.workers:
            worker = min(self.procs, key=lambda w: len(held[w]))
            if len(held[worker]) >= self.QUEUED or (job := next(pending, _END)) is _END:
                break
            worker.send(fn, job)
            held[worker].append(sent)
            sent += 1
        return sent

    @staticmethod
    def _result(worker: Worker) -> tuple[bool, Any]:
        """The worker's next result, or the error its job raised (`(True, error)`)."""
        try:
            return False, worker.result()
        except WorkerLost:
            raise ExecutorError("a grading worker process died (killed? out of memory?)") from None
        except Exception as exc:
            return True, exc

    def close(self) -> None:
        for worker in self.procs:
            worker.stop()


class RayPool(Pool):
    local = False

    def __init__(self, address: str | None, working_dir: Path | None) -> None:
        try:
            import ray
        except ImportError:
            raise ExecutorError("the ray executor needs Ray: pip install 'proctor[ray]'") from None
        from proctor.run.ray_executor import connect

        self.ray: Any = ray
        self.owned = not ray.is_initialized()
        if self.owned:
            connect(ray, address, working_dir, {"log_to_driver": False})
            self.working_dir = working_dir
        elif working_dir is not None:
            raise ExecutorError("Ray is initialised already: it ships no working_dir here")
        self.workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self.remote: dict[Callable[..., Any], Any] = {}

    def map(self, fn: Callable[[J], R], jobs: Iterable[J]) -> Iterator[R]:
        """At most two jobs per CPU submitted ahead of the result awaited."""
        window: deque[Any] = deque()
        for job in jobs:
            window.append(self._submit(fn, job))
            if len(window) >= 2 * self.workers:
                yield self._result(window.popleft())
        while window:
            yield self._result(window.popleft())

    def _submit(self, fn: Callable[[J], R], job: J) -> Any:
        if fn not in self.remote:
            self.remote[fn] = self.ray.remote(fn).options(num_cpus=1)
        return self.remote[fn].remote(job)

    def _result(self, handle: Any) -> Any:
        ray = self.ray
        try:
            return ray.get(handle)
        except ray.exceptions.RayTaskError as exc:  # the job's own error, as it was raised
            raise exc.cause from None
        except ray.exceptions.RayError as exc:
            lines = str(exc).strip().splitlines()
            raise ExecutorError(f"ray: {lines[-1] if lines else type(exc).__name__}") from None

    def close(self) -> None:
        if self.owned:
            self.ray.shutdown()


def open_pool(
    workers: int = 1,
    *,
    executor: str = "local",
    address: str | None = None,
    working_dir: str | Path | None = None,
) -> Pool:
    """The pool the command-line options name: `executor` local (`workers` processes, 1:
    this one) or ray (the cluster at `address`, shipping `working_dir`)."""
    if executor == "ray":
        root = None if working_dir is None else Path(working_dir).resolve()
        return RayPool(address, root)
    if workers < 1:
        raise ValueError("workers must be at least 1")
    return InlinePool() if workers == 1 else ProcessPool(workers)
