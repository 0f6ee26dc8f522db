"""How a trace reads: each event as a step a person can follow, and checks failed-first.

The HTML trace viewer, `proctor show --task` and the review desk print the same steps, so
the wording of a step lives here once, below every package that renders traces. A step is
plain data (strings, numbers, JSON values); renderers decide markup, and agent text is
never interpreted by them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from proctor.core.results import Check, evidence_seqs
from proctor.core.trace import TraceEvent

_SEVERITY_ORDER = {"critical": 0, "high": 1, "medium": 2, "low": 3}


@dataclass(frozen=True, slots=True)
class Change:
    """One leaf of a state change: `before` or `after` is None when the leaf is absent."""

    path: str
    before: Any
    after: Any
    existed: bool
    exists: bool


@dataclass(frozen=True, slots=True)
class Step:
    seq: int
    t: float
    kind: str
    call_id: str | None
    text: str
    detail: Any = None
    changes: tuple[Change, ...] = ()
    flag: str = ""  # "denied" | "fault" | "error" | "" : what a reader should notice


@dataclass(frozen=True, slots=True)
class CheckView:
    check: Check
    steps: tuple[int, ...]  # the trace seqs its evidence points at


def _money(x: Any) -> str:
    if not isinstance(x, int | float) or isinstance(x, bool) or not math.isfinite(x):
        return "$?"
    return f"${float(x):.6f}".rstrip("0").rstrip(".") if x else "$0"


def _leaves(path: str, value: Any) -> dict[str, Any]:
    """Flatten dicts and lists into `path.key` / `path[i]` leaves; empty containers stay."""
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(_leaves(f"{path}.{key}" if path else str(key), item))
        return out
    if isinstance(value, list) and value:
        out = {}
        for i, item in enumerate(value):
            out.update(_leaves(f"{path}[{i}]", item))
        return out
    return {path: value}


def diff(path: str, before: Any, after: Any) -> list[Change]:
    """The leaves that differ between `before` and `after` under `path`, in path order."""
    old, new = _leaves(path, before), _leaves(path, after)
    return [
        Change(key, old.get(key), new.get(key), key in old, key in new)
        for key in sorted(old.keys() | new.keys())
        if key not in old or key not in new or old[key] != new[key]
    ]


def _model_call(d: dict[str, Any]) -> str:
    """One line; a figure the call did not report is left out, not shown as zero."""
    parts = [f"model call: {d.get('model') or 'model'}"]
    tokens_in, tokens_out = d.get("input_tokens"), d.get("output_tokens")
    if tokens_in is not None or tokens_out is not None:
        parts.append(f"{_figure(tokens_in)} in / {_figure(tokens_out)} out tokens")
    if d.get("cost_usd") is not None:
        parts.append(_money(d["cost_usd"]))
    if d.get("latency_s") is not None:
        simulated = " (simulated)" if d.get("simulated") is True else ""
        parts.append(f"{_figure(d['latency_s'], '{:.2f}')} s{simulated}")
    return " · ".join(parts)


def _figure(x: Any, form: str = "{}") -> str:
    """A number as recorded; anything else (text, NaN from an old store) as "?"."""
    if isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x):
        return form.format(x)
    return "?"


def step(event: TraceEvent) -> Step:
    """One event as a step: a line of text, the payload to show under it, what to notice."""
    d, kind = event.data, event.kind
    tool = str(d.get("tool", ""))
    call_id = d.get("call_id")

    def at(text: str, detail: Any = None, changes: tuple[Change, ...] = (), flag: str = "") -> Step:
        return Step(event.seq, event.t, kind, call_id, text, detail, changes, flag)

    if kind == "model_call":
        return at(_model_call(d))
    if kind == "tool_proposal":
        return at(f"proposes {tool}", detail=d.get("args"))
    if kind == "policy_decision":
        if d.get("allowed"):
            return at(f"policy allows {tool} (rule {d.get('rule')})")
        why = f"denied {tool}: {d.get('reason')} (rule {d.get('rule')})"
        return at(f"policy {why}", flag="denied")
    if kind == "fault":
        return at(f"injected fault on {tool}: {d.get('fault')}", flag="fault")
    if kind == "tool_result":
        replay = " (idempotent replay)" if d.get("replayed") else ""
        return at(f"{tool} returned{replay}", detail=d.get("result"))
    if kind == "tool_error":
        text = f"{tool} failed: {d.get('code')}: {d.get('error')}"
        if d.get("retry_after_s") is not None:
            text += f" (retry after {d['retry_after_s']} s)"
        return at(text, flag="error")
    if kind in ("state_change", "state_rollback"):
        changes = tuple(
            leaf
            for c in d.get("changes") or []
            for leaf in diff(str(c.get("path", "")), c.get("before"), c.get("after"))
        )
        if kind == "state_change":
            return at(f"state changed by {tool}", changes=changes)
        return at(f"{tool} raised: its changes were rolled back", changes=changes, flag="error")
    if kind == "confirmation":
        via = f" via {d['via']}" if d.get("via") else ""
        return at(f"confirmation recorded{via}", detail=_without(d, "call_id"))
    if kind == "message":
        to = f" to {d['to']}" if d.get("to") else ""
        return at(f"message from {d.get('role')}{to}", detail=d.get("content"))
    if kind == "answer":
        return at("final answer", detail=d.get("text"))
    return at(kind.replace("_", " "), detail=_without(d, "call_id") or None)


def _without(data: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in keys}


def check_views(checks: list[Check], seqs: set[int]) -> list[CheckView]:
    """Checks failed first (blocking, then by severity), each with the steps it points at."""

    def order(c: Check) -> tuple[int, int, int]:
        return (c.passed, not c.blocks, _SEVERITY_ORDER.get(c.severity or "", 4))

    return [
        CheckView(c, tuple(s for s in evidence_seqs(c.evidence) if s in seqs))
        for c in sorted(checks, key=order)
    ]
