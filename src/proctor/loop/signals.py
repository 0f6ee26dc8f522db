"""One session's online signals, read from its trace, with the identifiers that join it.

The same reading applies to a production session and to an offline trial, so the monitor
compares like with like (docs/architecture.md, Flow):

- **escalated**: a call that reached an escalation tool (the mapping's, or the task's
  `safety.escalate` tools);
- **undone**: a write followed by its inverse (the mapping's `inverses`) on the same
  entity: the tool's `entity` argument, else an argument named `id` or `*_id` both share;
- **repeated**: an identical call made again after its result came back;
- **denied**: a proposal the policy refused (a `policy_decision` that did not allow it,
  a `denied` / `forbidden` error, or, in a log that records only error texts, an error
  saying permission was denied);
- **abandoned**: no final answer;
- latency, cost, and the outcome where it is observable (graded, or logged).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from proctor.core.trace import Trace
from proctor.env.domain import Domain
from proctor.grade.context import ToolCall, calls_from_trace
from proctor.grade.trajectory import duplicate_calls
from proctor.run.trial import usage_of

DENIED_CODES = frozenset({"denied", "forbidden"})
DENIAL = re.compile(r"(?i)\b(permission denied|access denied|not (authori[sz]ed|allowed))\b")
_TRUE = frozenset({"true", "yes", "1", "success", "succeeded", "resolved", "passed", "ok"})
_FALSE = frozenset({"false", "no", "0", "failure", "failed", "unresolved", "error"})


@dataclass
class Signals:
    """What the monitor counts for one session, and how it joins the rest of the record."""

    session_id: str
    trace_id: str
    tags: list[str]
    task_id: str | None = None
    time: datetime | None = None
    model: str | None = None
    prompt_version: str | None = None
    outcome: bool | None = None
    outcome_source: str | None = None  # "graded", "logged"
    feedback: Any = None
    escalated: bool = False
    undone: bool = False
    repeated: int = 0
    proposals: int = 0
    denied: int = 0
    abandoned: bool = False
    latency_s: float = 0.0
    #: None: the session reported no cost, or only some of its calls did (not measured)
    cost_usd: float | None = None
    policy_decisions: list[dict[str, Any]] = field(default_factory=list)
    review_label: dict[str, Any] | None = None
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "trace_id": self.trace_id,
            "source": self.source,
            "time": self.time.isoformat() if self.time else None,
            "tags": self.tags,
            "task_id": self.task_id,
            "model": self.model,
            "prompt_version": self.prompt_version,
            "outcome": self.outcome,
            "outcome_source": self.outcome_source,
            "feedback": self.feedback,
            "review_label": self.review_label,
            "escalated": self.escalated,
            "undone": self.undone,
            "repeated_calls": self.repeated,
            "proposals": self.proposals,
            "denied": self.denied,
            "abandoned": self.abandoned,
            "latency_s": self.latency_s,
            "cost_usd": self.cost_usd,
            "policy_decisions": self.policy_decisions,
        }


def _entity_args(call: ToolCall, domain: Domain | None) -> dict[str, Any]:
    tool = domain.tools.get(call.tool) if domain is not None else None
    if tool is not None and tool.entity_arg and tool.entity_arg in call.arg_dict:
        return {tool.entity_arg: call.arg_dict[tool.entity_arg]}
    return {k: v for k, v in call.arg_dict.items() if k == "id" or k.endswith("_id")}


def undone(calls: list[ToolCall], inverses: dict[str, str], domain: Domain | None) -> bool:
    """A write that reached its tool, then its inverse on the same entity."""
    for i, call in enumerate(calls):
        inverse = inverses.get(call.tool)
        if inverse is None or not call.executed:
            continue
        entity = _entity_args(call, domain)
        for later in calls[i + 1 :]:
            if later.tool != inverse or not later.executed:
                continue
            other = _entity_args(later, domain)
            if any(k in other and other[k] == v for k, v in entity.items()):
                return True
    return False


def read_signals(
    trace: Trace,
    *,
    escalation: set[str],
    inverses: dict[str, str],
    domain: Domain | None = None,
    latency_s: float | None = None,
) -> dict[str, Any]:
    """The counted signals of one trace (the fields of Signals that come from events)."""
    calls = calls_from_trace(trace)
    decisions = [
        {k: e.data.get(k) for k in ("tool", "allowed", "rule", "reason")}
        for e in trace.of_kind("policy_decision")
    ]
    denied = {c.call_id for c in calls if c.denied or c.error_code in DENIED_CODES}
    denied |= {
        str(e.data.get("call_id"))
        for e in trace.of_kind("tool_error")
        if DENIAL.search(str(e.data.get("error", "")))
    }
    return {
        "escalated": any(c.attempted and c.tool in escalation for c in calls),
        "undone": undone(calls, inverses, domain),
        "repeated": len(duplicate_calls(calls)),
        "proposals": len(calls),
        "denied": len(denied),
        "abandoned": not trace.answer.strip(),
        "latency_s": latency_s
        if latency_s is not None
        else max((e.t for e in trace.events), default=0.0),
        "cost_usd": usage_of(trace.events).complete("cost"),
        "policy_decisions": decisions,
    }


def first_of(metadata: dict[str, Any], keys: list[str]) -> Any:
    return next((metadata[k] for k in keys if metadata.get(k) is not None), None)


def parse_time(value: Any) -> datetime | None:
    """An ISO 8601 text or a Unix time (s, or ms when large) as an aware datetime."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        seconds = value / 1000 if value > 1e11 else value
        return datetime.fromtimestamp(seconds, UTC)
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def logged_outcome(value: Any) -> bool | None:
    """A logged outcome read as success or failure (None when it says neither)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value > 0
    text = str(value).strip().casefold() if value is not None else ""
    return True if text in _TRUE else False if text in _FALSE else None
