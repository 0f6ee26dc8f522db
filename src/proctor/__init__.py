"""proctor: evaluate tool-using AI agents by outcome, trajectory, safety, cost and reliability.

This module is the public API; names imported from elsewhere may change. Names are
loaded on first use (PEP 562), so `import proctor` and `proctor --help` stay fast, and an
adapter's framework is imported only when its adapter is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from proctor.core.lazy import lazy_exports
from proctor.core.version import __version__

#: Modules of the public API, by the name they have here.
_MODULES = {"stats": "proctor.stats"}
#: Name → the module that defines it.
_EXPORTS = {
    # records every layer shares
    "Check": "proctor.core.results",
    "TaskInfo": "proctor.core.results",
    "TrialResult": "proctor.core.results",
    "Usage": "proctor.core.results",
    "Outcome": "proctor.core.outcome",
    "SpecError": "proctor.core.documents",
    "Trace": "proctor.core.trace",
    "TraceEvent": "proctor.core.trace",
    # tasks and the worlds they run in
    "Identity": "proctor.tasks",
    "Task": "proctor.tasks",
    "Decision": "proctor.env",
    "Domain": "proctor.env",
    "State": "proctor.env",
    "Suite": "proctor.env",
    "SyncToolbox": "proctor.env",
    "Tool": "proctor.env",
    "ToolContext": "proctor.env",
    "ToolError": "proctor.env",
    "ToolResult": "proctor.env",
    "Toolbox": "proctor.env",
    "load_module_from_path": "proctor.env",
    "load_suite": "proctor.env",
    # agents
    "Agent": "proctor.agents",
    "AgentInput": "proctor.agents",
    "AgentResult": "proctor.agents",
    "ChatAgent": "proctor.agents",
    "InfrastructureError": "proctor.agents",
    "Misbehaviour": "proctor.agents",
    "Plan": "proctor.agents",
    "ScriptedAgent": "proctor.agents",
    "Session": "proctor.agents",
    "Step": "proctor.agents",
    "SyncAgent": "proctor.agents",
    "load_agent": "proctor.agents",
    "LangGraphAgent": "proctor.agents.adapters.langgraph",
    "OpenAIAgentsAgent": "proctor.agents.adapters.openai_agents",
    "PydanticAIAgent": "proctor.agents.adapters.pydantic_ai",
    "SmolAgent": "proctor.agents.adapters.smolagents",
    # grading
    "GradeContext": "proctor.grade.context",
    "grader": "proctor.grade.registry",
    "match_trajectory": "proctor.grade.match",
    # the API the CLI stands on
    "evaluate": "proctor.api",
    "load_tasks": "proctor.api",
    "gate": "proctor.api",
    "compare": "proctor.api",
    "RunResult": "proctor.api",
    "GateVerdict": "proctor.api",
    "InputError": "proctor.api",
    # running, storing, deciding
    "Runner": "proctor.run",
    "Store": "proctor.store",
    "RunData": "proctor.core.runs",
    "RunSummary": "proctor.core.summary",
    "load_run": "proctor.store.export",
    "summarize": "proctor.decide.summarize",
    "Pairing": "proctor.decide.compare",
    "compare_runs": "proctor.decide.compare",
    "Gate": "proctor.decide.gate",
    "load_rules": "proctor.decide.gate",
    "ScorecardConfig": "proctor.decide.scorecard",
    "load_scorecard": "proctor.decide.scorecard",
    # judges
    "ChatJudge": "proctor.judge",
    "JudgeView": "proctor.judge",
    "ScriptedJudge": "proctor.judge",
    "Rubric": "proctor.tasks.rubrics",
    # production and the suite's own tests
    "promote": "proctor.loop.promote",
    "mutate_suite": "proctor.health.mutate",
    "flaky_tasks": "proctor.health.flaky",
    "reenact": "proctor.env.reenact",
}

__all__ = [
    "Agent",
    "AgentInput",
    "AgentResult",
    "ChatAgent",
    "ChatJudge",
    "Check",
    "Decision",
    "Domain",
    "Gate",
    "GateVerdict",
    "GradeContext",
    "Identity",
    "InfrastructureError",
    "InputError",
    "JudgeView",
    "LangGraphAgent",
    "Misbehaviour",
    "OpenAIAgentsAgent",
    "Outcome",
    "Pairing",
    "Plan",
    "PydanticAIAgent",
    "Rubric",
    "RunData",
    "RunResult",
    "RunSummary",
    "Runner",
    "ScorecardConfig",
    "ScriptedAgent",
    "ScriptedJudge",
    "Session",
    "SmolAgent",
    "SpecError",
    "State",
    "Step",
    "Store",
    "Suite",
    "SyncAgent",
    "SyncToolbox",
    "Task",
    "TaskInfo",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "Toolbox",
    "Trace",
    "TraceEvent",
    "TrialResult",
    "Usage",
    "__version__",
    "compare",
    "compare_runs",
    "evaluate",
    "flaky_tasks",
    "gate",
    "grader",
    "load_agent",
    "load_module_from_path",
    "load_rules",
    "load_run",
    "load_scorecard",
    "load_suite",
    "load_tasks",
    "match_trajectory",
    "mutate_suite",
    "promote",
    "reenact",
    "stats",
    "summarize",
]
__getattr__ = lazy_exports(globals(), _EXPORTS, _MODULES)


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from proctor import stats
    from proctor.agents import (
        Agent,
        AgentInput,
        AgentResult,
        ChatAgent,
        InfrastructureError,
        Misbehaviour,
        Plan,
        ScriptedAgent,
        Session,
        Step,
        SyncAgent,
        load_agent,
    )
    from proctor.agents.adapters.langgraph import LangGraphAgent
    from proctor.agents.adapters.openai_agents import OpenAIAgentsAgent
    from proctor.agents.adapters.pydantic_ai import PydanticAIAgent
    from proctor.agents.adapters.smolagents import SmolAgent
    from proctor.api import (
        GateVerdict,
        InputError,
        RunResult,
        compare,
        evaluate,
        gate,
        load_tasks,
    )
    from proctor.core.documents import SpecError
    from proctor.core.outcome import Outcome
    from proctor.core.results import Check, TaskInfo, TrialResult, Usage
    from proctor.core.runs import RunData
    from proctor.core.summary import RunSummary
    from proctor.core.trace import Trace, TraceEvent
    from proctor.decide.compare import Pairing, compare_runs
    from proctor.decide.gate import Gate, load_rules
    from proctor.decide.scorecard import ScorecardConfig, load_scorecard
    from proctor.decide.summarize import summarize
    from proctor.env import (
        Decision,
        Domain,
        State,
        Suite,
        SyncToolbox,
        Tool,
        Toolbox,
        ToolContext,
        ToolError,
        ToolResult,
        load_module_from_path,
        load_suite,
    )
    from proctor.env.reenact import reenact
    from proctor.grade.context import GradeContext
    from proctor.grade.match import match_trajectory
    from proctor.grade.registry import grader
    from proctor.health.flaky import flaky_tasks
    from proctor.health.mutate import mutate_suite
    from proctor.judge import ChatJudge, JudgeView, ScriptedJudge
    from proctor.loop.promote import promote
    from proctor.run import Runner
    from proctor.store import Store
    from proctor.store.export import load_run
    from proctor.tasks import Identity, Task
    from proctor.tasks.rubrics import Rubric
