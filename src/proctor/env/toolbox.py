"""The Toolbox: the agent's face of the ToolGateway (async, with a sync twin).

Both share ToolboxBase (the tools offered, and what an agent records in the trace); only
calling a tool, asking the user and waiting differ, as coroutines or plain calls.

A toolbox is a facade with no attribute at all: the trial's Environment (gateway, state,
ledger, trace) is found in a table private to this module, so `vars(toolbox)` or a
`toolbox._env...` path leads nowhere. Everything an agent passes in is checked first
(proctor.env.protocol), and every operation holds the environment's lock, so an agent
calling from several threads at once gets calls that take turns.
"""

from __future__ import annotations

import asyncio
import math
from functools import partial
from typing import Any
from weakref import WeakKeyDictionary, ref

from proctor.core.daemon_threads import DaemonThreads
from proctor.core.trace import STOPPED_KEY
from proctor.env import protocol
from proctor.env.environment import Environment
from proctor.env.gateway import ToolResult

#: Each live toolbox's environment, by the toolbox's id, beside a weak reference to the
#: toolbox whose callback drops the entry when the toolbox goes (before its id can be
#: another's). A plain dict: a toolbox looks its world up on every operation.
_WORLDS: dict[int, tuple[Environment, ref[ToolboxBase]]] = {}


def _forget(key: int, _: object) -> None:
    _WORLDS.pop(key, None)


def _world(toolbox: ToolboxBase) -> Environment:
    """The environment `toolbox` acts on (a function, not an attribute an agent finds)."""
    return _WORLDS[id(toolbox)][0]


#: Where async agents' questions to a model user wait for their answers, one at a time
#: for each toolbox.
_ASKING = DaemonThreads("proctor-user")
_TURNS: WeakKeyDictionary[Toolbox, asyncio.Lock] = WeakKeyDictionary()


class ToolboxBase:
    """What both toolboxes offer. The agent never touches the state itself."""

    __slots__ = ("__weakref__",)

    def __init__(self, env: Environment) -> None:
        key = id(self)
        _WORLDS[key] = (env, ref(self, partial(_forget, key)))

    @property
    def tools(self) -> list[dict[str, Any]]:
        return _world(self).gateway.schemas()

    def _call(self, name: Any, args: Any) -> ToolResult:
        env = _WORLDS[id(self)][0]  # _world's lookup, written out: once a call
        try:
            name, args = protocol.tool_call(name, args)
        except protocol.ProtocolError as exc:
            with env.lock:
                raise env.violated(exc) from None
        with env.lock:
            return env.gateway.call(name, args, owned=True)  # protocol's copy

    def _ask(self, text: Any) -> str:
        question = protocol.text(str(text), "question")  # in the agent's thread
        env = _world(self)
        with env.lock:
            return env.user.reply(question)

    def _wait(self, seconds: Any) -> None:
        env = _world(self)
        try:
            seconds = float(seconds)  # in the agent's thread: its __float__ runs there
        except (TypeError, ValueError, OverflowError):
            seconds = math.nan
        with env.lock:
            if math.isnan(seconds):
                raise env.violated(protocol.ProtocolError("wait: not a number of seconds"))
            seconds = min(max(0.0, seconds), 1e9)
            env.recorder.clock.advance(seconds)
            env.recorder.emit("note", {"wait_s": seconds})

    def record_model_call(
        self,
        *,
        model: str = "",
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        cost_usd: float | None = None,
        latency_s: float | None = None,
        **extra: Any,
    ) -> None:
        """Record one model call (tokens, cost, latency) in the trace; advances the clock.

        A figure left out is "not measured", not zero. `simulated=True` marks a call
        nobody made (a scripted agent's): its latency counts as simulated time.
        """
        env = _WORLDS[id(self)][0]  # _world's lookup, written out: once a model call
        try:
            record = protocol.model_call(
                model, input_tokens, output_tokens, cost_usd, latency_s, extra
            )
        except protocol.ProtocolError as exc:
            with env.lock:
                raise env.violated(exc) from None
        with env.lock:
            if record["latency_s"]:
                simulated = record.get("simulated") is True
                env.recorder.clock.advance(record["latency_s"], simulated=simulated)
            env.recorder.emit("model_call", record)

    def message(self, role: str, content: str) -> None:
        self._emit("message", {"role": role, "content": content})

    def note(self, text: str) -> None:
        self._emit("note", {"text": text})

    def stopped(self, limit: str, text: str) -> None:
        """Record that the agent stopped on `limit` (`max_steps_reached`) without an
        answer: the trial fails with a check of that name (proctor.grade.answer)."""
        self._emit("note", {"text": text, STOPPED_KEY: limit})

    def _emit(self, kind: Any, data: dict[str, Any]) -> None:
        """Record free text; `str()` of what the agent passed runs in its own thread."""
        texts = {key: protocol.text(str(value), key) for key, value in data.items()}
        env = _world(self)
        with env.lock:
            env.recorder.emit(kind, texts)


class SyncToolbox(ToolboxBase):
    """What a synchronous agent calls."""

    __slots__ = ()

    def call(self, name: str, args: dict[str, Any] | None = None) -> ToolResult:
        return self._call(name, args)

    def ask_user(self, text: str) -> str:
        return self._ask(text)

    def wait(self, seconds: float) -> None:
        """Let simulated time pass (e.g. honouring a 429's retry-after); recorded as a note."""
        self._wait(seconds)


class Toolbox(ToolboxBase):
    """What an asynchronous agent awaits; same recording, same gateway."""

    __slots__ = ()

    async def call(self, name: str, args: dict[str, Any] | None = None) -> ToolResult:
        return self._call(name, args)

    async def ask_user(self, text: str) -> str:
        """A model user is asked off the event loop, which runs other trials meanwhile:
        its clock starts now, and the question gets a thread at once, never a place in a
        queue behind other trials' questions (proctor.core.daemon_threads). A trial's
        questions take turns here, so it holds one thread however many it asks at once."""
        user = _world(self).user
        if not user.remote:
            return self._ask(text)
        with user.asked():
            async with _TURNS.setdefault(self, asyncio.Lock()):
                return await asyncio.wrap_future(_ASKING.call(lambda: self._ask(text)))

    async def wait(self, seconds: float) -> None:
        """Let simulated time pass (e.g. honouring a 429's retry-after); recorded as a note."""
        self._wait(seconds)
