"""proctor: evaluate tool-using AI agents by outcome, trajectory, safety, cost and reliability.

This module is the public API; names imported from elsewhere may change.
"""

from proctor.agents import (
    Agent,
    AgentInput,
    AgentResult,
    InfrastructureError,
    Misbehaviour,
    Plan,
    ScriptedAgent,
    Step,
    SyncAgent,
    Usage,
    load_agent,
)
from proctor.env import (
    Decision,
    Domain,
    Outcome,
    SyncToolbox,
    Toolbox,
    ToolContext,
    ToolError,
    ToolResult,
)
from proctor.grade import Check, GradeContext, grader, match_trajectory
from proctor.run import Runner, TrialResult
from proctor.spec import SpecError, Suite, Task, load_suite
from proctor.store import Store
from proctor.trace import Trace, TraceEvent

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "AgentInput",
    "AgentResult",
    "Check",
    "Decision",
    "Domain",
    "GradeContext",
    "InfrastructureError",
    "Misbehaviour",
    "Outcome",
    "Plan",
    "Runner",
    "ScriptedAgent",
    "SpecError",
    "Step",
    "Store",
    "Suite",
    "SyncAgent",
    "SyncToolbox",
    "Task",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "Toolbox",
    "Trace",
    "TraceEvent",
    "TrialResult",
    "Usage",
    "__version__",
    "grader",
    "load_agent",
    "load_suite",
    "match_trajectory",
]
