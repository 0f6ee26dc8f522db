"""Executors: where trials run. The Runner hands them specs and takes records back.

An executor opens a number of lanes; a lane runs one trial at a time and takes the next
spec when it is done. Specs are drawn lazily from one iterator, so a 100,000-trial run
never holds 100,000 pending tasks, and records come back through a queue no longer than
the number of lanes. Records stream to the Runner, which alone writes the store.

A lane in this process hands back a played trial and starts its next one; the trial is
graded here, between the lanes' steps, so grading overlaps the agents' waits instead of
delaying their next trials.

`local` runs trials on this process's event loop (sync agents on daemon threads);
`process` (proctor.run.process) and `ray` (proctor.run.ray_executor) run them in worker
processes, which rebuild the suite and the agent from a TrialSource.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from proctor.run.trial import PlayedTrial, TrialRecord, TrialSpec, play_trial

if TYPE_CHECKING:
    from proctor.run.source import TrialSource


@dataclass(frozen=True, slots=True)
class RunContext:
    """What every lane of a run shares."""

    agent: Any
    timeout_s: float | None
    concurrency: int
    source: TrialSource | None = None


class Lane(ABC):
    """One trial at a time."""

    @abstractmethod
    async def run(self, spec: TrialSpec) -> TrialRecord | PlayedTrial:
        """The trial's record, or (in this process) the played trial, graded later."""

    @abstractmethod
    def close(self) -> None:
        """Release what the lane holds (a worker process)."""


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
    """Trials on this process's event loop, at most `concurrency` at once."""

    name = "local"

    async def open(self, ctx: RunContext) -> int:
        self._ctx = ctx
        return ctx.concurrency

    def lane(self) -> Lane:
        return _LocalLane(self._ctx)

    async def close(self) -> None:
        """Nothing to release: the lanes were coroutines."""


class _LocalLane(Lane):
    def __init__(self, ctx: RunContext) -> None:
        self._ctx = ctx

    async def run(self, spec: TrialSpec) -> TrialRecord | PlayedTrial:
        return await play_trial(spec, self._ctx.agent, self._ctx.timeout_s)

    def close(self) -> None:
        """Nothing held between trials."""


class _LaneDone:
    pass


@dataclass(frozen=True, slots=True)
class _LaneFailed:
    error: BaseException


async def stream(
    executor: Executor, ctx: RunContext, specs: Iterable[TrialSpec]
) -> AsyncGenerator[TrialRecord, None]:
    """Records of `specs` in the order they finish. Close it (`contextlib.aclosing`)."""
    lanes = await executor.open(ctx)
    queue: asyncio.Queue[TrialRecord | PlayedTrial | _LaneDone | _LaneFailed] = asyncio.Queue(lanes)
    pending = iter(specs)

    async def drive(lane: Lane) -> None:
        try:
            for spec in pending:
                await queue.put(await lane.run(spec))
        except Exception as exc:  # a harness bug: handed to the consumer, which raises it
            await queue.put(_LaneFailed(exc))
        finally:
            lane.close()
        await queue.put(_LaneDone())

    drivers = [asyncio.ensure_future(drive(executor.lane())) for _ in range(lanes)]
    try:
        done = 0
        while done < lanes:
            item = await queue.get()
            if isinstance(item, _LaneDone):
                done += 1
            elif isinstance(item, _LaneFailed):
                raise item.error
            else:
                yield item.graded() if isinstance(item, PlayedTrial) else item
                await asyncio.sleep(0)  # let trials whose waits ended start before the next
    finally:
        for driver in drivers:
            driver.cancel()
        await asyncio.gather(*drivers, return_exceptions=True)
        await executor.close()
