"""What graders read: the task, the trace, the outcome, and the calls derived once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from proctor.core.jsonvalues import json_encoder
from proctor.core.outcome import Outcome
from proctor.core.results import Usage
from proctor.core.trace import Trace, TraceEvent
from proctor.env.domain import Domain
from proctor.tasks.models import Task

_text = json_encoder(ensure_ascii=False)
R = TypeVar("R")

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


#: The kinds of event that say what became of a proposed call.
_CALL_EVENTS = frozenset(
    {"tool_result", "tool_error", "policy_decision", "fault", "state_rollback"}
)


def calls_from_trace(
    trace: Trace, by_kind: dict[str, list[TraceEvent]] | None = None
) -> list[ToolCall]:
    """The trace's proposed calls, in order, and what became of each; `by_kind`, when
    given, gets every event under its kind in the same pass."""
    calls: dict[str, ToolCall] = {}
    for e in trace.events:
        kind, data = e.kind, e.data
        if by_kind is not None:
            bucket = by_kind.get(kind)
            if bucket is None:
                by_kind[kind] = [e]
            else:
                bucket.append(e)
        if kind == "tool_proposal":
            calls[data["call_id"]] = ToolCall(
                data["call_id"], data["tool"], data.get("args"), e.seq
            )
            continue
        if kind not in _CALL_EVENTS:
            continue
        call = calls.get(data.get("call_id", ""))
        if call is None:
            continue
        if kind == "tool_result":
            call.executed, call.result, call.result_seq = True, data.get("result"), e.seq
            call.replayed = bool(data.get("replayed"))
        elif kind == "tool_error":
            call.error_code, call.result_seq = data.get("code"), e.seq
        elif kind == "policy_decision":
            if not data.get("allowed", True):
                call.denied = True
        elif kind == "fault":
            call.fault = data.get("fault")
        else:  # state_rollback
            call.rolled_back = True
    return list(calls.values())


@dataclass(slots=True)
class GradeContext:
    """A trial as graders read it. What several graders derive from the trace (its calls,
    its events by kind, its tool results as text) is derived once, when first read."""

    task: Task
    trace: Trace
    outcome: Outcome
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    domain: Domain | None = None
    _read: tuple[list[ToolCall], dict[str, list[TraceEvent]]] | None = field(
        default=None, init=False, repr=False
    )
    _tool_texts: list[str] | None = field(default=None, init=False, repr=False)
    _answer: str | None = field(default=None, init=False, repr=False)
    _attempted: list[ToolCall] | None = field(default=None, init=False, repr=False)
    _derived: dict[Callable[..., Any], Any] | None = field(default=None, init=False, repr=False)

    @property
    def calls(self) -> list[ToolCall]:
        return (self._read or self._read_trace())[0]

    @property
    def attempted(self) -> list[ToolCall]:
        """The calls that reached their tool (`ToolCall.attempted`), in order."""
        if self._attempted is None:
            self._attempted = [c for c in self.calls if c.attempted]
        return self._attempted

    def derived(self, fn: Callable[[GradeContext], R]) -> R:
        """`fn(self)`, worked out once for this trial: what several graders read alike
        (shared: not to be changed). Kept on the context, so never beyond its trial."""
        if self._derived is None:
            self._derived = {}
        elif fn in self._derived:
            return self._derived[fn]
        value = self._derived[fn] = fn(self)
        return value

    def of_kind(self, kind: str) -> list[TraceEvent]:
        """The trace's events of `kind`, in order (shared: not to be changed)."""
        return (self._read or self._read_trace())[1].get(kind, [])

    def _read_trace(self) -> tuple[list[ToolCall], dict[str, list[TraceEvent]]]:
        """The calls and the events by kind, read in one pass over the trace."""
        by_kind: dict[str, list[TraceEvent]] = {}
        self._read = (calls_from_trace(self.trace, by_kind), by_kind)
        return self._read

    @property
    def answer(self) -> str:
        if self._answer is None:
            self._answer = self.trace.answer
        return self._answer

    @property
    def tool_texts(self) -> list[str]:
        """Every tool result as text, for grounding answers."""
        if self._tool_texts is None:
            self._tool_texts = [_text(c.result) for c in self.calls if c.succeeded]
        return self._tool_texts
