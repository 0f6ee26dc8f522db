"""Grading spread over worker processes or a Ray cluster, its results handed back in order.

Regrading a run and grading imported traces are CPU-bound and independent per trial. The
work is cut into jobs (a share of a run's trials, a batch of sessions); each job runs in
a worker, and the results come back in job order, so the parent, which alone writes the
store, writes them as one process would: the same rows and the same summary whatever the
number of workers. At most two jobs per worker are in flight, so memory stays bounded.

`InlinePool` runs the jobs here, one at a time; `ProcessPool` in N worker processes, the
same workers as `--isolation process` (run/process.py); `RayPool` as Ray tasks of one CPU
each on the cluster it connects to. Ray workers may be on other machines: they cannot open files at
this machine's paths, so jobs for them carry what they read (`Pool.local` is False).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from proctor.run.process import GRADING_PRELOAD, Worker, WorkerLost, worker_context
from proctor.run.worker_source import ExecutorError, SuiteSource

J = TypeVar("J")
R = TypeVar("R")


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

    def map(self, fn: Callable[[J], R], jobs: Iterable[J]) -> Iterator[R]:
        window: deque[Any] = deque()
        for job in jobs:
            window.append(self.submit(fn, job))
            if len(window) >= 2 * self.workers:
                yield self.result(window.popleft())
        while window:
            yield self.result(window.popleft())

    @abstractmethod
    def submit(self, fn: Callable[[J], R], job: J) -> Any:
        """Start `fn(job)`; returns a handle for `result`."""

    @abstractmethod
    def result(self, handle: Any) -> Any: ...

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

    def submit(self, fn: Callable[[J], R], job: J) -> Any:
        return fn(job)

    def result(self, handle: Any) -> Any:
        return handle

    def close(self) -> None:
        """No workers to release."""


class ProcessPool(Pool):
    """N worker processes (run/process.py), jobs dealt to them in turn: each worker runs
    its jobs in order, so results come back in job order."""

    #: What grading jobs run: regrade's shares and imported sessions' batches.
    PRELOAD = ("proctor.run.regrade", "proctor.traces.grading", *GRADING_PRELOAD)

    def __init__(self, workers: int) -> None:
        self.workers = workers
        mp = worker_context(self.PRELOAD)
        self.procs = [Worker(mp) for _ in range(workers)]
        self.turn = 0
        try:
            for worker in self.procs:
                worker.ready()
        except ExecutorError:
            self.close()
            raise

    def submit(self, fn: Callable[[J], R], job: J) -> Worker:
        worker = self.procs[self.turn % self.workers]
        self.turn += 1
        worker.send(fn, job)
        return worker

    def result(self, handle: Worker) -> Any:
        try:
            return handle.result()
        except WorkerLost:
            raise ExecutorError("a grading worker process died (killed? out of memory?)") from None

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

    def submit(self, fn: Callable[[J], R], job: J) -> Any:
        if fn not in self.remote:
            self.remote[fn] = self.ray.remote(fn).options(num_cpus=1)
        return self.remote[fn].remote(job)

    def result(self, handle: Any) -> Any:
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
