"""proctor: evaluate tool-using AI agents by outcome, trajectory, safety, cost and reliability.

This module is the public API; names imported from elsewhere may change. Names are
loaded on first use (PEP 562), so `import proctor` and `proctor --help` stay fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "Agent": "proctor.agents",
    "AgentInput": "proctor.agents",
    "AgentResult": "proctor.agents",
    "ChatAgent": "proctor.agents",
    "InfrastructureError": "proctor.agents",
    "Misbehaviour": "proctor.agents",
    "Plan": "proctor.agents",
    "ScriptedAgent": "proctor.agents",
    "Step": "proctor.agents",
    "SyncAgent": "proctor.agents",
    "Usage": "proctor.agents",
    "load_agent": "proctor.agents",
    "Decision": "proctor.env",
    "Domain": "proctor.env",
    "Outcome": "proctor.env",
    "SyncToolbox": "proctor.env",
    "ToolContext": "proctor.env",
    "ToolError": "proctor.env",
    "ToolResult": "proctor.env",
    "Toolbox": "proctor.env",
    "Check": "proctor.grade",
    "GradeContext": "proctor.grade",
    "grader": "proctor.grade",
    "match_trajectory": "proctor.grade",
    "Runner": "proctor.run",
    "TrialResult": "proctor.run",
    "SpecError": "proctor.spec",
    "Suite": "proctor.spec",
    "Task": "proctor.spec",
    "load_suite": "proctor.spec",
    "Store": "proctor.store",
    "Trace": "proctor.trace",
    "TraceEvent": "proctor.trace",
}

__all__ = [
    "Agent",
    "AgentInput",
    "AgentResult",
    "ChatAgent",
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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'proctor' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from proctor.agents import (
        Agent,
        AgentInput,
        AgentResult,
        ChatAgent,
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
