"""The Toolbox: the agent's face of the ToolGateway (async, with a sync twin).

Both share ToolboxBase (the tools offered, and what an agent records in the trace); only
calling a tool, asking the user and waiting differ, as coroutines or plain calls.
"""

from __future__ import annotations

from typing import Any

from proctor.env.environment import Environment
from proctor.env.gateway import ToolResult


class ToolboxBase:
    """What both toolboxes offer. The agent never touches the state itself."""

    def __init__(self, env: Environment) -> None:
        self._env = env

    @property
    def tools(self) -> list[dict[str, Any]]:
        return self._env.gateway.schemas()

    def _call(self, name: str, args: dict[str, Any] | None) -> ToolResult:
        return self._env.gateway.call(name, {} if args is None else args)

    def _wait(self, seconds: float) -> None:
        seconds = max(0.0, float(seconds))
        self._env.recorder.clock.advance(seconds)
        self._env.recorder.emit("note", {"wait_s": seconds})

    def record_model_call(
        self,
        *,
        model: str = "",
        input_tokens: int = 0,
        output_tokens: int = 0,
        cost_usd: float = 0.0,
        latency_s: float = 0.0,
        **extra: Any,
    ) -> None:
        """Record one model call (tokens, cost, latency) in the trace; advances the clock."""
        self._env.recorder.clock.advance(latency_s)
        self._env.recorder.emit(
            "model_call",
            {
                "model": model,
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "cost_usd": cost_usd,
                "latency_s": latency_s,
                **extra,
            },
        )

    def message(self, role: str, content: str) -> None:
        self._env.recorder.emit("message", {"role": role, "content": str(content)})

    def note(self, text: str) -> None:
        self._env.recorder.emit("note", {"text": str(text)})


class SyncToolbox(ToolboxBase):
    """What a synchronous agent calls."""

    def call(self, name: str, args: dict[str, Any] | None = None) -> ToolResult:
        return self._call(name, args)

    def ask_user(self, text: str) -> str:
        return self._env.user.reply(text)

    def wait(self, seconds: float) -> None:
        """Let simulated time pass (e.g. honouring a 429's retry-after); recorded as a note."""
        self._wait(seconds)


class Toolbox(ToolboxBase):
    """What an asynchronous agent awaits; same recording, same gateway."""

    async def call(self, name: str, args: dict[str, Any] | None = None) -> ToolResult:
        return self._call(name, args)

    async def ask_user(self, text: str) -> str:
        return self._env.user.reply(text)

    async def wait(self, seconds: float) -> None:
        """Let simulated time pass (e.g. honouring a 429's retry-after); recorded as a note."""
        self._wait(seconds)
