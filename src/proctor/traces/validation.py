"""What an imported trace claims, checked in one place before it is graded.

Every importer's sessions pass through `checked_session` (trace_files.load_sessions calls
it; an importer with an entry point of its own calls it too), and every span importer's
groups through `check_span_tree` (docs/architecture.md, Where to add: an importer).

- **Rejected** (a TraceInputError naming file, line or session, exit 2): a session with
  no messages, calls or model calls (nothing to grade); a final state that is not a
  mapping; spans that are their own parent or form a parent cycle.
- **Flagged** (imported, with a `note` event `{"data_quality": CODE, ...}` the
  `data_quality` grader turns into a failing check): a model call's cost that is not a
  finite, non-negative number (`cost`), token counts that are not whole numbers between 0
  and `pricing.MAX_TOKENS` (`tokens`), a latency that is not finite and non-negative (`latency`):
  the value becomes None, "not measured" (docs/architecture.md, Verdicts), never 0, so a
  negative span cannot offset a real one nor a $0 pass a budget; tool-call arguments that
  are not a JSON object (`arguments`: kept as recorded), unless the recording shows the
  call refused for them (`invalid_arguments`, as proctor's own export of a live trial
  does: the trial already judged that call). A figure the source left out (None) is not
  measured, not a defect: no flag. A flagged measure fails its budget check and leaves
  the run's figures of that measure undefined, so gates on it fail (grade/quality.py,
  decide/gate.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from proctor.agents.pricing import tokens_ok
from proctor.core.trace import TraceEvent
from proctor.traces.imported import Session, TraceInputError
from proctor.traces.spans import Span

#: The note key of a data-quality flag (grade/quality.py reads it).
QUALITY = "data_quality"


def _cost_ok(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


#: A model call's figures: (key, flag code, test of a value). None is not measured, not bad.
_FIGURES = (
    ("cost_usd", "cost", _cost_ok),
    ("input_tokens", "tokens", tokens_ok),
    ("output_tokens", "tokens", tokens_ok),
    ("latency_s", "latency", _cost_ok),
)


def checked_session(session: Session, where: str) -> Session:
    """`session` with its defects flagged and not measured; a TraceInputError (`where`:
    the file, and the line when known) for one that cannot be graded."""
    name = f"{where}: session {session.id!r}"
    if session.final_state is not None and not isinstance(session.final_state, dict):
        kind = type(session.final_state).__name__
        raise TraceInputError(f"{name}: the final state is a {kind}, not a mapping")
    if not any(e.kind in ("message", "tool_proposal", "model_call") for e in session.events):
        raise TraceInputError(f"{name}: no messages, tool calls or model calls to grade")
    rejected = {  # calls the recording itself shows refused for their arguments
        e.data.get("call_id")
        for e in session.events
        if e.kind == "tool_error" and e.data.get("code") == "invalid_arguments"
    }
    flags: list[dict[str, Any]] = []
    for event in session.events:
        flags.extend(_event_flags(event, rejected))
    if session.latency_s is not None and not _cost_ok(session.latency_s):
        flags.append(_flag("latency", None, "session latency", session.latency_s))
        session.latency_s = None
    t = max((e.t for e in session.events), default=0.0)
    for flag in flags:
        session.events.append(TraceEvent(len(session.events) + 1, t, "note", flag))
    return session


def _flag(code: str, seq: int | None, what: str, value: Any) -> dict[str, Any]:
    return {QUALITY: code, "seq": seq, "detail": f"{what}: {value!r} is not a valid value"}


def _event_flags(event: TraceEvent, rejected: set[Any]) -> Iterable[dict[str, Any]]:
    data = event.data
    if event.kind == "model_call":
        for key, code, ok in _FIGURES:
            value = data.get(key)
            if value is not None and not ok(value):
                yield _flag(code, event.seq, key, value)
                data[key] = None
    elif (
        event.kind == "tool_proposal"
        and not isinstance(data.get("args"), dict)
        and data.get("call_id") not in rejected
    ):
        yield _flag("arguments", event.seq, f"arguments of {data.get('tool')}", data.get("args"))
    if not math.isfinite(event.t):
        event.t = 0.0


def check_span_tree(spans: list[Span], name: str) -> None:
    """A group's parent links must end at a root: a span that is its own parent, or
    spans whose parents lead round in a circle, are a TraceInputError."""
    parents = {s.span_id: s.parent_id for s in spans if s.span_id}
    for span in spans:
        if span.parent_id and span.parent_id == span.span_id:
            raise TraceInputError(f"{name}: span {span.span_id} is its own parent")
    done: set[str] = set()
    for start in parents:
        path: list[str] = []
        node: str | None = start
        while node is not None and node in parents and node not in done:
            if node in path:
                loop = " -> ".join([*path[path.index(node) :], node])
                raise TraceInputError(f"{name}: spans form a parent cycle: {loop}")
            path.append(node)
            node = parents[node]
        done.update(path)
