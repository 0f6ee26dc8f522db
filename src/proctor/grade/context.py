"""What graders read: the task, the trace, the outcome, and the calls derived once."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from proctor.core.jsonvalues import json_encoder
from proctor.core.outcome import Outcome
from proctor.core.results import Usage
from proctor.core.trace import Trace
from proctor.env.domain import Domain
from proctor.tasks.models import Task

_text = json_encoder(ensure_ascii=False)

#: Error codes of calls stopped before the tool ran.
NOT_ATTEMPTED = frozenset({"denied", "invalid_arguments", "unknown_tool"})


@dataclass(slots=True)
class ToolCall:
    """One proposed call and what became of it."""

    call_id: str
    tool: str
    args: Any
    seq: int
    executed: bool = False
    denied: bool = False
    error_code: str | None = None
    result: Any = None
    result_seq: int | None = None
    fault: str | None = None
    replayed: bool = False
    rolled_back: bool = False  # a write that raised: its changes were undone

    @property
    def attempted(self) -> bool:
        """Reached the tool's code: a result, or an error the tool itself raised.

        A call stopped by validation, policy or an injected fault did not; a lost
        response did (its effect was applied).
        """
        if self.executed:
            return True
        return self.fault is None and self.error_code not in NOT_ATTEMPTED

    @property
    def succeeded(self) -> bool:
        """The agent received the result (a lost response executed, but was not seen)."""
        return self.executed and self.error_code is None

    @property
    def name(self) -> str:
        return self.tool

    @property
    def arg_dict(self) -> dict[str, Any]:
        return self.args if isinstance(self.args, dict) else {}

    def brief(self) -> dict[str, Any]:
        return {"seq": self.seq, "tool": self.tool, "args": self.args}


def calls_from_trace(trace: Trace) -> list[ToolCall]:
    calls: dict[str, ToolCall] = {}
    for e in trace.events:
        data = e.data
        if e.kind == "tool_proposal":
            calls[data["call_id"]] = ToolCall(
                data["call_id"], data["tool"], data.get("args"), e.seq
            )
            continue
        call = calls.get(data.get("call_id", "")) if e.kind != "answer" else None
        if call is None:
            continue
        if e.kind == "tool_result":
            call.executed, call.result, call.result_seq = True, data.get("result"), e.seq
            call.replayed = bool(data.get("replayed"))
        elif e.kind == "tool_error":
            call.error_code, call.result_seq = data.get("code"), e.seq
        elif e.kind == "policy_decision" and not data.get("allowed", True):
            call.denied = True
        elif e.kind == "fault":
            call.fault = data.get("fault")
        elif e.kind == "state_rollback":
            call.rolled_back = True
    return list(calls.values())


@dataclass
class GradeContext:
    task: Task
    trace: Trace
    outcome: Outcome
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    domain: Domain | None = None

    @cached_property
    def calls(self) -> list[ToolCall]:
        return calls_from_trace(self.trace)

    @cached_property
    def answer(self) -> str:
        return self.trace.answer

    @cached_property
    def tool_texts(self) -> list[str]:
        """Every tool result as text, for grounding answers."""
        return [_text(c.result) for c in self.calls if c.succeeded]
