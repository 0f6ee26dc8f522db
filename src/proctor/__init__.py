"""proctor: evaluate tool-using AI agents by outcome, trajectory, safety, cost and reliability.

This module is the public API; names imported from elsewhere may change. Names are
loaded on first use (PEP 562), so `import proctor` and `proctor --help` stay fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from proctor.core.version import __version__

#: Modules of the public API, by the name they have here.
_MODULES: dict[str, str] = {"stats": "proctor.decide.stats"}
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
    "Usage": "proctor.core.results",
    "load_agent": "proctor.agents",
    "Decision": "proctor.env",
    "Domain": "proctor.env",
    "Outcome": "proctor.core.outcome",
    "SyncToolbox": "proctor.env",
    "ToolContext": "proctor.env",
    "ToolError": "proctor.env",
    "ToolResult": "proctor.env",
    "Toolbox": "proctor.env",
    "Check": "proctor.core.results",
    "GradeContext": "proctor.grade",
    "grader": "proctor.grade",
    "match_trajectory": "proctor.grade",
    "Runner": "proctor.run",
    "TrialResult": "proctor.core.results",
    "SpecError": "proctor.core.documents",
    "Suite": "proctor.env",
    "Task": "proctor.tasks",
    "load_suite": "proctor.env",
    "Store": "proctor.store",
    "Trace": "proctor.core.trace",
    "TraceEvent": "proctor.core.trace",
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
    "stats",
]


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        value = importlib.import_module(_MODULES[name])
    elif name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
    else:
        raise AttributeError(f"module 'proctor' has no attribute {name!r}")
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
        load_agent,
    )
    from proctor.core.documents import SpecError
    from proctor.core.outcome import Outcome
    from proctor.core.results import Check, TrialResult, Usage
    from proctor.core.trace import Trace, TraceEvent
    from proctor.decide import stats
    from proctor.env import (
        Decision,
        Domain,
        Suite,
        SyncToolbox,
        Toolbox,
        ToolContext,
        ToolError,
        ToolResult,
        load_suite,
    )
    from proctor.grade import GradeContext, grader, match_trajectory
    from proctor.run import Runner
    from proctor.store import Store
    from proctor.tasks import Task
