"""The agent protocol: one shape for sync and async agents.

An agent is an object with `run(input, toolbox)` (sync or `async def`) or a plain function
of the same two arguments. It returns an AgentResult, or just the answer text.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from proctor.core.results import Usage
from proctor.env.toolbox import SyncToolbox, Toolbox


class InfrastructureError(Exception):
    """Raised by adapters for provider outages (HTTP 5xx, network): the trial is an `error`.

    Any other exception escaping an agent is the agent's own failure.
    """


@dataclass(slots=True)
class AgentInput:
    """Everything the agent may see of a task; never the expectations."""

    task_id: str
    prompt: str
    identity: dict[str, Any]
    tools: list[dict[str, Any]]
    seed: int
    trial: int = 0
    #: Per-task agent settings from the task's `metadata.agent` (system prompt,
    #: temperature, max steps): tasks may tune the agent, never reveal expectations.
    settings: dict[str, Any] = field(default_factory=dict)


def task_agent_settings(metadata: dict[str, Any]) -> dict[str, Any]:
    """The `agent` mapping of a task's metadata (empty when absent or not a mapping)."""
    settings = metadata.get("agent")
    return dict(settings) if isinstance(settings, dict) else {}


@dataclass(slots=True)
class AgentResult:
    answer: str
    usage: Usage = field(default_factory=Usage)
    messages: list[dict[str, Any]] | None = None


@runtime_checkable
class Agent(Protocol):
    """Async form; a sync agent has the same method without `async`, taking a SyncToolbox."""

    async def run(self, input: AgentInput, toolbox: Toolbox) -> AgentResult | str: ...


@runtime_checkable
class SyncAgent(Protocol):
    def run(self, input: AgentInput, toolbox: SyncToolbox) -> AgentResult | str: ...


def agent_callable(agent: Any) -> Any:
    """The function to call for an agent object or plain agent function."""
    run = getattr(agent, "run", None)
    if callable(run):
        return run
    if callable(agent):
        return agent
    raise TypeError(f"{agent!r} is not an agent: it needs a run(input, toolbox) method")


def is_async_agent(agent: Any) -> bool:
    return inspect.iscoroutinefunction(agent_callable(agent))


def agent_name(agent: Any) -> str:
    return str(
        getattr(agent, "name", None) or getattr(agent, "__name__", None) or type(agent).__name__
    )


def agent_version(agent: Any) -> str:
    return str(getattr(agent, "version", "") or "")


def as_result(value: Any) -> AgentResult:
    if isinstance(value, AgentResult):
        return value
    if isinstance(value, str):
        return AgentResult(answer=value)
    if value is None:
        return AgentResult(answer="")
    raise TypeError(f"agent returned {type(value).__name__}; expected AgentResult or str")
