"""Simulated worlds: domains, the ToolGateway, per-trial environments, suites bound to them."""

from proctor.env.domain import Decision, Domain, State, Tool, ToolContext, ToolError
from proctor.env.domain_finder import load_module_from_path
from proctor.env.environment import Environment
from proctor.env.gateway import EnvironmentFault, ToolGateway, ToolResult
from proctor.env.suite import Suite, SuiteTask, load_suite
from proctor.env.toolbox import SyncToolbox, Toolbox

__all__ = [
    "Decision",
    "Domain",
    "Environment",
    "EnvironmentFault",
    "State",
    "Suite",
    "SuiteTask",
    "SyncToolbox",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolGateway",
    "ToolResult",
    "Toolbox",
    "load_module_from_path",
    "load_suite",
]
