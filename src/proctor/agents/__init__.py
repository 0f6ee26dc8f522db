"""Agents: the protocol, the ScriptedAgent, and loading agents named on the CLI."""

from proctor.agents.agent import Agent, AgentInput, AgentResult, InfrastructureError, SyncAgent
from proctor.agents.agent_refs import AgentNotFound, load_agent
from proctor.agents.chat import ChatAgent
from proctor.agents.scripted import Misbehaviour, Plan, ScriptedAgent, Step
from proctor.agents.session import Session

__all__ = [
    "Agent",
    "AgentInput",
    "AgentNotFound",
    "AgentResult",
    "ChatAgent",
    "InfrastructureError",
    "Misbehaviour",
    "Plan",
    "ScriptedAgent",
    "Session",
    "Step",
    "SyncAgent",
    "load_agent",
]
