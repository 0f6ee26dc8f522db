"""The agent's turn: its code run where it cannot stop the harness, under the trial's limit.

Sync agents run on daemon threads, async agents on an event loop of their own
(proctor.run.threads); the harness's loop only waits for the turn to end, so a timeout
fires whatever the agent does. At the limit an async agent is cancelled and gets
`GRACE_S` to stop; one that swallows the cancellation, blocks its loop or never returns
from a thread is abandoned: the trial ends within the grace and is a `timeout`, and the
run goes on. A loop an agent blocked is replaced for later trials.

Whatever the agent raised (an exception, `SystemExit`, a `CancelledError` of its own) is
described in the agent's own thread, so that no method of its objects (a `__str__` that
hangs) runs in the harness's; the harness keeps only the class and plain text.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

from proctor.agents.agent import AgentInput, agent_callable, is_async_agent
from proctor.core.results import shown
from proctor.env.environment import Environment
from proctor.env.toolbox import SyncToolbox, Toolbox
from proctor.env.user import SimulatedUser
from proctor.run.threads import AGENT_LOOP, AGENT_THREADS

#: Seconds a trial may run past its timeout while the agent is cancelled and its world
#: closed. An agent still running then is abandoned.
GRACE_S = 0.5


@dataclass(frozen=True, slots=True)
class Raised:
    """What an agent raised, described in its own thread."""

    kind: type[BaseException]
    text: str
    frames: list[str] = field(default_factory=list)
    #: `SystemExit.code` as plain data (an int, a string, or None).
    exit_code: Any = None


@dataclass(slots=True)
class Turn:
    value: Any = None
    raised: Raised | None = None
    timed_out: bool = False
    #: Past the limit because the model user ran past its own bound, not the agent.
    user_timed_out: bool = False
    #: The turn's wall time less the time it waited on a model user: the agent's own.
    wall_s: float = 0.0
    #: The latest moment (time.monotonic) the trial may still use to close its world.
    deadline: float | None = None


def describe(exc: BaseException) -> Raised:
    """`exc` as plain text; a failing `__str__` does not stop that."""
    try:
        text = f"{type(exc).__name__}: {exc}"
    except Exception:
        text = f"{type(exc).__name__}: <unprintable>"
    try:
        frames = last_frames(exc)
    except Exception:
        frames = []
    code = getattr(exc, "code", None) if isinstance(exc, SystemExit) else None
    if code is not None and type(code) not in (int, str):
        code = shown(code)
    return Raised(type(exc), text, [str(line) for line in frames], code)


def last_frames(exc: BaseException, count: int = 3) -> list[str]:
    """The last frames of `exc`'s traceback, as `traceback` prints them but without the
    `^^^` markers: Python 3.11 finds those with `ast.parse`, whose state is shared by all
    threads, so an agent's thread formatting a traceback while another thread parses can
    make either fail (CPython gh-106905, fixed in 3.11.8)."""
    lines = [
        f'  File "{frame.filename}", line {frame.lineno}, in {frame.name}\n'
        + (f"    {frame.line}\n" if frame.line else "")
        for frame in traceback.extract_tb(exc.__traceback__)[-count:]
    ]
    return ["Traceback (most recent call last):\n", *lines, f"{type(exc).__name__}: {exc}\n"]


async def take_turn(
    agent: Any, agent_input: AgentInput, env: Environment, timeout_s: float | None
) -> Turn:
    """Run the agent on `env` until it returns, raises, or runs past `timeout_s` of its
    own time. Time spent waiting on a model user is not the agent's: it moves the limit,
    up to a bound of the user's own as long as the agent's (docs/architecture.md,
    Simulated users); a user past that bound ends the turn as the user's fault."""
    fn = agent_callable(agent)
    harness = asyncio.get_running_loop()
    ended: asyncio.Future[Turn] = harness.create_future()

    def settle(turn: Turn) -> None:
        if not ended.done():
            ended.set_result(turn)

    def hand_over(turn: Turn) -> None:
        with contextlib.suppress(RuntimeError):  # the harness's loop is gone: run over
            harness.call_soon_threadsafe(settle, turn)

    started = time.perf_counter()
    cancel = None
    loop = None
    if is_async_agent(agent):
        loop = AGENT_LOOP.get()
        cancel = _start_async(loop, fn, agent_input, Toolbox(env), hand_over)
    else:
        AGENT_THREADS.submit(lambda: hand_over(_run_sync(fn, agent_input, SyncToolbox(env))))
    user = env.user
    over = await agent_time(ended, user, time.monotonic(), timeout_s)
    if ended.done():
        return _ended(ended.result(), started, user)
    overrun = _overrun(started, user, over)
    if loop is not None and cancel is not None:
        alive = _ping(loop, harness)
        loop.call_soon_threadsafe(cancel)
        waits: set[asyncio.Future[Any]] = {ended, alive}
        await asyncio.wait(waits, timeout=GRACE_S / 2, return_when=asyncio.ALL_COMPLETED)
        if not alive.done():  # the agent blocked its loop: later trials get another
            AGENT_LOOP.abandon(loop)
    return overrun


def _ended(turn: Turn, started: float, user: SimulatedUser) -> Turn:
    """A turn the agent ended: its own wall time (less what it waited on a model user),
    and the grace it has to close its world."""
    turn.wall_s = time.perf_counter() - started - user.waited(time.monotonic())
    turn.deadline = time.monotonic() + GRACE_S
    return turn


def _overrun(started: float, user: SimulatedUser, users_fault: bool) -> Turn:
    """A turn past its limit, timed as the limit passes (before any grace is waited)."""
    wall = time.perf_counter() - started - user.waited(time.monotonic())
    deadline = time.monotonic() + GRACE_S
    return Turn(timed_out=True, user_timed_out=users_fault, wall_s=wall, deadline=deadline)


def agent_left(user: SimulatedUser, began: float, timeout_s: float, now: float) -> float:
    """Seconds the agent has left of its `timeout_s` from `began` at `now` (negative: how
    long ago it ran out). Time spent waiting on a model user is not the agent's: it moves
    the limit, up to the user's own bound (as long as the agent's, `timeout_s`)."""
    waited = user.waited(now)
    left = began + timeout_s + waited - now
    # the user's bound cannot run out sooner than what it has left of it
    return min(left, timeout_s - waited) if user.remote else left


def user_over(user: SimulatedUser, timeout_s: float | None, now: float) -> bool:
    """Whether the model user has run past its bound: the user's fault, not the agent's."""
    return timeout_s is not None and user.waited(now) >= timeout_s


async def agent_time(
    ended: asyncio.Future[Any], user: SimulatedUser, began: float, timeout_s: float | None
) -> bool:
    """Wait for `ended` while the agent has time left (`agent_left`); whether the model
    user ran past its bound."""
    while not ended.done():
        wait = None if timeout_s is None else agent_left(user, began, timeout_s, time.monotonic())
        if wait is not None and wait <= 0.0:
            break
        await asyncio.wait({ended}, timeout=wait)
    return user_over(user, timeout_s, time.monotonic())


def turn_in_thread(fn: Any, agent_input: AgentInput, env: Environment) -> Turn:
    """A sync agent's turn, called in this (the agent's) thread: no limit here, the
    harness keeps time (proctor.run.lanes)."""
    started = time.perf_counter()
    return _ended(_run_sync(fn, agent_input, SyncToolbox(env)), started, env.user)


async def turn_on_loop(
    fn: Any, agent_input: AgentInput, env: Environment, limit: TurnLimit | None
) -> Turn:
    """An async agent's turn, run on the agent loop (this one) under its lane's `limit`
    (None: no limit): at the limit it is cancelled and gets half the grace to stop. A loop
    the agent blocks runs nothing more, so the harness keeps time from its own loop as
    well (proctor.run.lanes).

    The agent's task hands its turn to `ended` as it ends, and the limit hands None: this
    coroutine wakes once, without an `asyncio.wait` per turn."""
    started, user, loop = time.perf_counter(), env.user, asyncio.get_running_loop()
    ended: asyncio.Future[Turn | None] = loop.create_future()
    task = loop.create_task(_guarded(fn, agent_input, Toolbox(env), ended))
    if limit is not None:
        limit.watch(ended, user)
    try:
        turn = await ended
    finally:
        if limit is not None:
            limit.unwatch()
    if turn is not None:
        return _ended(turn, started, user)
    assert limit is not None  # only the limit hands None
    overrun = _overrun(started, user, user_over(user, limit.timeout_s, time.monotonic()))
    task.cancel()
    await asyncio.wait({task}, timeout=GRACE_S / 2)  # one that swallows it is left running
    return overrun


class TurnLimit:
    """The agent's time limit on its loop, for a lane's turns one at a time (`agent_left`:
    time waited on a model user moves it): past it, the turn's `ended` gets None.

    One timer serves all the lane's turns: set for the limit of the turn that was being
    watched, it fires no later than a later turn's limit (that one began after the
    earlier one had ended, waits included), finds that turn, and is set again for it. So
    quick turns set no timer of their own: one fires about once per `timeout_s`."""

    __slots__ = ("began", "ended", "timeout_s", "timer", "user")

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.ended: asyncio.Future[Turn | None] | None = None
        self.user: SimulatedUser | None = None
        self.began = 0.0
        self.timer: asyncio.TimerHandle | None = None

    def watch(self, ended: asyncio.Future[Turn | None], user: SimulatedUser) -> None:
        """Keep the limit of the turn that begins now (on the agent loop)."""
        self.ended, self.user, self.began = ended, user, time.monotonic()
        if self.timer is None:
            self._check()

    def unwatch(self) -> None:
        """The turn ended: the timer, when it fires, finds none."""
        self.ended = self.user = None

    def close(self) -> None:
        """The lane is over (on the agent loop): its timer goes."""
        self.unwatch()
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _check(self) -> None:
        self.timer = None
        ended, user = self.ended, self.user
        if ended is None or user is None or ended.done():
            return
        left = agent_left(user, self.began, self.timeout_s, time.monotonic())
        if left > 0:
            self.timer = ended.get_loop().call_later(left, self._check)
        else:
            ended.set_result(None)


def _run_sync(fn: Any, agent_input: AgentInput, toolbox: SyncToolbox) -> Turn:
    try:
        return Turn(value=fn(agent_input, toolbox))
    except BaseException as exc:  # judged by the harness
        return Turn(raised=describe(exc))


async def _guarded(
    fn: Any,
    agent_input: AgentInput,
    toolbox: Toolbox,
    ended: asyncio.Future[Turn | None] | None = None,
) -> Turn:
    """The agent's coroutine, whatever it raises, as a Turn; handed to `ended` as well
    (in the agent task's own step: the coroutine awaiting it wakes next)."""
    try:
        turn = Turn(value=await fn(agent_input, toolbox))
    except BaseException as exc:  # judged by the harness
        turn = Turn(raised=describe(exc))
    if ended is not None and not ended.done():
        ended.set_result(turn)
    return turn


def _start_async(
    loop: asyncio.AbstractEventLoop,
    fn: Any,
    agent_input: AgentInput,
    toolbox: Toolbox,
    hand_over: Any,
) -> Any:
    """Start the agent's coroutine on `loop`; returns what cancels it (call it on `loop`)."""
    task: list[asyncio.Task[Turn]] = []
    cancelled = False

    def start() -> None:
        if cancelled:
            return
        task.append(loop.create_task(_guarded(fn, agent_input, toolbox)))
        task[0].add_done_callback(
            lambda t: hand_over(t.result() if not t.cancelled() else Turn(timed_out=True))
        )

    def cancel() -> None:
        nonlocal cancelled
        cancelled = True
        if task:
            task[0].cancel()

    loop.call_soon_threadsafe(start)
    return cancel


def _ping(
    loop: asyncio.AbstractEventLoop, harness: asyncio.AbstractEventLoop
) -> asyncio.Future[None]:
    """A future the agent loop settles as soon as it runs a callback: is it still turning?"""
    answered: asyncio.Future[None] = harness.create_future()

    def back() -> None:
        if not answered.done():
            answered.set_result(None)

    def pong() -> None:
        with contextlib.suppress(RuntimeError):
            harness.call_soon_threadsafe(back)

    loop.call_soon_threadsafe(pong)
    return answered
