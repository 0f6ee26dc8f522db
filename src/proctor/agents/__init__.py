"""Agents: the protocol, the ScriptedAgent, and loading agents named on the CLI."""

from proctor.agents.base import (
    Agent,
    AgentInput,
    AgentResult,
    InfrastructureError,
    SyncAgent,
    Usage,
)
from proctor.agents.loading import AgentNotFound, load_agent
from proctor.agents.scripted import Misbehaviour, Plan, ScriptedAgent, Step

__all__ = [
    "Agent",
    "AgentInput",
    "AgentNotFound",
    "AgentResult",
    "InfrastructureError",
    "Misbehaviour",
    "Plan",
    "ScriptedAgent",
    "Step",
    "SyncAgent",
    "Usage",
    "load_agent",
]
