"""Simulated worlds: domains, the ToolGateway, per-trial environments."""

from proctor.env.domain import ALLOW, Decision, Domain, State, Tool, ToolContext, ToolError
from proctor.env.environment import Environment
from proctor.env.gateway import EnvironmentFault, ToolGateway, ToolResult
from proctor.env.outcome import LedgerEntry, Outcome
from proctor.env.toolbox import SyncToolbox, Toolbox

__all__ = [
    "ALLOW",
    "Decision",
    "Domain",
    "Environment",
    "EnvironmentFault",
    "LedgerEntry",
    "Outcome",
    "State",
    "SyncToolbox",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolGateway",
    "ToolResult",
    "Toolbox",
]
