"""The Toolbox: the agent's face of the ToolGateway (async, with a sync twin)."""

from __future__ import annotations

from typing import Any

from proctor.env.environment import Environment
from proctor.env.gateway import ToolResult


class SyncToolbox:
    """What a synchronous agent calls. The agent never touches the state itself."""

    def __init__(self, env: Environment) -> None:
        self._env = env

    @property
    def tools(self) -> list[dict[str, Any]]:
        return self._env.gateway.schemas()

    def call(self, name: str, args: dict[str, Any] | None = None) -> ToolResult:
        return self._env.gateway.call(name, {} if args is None else args)

    def ask_user(self, text: str) -> str:
        return self._env.user.reply(text)

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

    def wait(self, seconds: float) -> None:
        """Let simulated time pass (e.g. honouring a 429's retry-after); recorded as a note."""
        seconds = max(0.0, float(seconds))
        self._env.recorder.clock.advance(seconds)
        self._env.recorder.emit("note", {"wait_s": seconds})

    def message(self, role: str, content: str) -> None:
        self._env.recorder.emit("message", {"role": role, "content": str(content)})

    def note(self, text: str) -> None:
        self._env.recorder.emit("note", {"text": str(text)})


class Toolbox(SyncToolbox):
    """What an asynchronous agent awaits; same recording, same gateway."""

    async def call(self, name: str, args: dict[str, Any] | None = None) -> ToolResult:  # type: ignore[override]
        return super().call(name, args)

    async def ask_user(self, text: str) -> str:  # type: ignore[override]
        return super().ask_user(text)

    async def wait(self, seconds: float) -> None:  # type: ignore[override]
        super().wait(seconds)
