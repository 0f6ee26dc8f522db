"""Executors: where trials run. The Runner hands them specs and takes records back.

An executor opens a number of lanes; a lane runs one trial at a time and takes the next
spec when it is done. Specs are drawn lazily from one iterator, so a 100,000-trial run
never holds 100,000 pending tasks, and each lane hands its records to the Runner's `put`
itself, on the harness's loop, where the Runner alone writes the store.

A local lane plays its trials where the agent runs, quick ones handed several ahead, so
that the agent's side never waits for the harness; grading happens here, between the
lanes' steps (proctor.run.lanes).

`local` runs trials in this process (sync agents on daemon threads, async ones on an
event loop of their own);
`process` (proctor.run.process) and `ray` (proctor.run.ray_executor) run them in worker
processes, which rebuild the suite and the agent from a TrialSource.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from proctor.run.lanes import LocalLane
from proctor.run.trial import TrialRecord, TrialSpec

if TYPE_CHECKING:
    from proctor.run.worker_source import TrialSource


@dataclass(frozen=True, slots=True)
class RunContext:
    """What every lane of a run shares."""

    agent: Any
    timeout_s: float | None
    concurrency: int
    source: TrialSource | None = None


class Lane(ABC):
    """Runs trials from the run's shared iterator of specs until it is empty."""

    @abstractmethod
    async def drive(
        self, specs: Iterator[TrialSpec], put: Callable[[TrialRecord], Awaitable[None]]
    ) -> None:
        """Run `specs` (shared by every lane) one at a time, handing each record to `put`."""

    @abstractmethod
    def close(self) -> None:
        """Release what the lane holds (a worker process)."""


class SerialLane(Lane):
    """A lane that waits for each trial's record before it takes the next spec."""

    @abstractmethod
    async def run(self, spec: TrialSpec) -> TrialRecord:
        """The trial's record."""

    async def drive(
        self, specs: Iterator[TrialSpec], put: Callable[[TrialRecord], Awaitable[None]]
    ) -> None:
        for spec in specs:
            await put(await self.run(spec))


class Executor(ABC):
    name: ClassVar[str]
    #: Runs trials in other processes, which rebuild the suite and agent from a TrialSource.
    needs_source: ClassVar[bool] = False

    def worker_source(self, source: TrialSource) -> TrialSource:
        """The source as this executor's workers will read it; an ExecutorError (before
        the run is created) when they could not."""
        return source

    @abstractmethod
    async def open(self, ctx: RunContext) -> int:
        """Prepare for a run; returns how many lanes to drive."""

    @abstractmethod
    def lane(self) -> Lane: ...

    @abstractmethod
    async def close(self) -> None:
        """Undo `open`; called however the run ends."""


class LocalExecutor(Executor):
    """Trials in this process, at most `concurrency` at once."""

    name = "local"

    async def open(self, ctx: RunContext) -> int:
        self._ctx = ctx
        return ctx.concurrency

    def lane(self) -> Lane:
        return _LocalLane(self._ctx)

    async def close(self) -> None:
        """Nothing to release: each lane released its agent's side."""


class _LocalLane(Lane):
    def __init__(self, ctx: RunContext) -> None:
        self._lane = LocalLane(ctx.agent, ctx.timeout_s)

    async def drive(
        self, specs: Iterator[TrialSpec], put: Callable[[TrialRecord], Awaitable[None]]
    ) -> None:
        await self._lane.drive(specs, put)

    def close(self) -> None:
        """The agent's side was released when `drive` ended."""


async def drive_lanes(
    executor: Executor,
    ctx: RunContext,
    specs: Iterable[TrialSpec],
    put: Callable[[TrialRecord], Awaitable[None]],
) -> None:
    """Play `specs` on the executor's lanes, each record handed to `put` as its trial
    finishes, by the lane that played it: no queue between lanes and `put`, whose own
    waits (a judge's slot) hold the lane back. The first failure (a harness bug, the
    store's `put`) cancels the other lanes and is raised."""
    lanes = await executor.open(ctx)
    pending = iter(specs)

    async def drive(lane: Lane) -> None:
        try:
            await lane.drive(pending, put)
        finally:
            lane.close()

    drivers = [asyncio.ensure_future(drive(executor.lane())) for _ in range(lanes)]
    try:
        done, _ = await asyncio.wait(drivers, return_when=asyncio.FIRST_EXCEPTION)
        for driver in done:
            error = driver.exception()
            if error is not None:
                raise error
    finally:
        for driver in drivers:
            driver.cancel()
        await asyncio.gather(*drivers, return_exceptions=True)
        await executor.close()
