"""Control agents: what a task must do with an agent that knows nothing.

A task's checks are only as good as the agents they fail. Three controls say so
(docs/architecture.md, Suite health): the reference agent must pass every task (else the
task or its expectations are wrong; one it passes on some trials only meets noise); the
**null** agent (no call, no answer) and the **junk** agent (calls to every tool it is
shown with arguments that fit the schema but name nothing the task is about, then a
confident answer claiming success) must fail every task that is not about declining. A
task a control gets wrong is listed with the checks that decided it: the failing ones for
the reference, the passing ones that let a control through.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from proctor.agents.agent import AgentInput, AgentResult
from proctor.core.results import GATING_KINDS, Check, TrialResult
from proctor.env.suite import Suite
from proctor.env.toolbox import Toolbox

#: What the junk agent says whatever happened: a confident, specific, false success.
JUNK_ANSWER = (
    "Done: I have completed your request and everything is confirmed. "
    "Your reference number is 4471 and the total comes to 129.50."
)
#: At most this many calls per junk trial (suites with dozens of tools stay quick).
JUNK_CALLS = 12


class NullAgent:
    """Calls nothing and answers nothing."""

    name = "null-control"
    version = "1"

    async def run(self, input: AgentInput, toolbox: Toolbox) -> AgentResult:
        return AgentResult("")


def junk_value(schema: Any, name: str) -> Any:
    """A value the schema accepts that names nothing real: `junk-<arg>`, 0, the last
    enum member, empty containers."""
    if not isinstance(schema, dict):
        return f"junk-{name}"
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][-1]
    for key in ("anyOf", "oneOf"):
        options = [o for o in schema.get(key) or [] if isinstance(o, dict)]
        typed = [o for o in options if o.get("type") != "null"]
        if typed:
            return junk_value(typed[0], name)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "integer":
        return 0
    if kind == "number":
        return 0.0
    if kind == "boolean":
        return True
    if kind == "array":
        return []
    if kind == "object":
        return junk_args(schema)
    return f"junk-{name}"


def junk_args(schema: dict[str, Any]) -> dict[str, Any]:
    props = schema.get("properties") or {}
    required = schema.get("required") or list(props)
    return {n: junk_value(props.get(n), n) for n in required if isinstance(n, str)}


class JunkAgent:
    """Plausible-looking, wrong: calls each tool it is shown (reads first) with junk
    arguments, then claims success with made-up figures."""

    name = "junk-control"
    version = "1"

    async def run(self, input: AgentInput, toolbox: Toolbox) -> AgentResult:
        tools = sorted(input.tools, key=lambda t: (t.get("kind") == "write", t.get("name")))
        for spec in tools[:JUNK_CALLS]:
            params = spec.get("parameters") or {}
            await toolbox.call(str(spec["name"]), junk_args(params))
        return AgentResult(JUNK_ANSWER)


CONTROLS = ("reference", "null", "junk")


@dataclass
class ControlFinding:
    """A task a control got wrong: which control, its trial, and the checks that decided."""

    task_id: str
    control: str
    trial: int
    status: str
    checks: list[str] = field(default_factory=list)

    @property
    def detail(self) -> str:
        if self.control == "reference":
            said = ", ".join(self.checks) or self.status
            return f"the reference agent fails it (trial {self.trial}: {said})"
        let = ", ".join(self.checks) or "no check gates this task"
        return f"the {self.control} agent passes it (let through by: {let})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "control": self.control,
            "trial": self.trial,
            "status": self.status,
            "checks": self.checks,
            "detail": self.detail,
        }


def _let_through(checks: Iterable[Check]) -> list[str]:
    """The passing checks that decided a pass: gating kinds and blocking severities."""
    return [
        c.name
        for c in checks
        if c.passed and (c.kind in GATING_KINDS or c.severity in ("critical", "high"))
    ]


def control_findings(suite: Suite, results: dict[str, list[TrialResult]]) -> list[ControlFinding]:
    """Findings from each control's trial results (`reference`, `null`, `junk` → trials).
    Error trials are the harness's, not the task's: they count for no control."""
    declining = {
        t.id
        for t in suite.tasks
        if t.task.expect.safety is not None and t.task.expect.safety.decline_spec is not None
    }
    found: list[ControlFinding] = []
    for control, trials in results.items():
        # A reference that passes a task on some trials and not others meets noise (the
        # noise floor's to say), not a wrong task: it must never pass it to be wrong.
        exempt = {r.task_id for r in trials if r.passed} if control == "reference" else declining
        first: dict[str, TrialResult] = {}
        for r in trials:
            if r.status == "error" or r.task_id in exempt or r.task_id in first:
                continue
            if (not r.passed) if control == "reference" else r.passed:
                first[r.task_id] = r
        for task_id, r in first.items():
            checks = (
                [c.name for c in r.checks if c.blocks] + ([r.error] if r.error else [])
                if control == "reference"
                else _let_through(r.checks)
            )
            found.append(ControlFinding(task_id, control, r.trial, r.status, checks))
    return found
