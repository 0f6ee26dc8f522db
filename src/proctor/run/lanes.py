"""Local lanes: each trial played where its agent runs, the harness's loop keeping time,
grading and storing (docs/architecture.md, Verdicts: Isolation).

Handing every trial to the agent's thread and back costs two cross-thread wake-ups, and
on a busy machine each waits for the scheduler: that hand-off was the largest share of a
trial's wall time. So a lane's trials run on the agent's side one after another, the
next ones handed over before the current one ends while its trials are quick (a slow
one gains nothing, and would hold trials another lane could play), and the agent's side
never waits for the harness. Quick trials are handed several ahead (about
`HAND_AHEAD_BELOW_S` of them): each side then plays or grades a run of them while the
other is busy, instead of waking the other once a trial (on one core, each wake-up and
switch of threads costs more CPU than the lane's own work); the harness then finds most
records ready, and lets its loop turn every `HOLD_LOOP_S` all the same. Once it has handed
`depth` ahead, it takes records back until a quarter of them is left (`_refill_at`) before
handing more: the agent's side, idle by then, is woken once for the next run of trials,
not once a record; and a harness that finds its next record not ready waits for the one a
quarter of `depth` on (`_awaited`), so it too is woken once a run (benchmarks/HISTORY.md,
sixth round: a third fewer switches of thread each). A sync agent's
lane is one daemon thread that sets up the world, calls the agent and wraps up; an async
agent's lane is a coroutine on the shared agent loop (proctor.run.threads), which awaits
the agent directly under the trial's timeout (one timer keeps the limits of all the
lane's turns: `TurnLimit`).

The harness still keeps time. Each trial is a `_Slot` that the agent's side or the
harness claims once: past the limit (a sync agent; an async one that blocked its loop or
did not stop within half the grace after its cancellation) the harness claims it,
records a `timeout` from the world as it stands, and leaves that thread or loop to itself;
trials handed to it and not started yet are taken back and handed to a fresh one.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from proctor.agents.agent import agent_callable, is_async_agent
from proctor.env.environment import Environment
from proctor.run.threads import AGENT_LOOP, AGENT_THREADS
from proctor.run.trial import PlayedTrial, TrialRecord, TrialSpec, set_up, wrap_up
from proctor.run.turn import (
    GRACE_S,
    Turn,
    TurnLimit,
    agent_left,
    turn_in_thread,
    turn_on_loop,
    user_over,
)

#: How often a lane looks again at a trial its agent's side has not started yet.
_POLL_S = 0.05
#: A lane hands trials over before taking the current one back only while its trials
#: take less than this (seconds on the agent's side), and keeps about this much of them
#: handed ahead: there the hand-off's wake-up is a share of a trial worth saving. A
#: slower trial gains nothing from it, and a trial handed ahead waits behind the current
#: one while another lane may have none (with fewer trials than twice the lanes, half
#: the lanes would idle).
HAND_AHEAD_BELOW_S = 0.01
#: The most trials a lane hands ahead, however quick: past a few dozen, the wake-ups
#: saved are a small share of a trial.
HAND_AHEAD_MAX = 32
#: The longest a lane holds the harness's loop (seconds) while it finds its records ready.
HOLD_LOOP_S = 0.002


class _Slot:
    """One trial handed to the agent's side; started there at most once, and finished
    (wrapped up) by whichever side claims it first.

    The played trial is left in the slot; the harness's loop is woken only when it is
    waiting for it (`wait`), so a record that is ready when the harness looks costs no
    cross-thread call."""

    __slots__ = (
        "claimed",
        "ended",
        "env",
        "lock",
        "outcome",
        "side",
        "spec",
        "started",
        "waiter",
        "withdrawn",
    )

    def __init__(self, spec: TrialSpec, side: _Side) -> None:
        self.spec, self.side = spec, side
        self.lock = threading.Lock()
        self.started: float | None = None  # time.monotonic() when the agent's turn began
        self.ended: float | None = None  # and when its side settled it
        self.withdrawn = self.claimed = False
        self.env: Environment | None = None
        #: The played trial (or a harness error), once the agent's side has settled it.
        self.outcome: PlayedTrial | BaseException | None = None
        #: The harness's future while it waits for `outcome`.
        self.waiter: asyncio.Future[None] | None = None

    def begin(self, env: Environment) -> bool:
        """On the agent's side: start this trial, unless the harness took it back."""
        with self.lock:
            if self.withdrawn:
                return False
            self.env, self.started = env, time.monotonic()
            return True

    def withdraw(self) -> bool:
        """On the harness's side: take back a trial not started, to hand it elsewhere."""
        with self.lock:
            self.withdrawn = self.started is None
            return self.withdrawn

    def claim(self) -> bool:
        """Finish this trial here; False when the other side has."""
        with self.lock:
            if self.claimed:
                return False
            self.claimed = True
            return True

    def settle(
        self, outcome: PlayedTrial | BaseException, harness: asyncio.AbstractEventLoop
    ) -> None:
        """On the agent's side: leave the outcome here, waking the harness if it waits."""
        with self.lock:
            if self.outcome is not None:
                return
            self.ended = time.monotonic()  # before the outcome: read once it is there
            self.outcome, waiter = outcome, self.waiter
        if waiter is not None:
            with contextlib.suppress(RuntimeError):  # the harness's loop is gone: run over
                harness.call_soon_threadsafe(_wake, waiter)

    async def wait(self, timeout: float | None) -> None:
        """On the harness's side: until the outcome is here, or `timeout` seconds."""
        waiter = asyncio.get_running_loop().create_future()
        with self.lock:
            if self.outcome is not None:
                return
            self.waiter = waiter
        timer = None if timeout is None else waiter.get_loop().call_later(timeout, _wake, waiter)
        try:
            await waiter
        finally:
            self.waiter = None
            if timer is not None:
                timer.cancel()

    def result(self) -> PlayedTrial:
        """The settled outcome: the played trial, or the harness error raised."""
        outcome = self.outcome
        assert outcome is not None, "settled first"
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class _Side(ABC):
    """Where a lane's agent code runs: trials are played there in the order handed."""

    def __init__(self, agent: Any, timeout_s: float | None) -> None:
        self.fn = agent_callable(agent)
        self.timeout_s = timeout_s
        self.harness = asyncio.get_running_loop()

    @abstractmethod
    def hand(self, slot: _Slot) -> None: ...

    @property
    @abstractmethod
    def abandoned(self) -> bool: ...

    @abstractmethod
    def leave(self) -> None:
        """Stop using this side: its agent is stuck (the harness finished its trial)."""

    @abstractmethod
    def close(self) -> None:
        """The lane is done: release the thread or coroutine."""

    def prepared(self, slot: _Slot) -> tuple[Environment, Any] | None:
        """The slot's world and agent input, or None when the harness took it back."""
        env, agent_input = set_up(slot.spec)
        return (env, agent_input) if slot.begin(env) else None

    def finish(self, slot: _Slot, env: Environment, turn: Turn) -> None:
        """Wrap up the trial, if the harness has not claimed it meanwhile."""
        if slot.claim():
            self.settle(slot, wrap_up(slot.spec, env, turn, self.timeout_s))

    def settle(self, slot: _Slot, outcome: PlayedTrial | BaseException) -> None:
        """Hand the played trial (or a harness error) to the harness."""
        slot.settle(outcome, self.harness)


class _ThreadSide(_Side):
    """A sync agent's lane: one daemon thread (proctor.run.threads) that plays in turn."""

    def __init__(self, agent: Any, timeout_s: float | None) -> None:
        super().__init__(agent, timeout_s)
        self.slots: queue.SimpleQueue[_Slot | None] = queue.SimpleQueue()
        self.left = False
        AGENT_THREADS.submit(self.serve)

    def hand(self, slot: _Slot) -> None:
        self.slots.put(slot)

    @property
    def abandoned(self) -> bool:
        return self.left

    def leave(self) -> None:
        self.left = True
        self.slots.put(None)  # should the agent ever return, the thread goes back idle

    def close(self) -> None:
        self.slots.put(None)

    def serve(self) -> None:
        while (slot := self.slots.get()) is not None:
            try:
                ready = self.prepared(slot)
                if ready is not None:
                    env, agent_input = ready
                    self.finish(slot, env, turn_in_thread(self.fn, agent_input, env))
            except Exception as exc:  # a harness error: the run raises it
                self.settle(slot, exc)


class _LoopSide(_Side):
    """An async agent's lane: a coroutine on the agent loop that plays in turn.

    Trials are handed through a queue of their own, and the loop is woken only when the
    lane's coroutine waits for one: a trial handed while it plays costs no wake-up."""

    def __init__(self, agent: Any, timeout_s: float | None) -> None:
        super().__init__(agent, timeout_s)
        self.loop = AGENT_LOOP.get()
        self.lock = threading.Lock()
        self.slots: deque[_Slot | None] = deque()
        #: The lane coroutine's future while it waits for a trial (on the agent loop).
        self.idle: asyncio.Future[None] | None = None
        self.limit = None if timeout_s is None else TurnLimit(timeout_s)
        asyncio.run_coroutine_threadsafe(self.serve(), self.loop)

    def hand(self, slot: _Slot | None) -> None:
        with self.lock:
            self.slots.append(slot)
            idle, self.idle = self.idle, None
        if idle is not None:
            with contextlib.suppress(RuntimeError):  # the loop is gone
                self.loop.call_soon_threadsafe(_wake, idle)

    @property
    def abandoned(self) -> bool:
        return not AGENT_LOOP.serves(self.loop)

    def leave(self) -> None:
        AGENT_LOOP.abandon(self.loop)
        self.close()  # should the loop ever turn again, this lane's coroutine ends

    def close(self) -> None:
        self.hand(None)

    async def next_slot(self) -> _Slot | None:
        """The next trial handed (None: the lane is over), waiting while there is none."""
        while True:
            with self.lock:
                if self.slots:
                    return self.slots.popleft()
                idle = self.idle = self.loop.create_future()
            await idle

    async def serve(self) -> None:
        try:
            while (slot := await self.next_slot()) is not None:
                try:
                    ready = self.prepared(slot)
                    if ready is not None:
                        env, agent_input = ready
                        turn = await turn_on_loop(self.fn, agent_input, env, self.limit)
                        self.finish(slot, env, turn)
                except Exception as exc:  # a harness error: the run raises it
                    self.settle(slot, exc)
        finally:
            if self.limit is not None:
                self.limit.close()


class LocalLane:
    """Drives one lane: hands its trials to the agent's side (some ahead while they are
    quick, `HAND_AHEAD_BELOW_S`), and takes each record back in order, keeping time on
    the harness's loop."""

    def __init__(self, agent: Any, timeout_s: float | None) -> None:
        self.agent = agent
        self.timeout_s = timeout_s
        self.kind: type[_Side] = _LoopSide if is_async_agent(agent) else _ThreadSide
        self.side: _Side | None = None
        #: Trials handed and not taken back yet, in the order they were handed.
        self.ahead: deque[_Slot] = deque()
        #: How many trials to hand beyond the one played: none before a first trial (so
        #: that every lane draws one before any draws two) nor after a slow one; after
        #: each quick one, twice as many (one at first, so that a slow trial after a
        #: quick one holds back one trial as it did), up to HAND_AHEAD_BELOW_S of
        #: trials as long as the last one.
        self.depth = 0
        #: When this lane next lets the harness's loop turn (time.monotonic).
        self.hold_until = 0.0

    async def drive(
        self, specs: Iterator[TrialSpec], put: Callable[[TrialRecord], Awaitable[None]]
    ) -> None:
        """Play `specs` one at a time, handing each record to `put`."""
        try:
            for spec in specs:
                self.ahead.append(self._hand(spec))
                if len(self.ahead) > self.depth:
                    while len(self.ahead) > _refill_at(self.depth):
                        await self._take(put)
            while self.ahead:
                await self._take(put)
        finally:
            for slot in self.ahead:
                slot.withdraw()
            if self.side is not None:
                self.side.close()

    async def _take(self, put: Callable[[TrialRecord], Awaitable[None]]) -> None:
        """Hand the first trial's record to `put`; then let the harness's loop turn if this
        lane has held it for `HOLD_LOOP_S`. A record found ready needs no wait, and with
        trials handed ahead most are: a lane that never waits would hold the loop, and a
        cancelled run (Ctrl-C), the group commit's timer and the other lanes wait for it."""
        await put(await self._finish())
        now = time.monotonic()
        if now >= self.hold_until:
            self.hold_until = now + HOLD_LOOP_S
            await asyncio.sleep(0)

    def _current(self) -> _Side:
        """The side trials are handed to; a fresh one when the last was left, the trials
        not started on the one left handed to it again, in their order."""
        side = self.side
        if side is None or side.abandoned:
            if side is not None:
                side.close()
            side = self.side = self.kind(self.agent, self.timeout_s)
        for i, slot in enumerate(self.ahead):
            if slot.side is not side and slot.side.abandoned and slot.withdraw():
                self.ahead[i] = self._slot(slot.spec, side)
        return side

    def _hand(self, spec: TrialSpec) -> _Slot:
        return self._slot(spec, self._current())

    @staticmethod
    def _slot(spec: TrialSpec, side: _Side) -> _Slot:
        slot = _Slot(spec, side)
        side.hand(slot)
        return slot

    async def _finish(self) -> TrialRecord:
        """The first trial's record, graded here (so that grading never delays the agents
        on their loop): played on the agent's side, or the harness's `timeout`."""
        played = await self._played()
        slot = self.ahead.popleft()
        took = None if slot.started is None or slot.ended is None else slot.ended - slot.started
        self.depth = _depth(self.depth, took)
        return played.graded()

    async def _played(self) -> PlayedTrial:
        while True:
            slot = self.ahead[0]
            if slot.outcome is not None:
                return slot.result()
            awaited = self._awaited()
            if self.timeout_s is None:
                await awaited.wait(None)
                continue
            started = slot.started
            if started is None:
                if slot.side.abandoned:  # stuck behind a lost trial: hand it elsewhere
                    self._current()
                if self.ahead[0] is slot:
                    await slot.wait(_POLL_S)
                continue
            # an async agent's side cancels it at the limit and ends it within half the
            # grace: the harness steps in a little later, when that loop is not turning
            late = 0.0 if isinstance(slot.side, _ThreadSide) else 0.75 * GRACE_S
            assert slot.env is not None  # set when it started
            left = late + agent_left(slot.env.user, started, self.timeout_s, time.monotonic())
            if left > 0:
                await awaited.wait(left)  # woken at the first one's limit all the same
            elif slot.claim():
                return self._timed_out(slot, started)
            else:
                await slot.wait(None)  # the agent's side is wrapping it up

    def _awaited(self) -> _Slot:
        """The record to wait for when the first is not ready: the one a quarter of `depth`
        on (`_refill_at`). The agent's side plays a lane's trials in order, so the records
        before it are ready with it: a harness quicker than its agents is woken once for a
        run of records, not once a record."""
        return self.ahead[min(len(self.ahead), _refill_at(self.depth) or 1) - 1]

    def _timed_out(self, slot: _Slot, started: float) -> PlayedTrial:
        """The harness's record of a trial whose agent's side did not end it in time (or
        whose model user ran past its bound: the user's fault)."""
        slot.side.leave()
        env = slot.env
        assert env is not None  # set when it started
        now = time.monotonic()
        waited = env.user.waited(now)
        wall = max(0.0, now - started - waited)
        deadline = started + waited + (self.timeout_s or 0.0) + GRACE_S
        turn = Turn(
            timed_out=True,
            user_timed_out=user_over(env.user, self.timeout_s, now),
            wall_s=wall,
            deadline=max(now, deadline),
        )
        return wrap_up(slot.spec, env, turn, self.timeout_s)


def _refill_at(depth: int) -> int:
    """How many trials a lane that handed `depth` ahead leaves handed as it takes records
    back, before it hands more: a quarter of them, at least one (a lane of trials just
    quick enough to hand one ahead keeps one ahead), none after a slow trial."""
    return max(1, depth // 4) if depth else 0


def _depth(depth: int, took: float | None) -> int:
    """`LocalLane.depth` after a trial that took `took` seconds on the agent's side (None:
    the harness ended it)."""
    if took is None or took >= HAND_AHEAD_BELOW_S:
        return 0
    fits = int(HAND_AHEAD_BELOW_S / took) if took > 0 else HAND_AHEAD_MAX
    return max(1, min(2 * depth or 1, fits, HAND_AHEAD_MAX))
