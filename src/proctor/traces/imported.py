"""An imported session: a recorded agent run as the trace events a live trial produces.

Every importer builds sessions with the SessionBuilder, which writes events in exactly the
shapes the ToolGateway and the simulated user emit (`env/gateway.py`, `env/user.py`), so
graders, metrics and reports work on them unchanged.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

from proctor.agents.pricing import PriceTable, call_cost
from proctor.core.bounded import MAX_DEPTH
from proctor.core.trace import TraceEvent
from proctor.env.user import is_affirmative

HarnessStatus = Literal["error", "timeout"]


class TraceInputError(ValueError):
    """A trace file that cannot be read or graded; `str()` is one line for the user."""


#: The most bytes one record of a trace file may hold: a line, a one-document file, an
#: archive member once inflated. Read up to this and no further, so a 300 MB line or a
#: member that inflates a thousandfold costs at most this much memory.
MAX_RECORD_BYTES = 64 * 1024 * 1024


#: Statuses a source can record that grading cannot recover from the events.
HARNESS_STATUSES: dict[str, HarnessStatus] = {"error": "error", "timeout": "timeout"}


@dataclass
class Session:
    """One recorded session. `final_state` only when the source carries it (outcome path
    checks need it); `status` only when the source recorded a harness failure."""

    id: str
    events: list[TraceEvent]
    task_id: str | None = None
    agent: str | None = None
    model: str | None = None
    final_state: dict[str, Any] | None = None
    status: HarnessStatus | None = None
    error: str | None = None
    latency_s: float | None = None
    trace_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def answer(self) -> str:
        answers = [e.data.get("text", "") for e in self.events if e.kind == "answer"]
        return str(answers[-1]) if answers else ""

    @property
    def prompt(self) -> str:
        """The user's first message: what a replay asks the agent."""
        for e in self.events:
            if e.kind == "message" and e.data.get("role") == "user":
                return str(e.data.get("content", ""))
        return ""

    def calls(self) -> list[tuple[str, Any]]:
        """(tool, args) of every proposed call, in order."""
        return [
            (e.data["tool"], e.data.get("args")) for e in self.events if e.kind == "tool_proposal"
        ]


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_NOT_BRACKET = str.maketrans("", "", "".join(chr(c) for c in range(128) if chr(c) not in "[]{}"))


def _depth(text: str) -> int:
    """How deep JSON text nests, strings left out: checked before `json.loads` recurses.
    A line with fewer brackets than the limit cannot nest past it (most lines: no scan)."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return 0
    depth = deepest = 0
    for ch in _STRING.sub("", text).translate(_NOT_BRACKET):
        depth += 1 if ch in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def parse_bounded_json(path: Path | str, where: int, text: str) -> Any:
    """JSON text of a trace file starting at line `where` (0: a member of an archive, no
    line), nesting checked first: a one-line TraceInputError, never a RecursionError."""

    def place(line: int) -> str:
        return f"{path}:{line}" if where else str(path)

    if _depth(text) > MAX_DEPTH:
        raise TraceInputError(f"{place(where)}: nested deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceInputError(f"{place(where + exc.lineno - 1)}: not JSON: {exc.msg}") from None
    except ValueError as exc:  # a number of more than 4,300 digits
        raise TraceInputError(f"{place(where)}: not JSON proctor reads: {exc}") from None


def parse_json(text: Any) -> Any:
    """A JSON value from text when it is JSON; otherwise the text itself. JSON text in a
    field (tool arguments, a tool result, a span attribute) nested past MAX_DEPTH is a
    TraceInputError: `json.loads` would recurse until Python's stack gives out."""
    if not isinstance(text, str):
        return text
    if _depth(text) > MAX_DEPTH:
        raise TraceInputError(f"a JSON text in a field nests deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text
    except ValueError as exc:  # a number of more than 4,300 digits
        raise TraceInputError(f"a JSON text in a field proctor cannot read: {exc}") from None


def read_bounded(stream: IO[bytes], place: str) -> bytes:
    """The rest of `stream` (a file, an archive member as it inflates), refused once past
    MAX_RECORD_BYTES without reading further."""
    chunks: list[bytes] = []
    total = 0
    while total <= MAX_RECORD_BYTES:
        chunk = stream.read(min(1 << 20, MAX_RECORD_BYTES + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
    raise TraceInputError(f"{place}: more than {MAX_RECORD_BYTES:,} bytes in one record")


def read_line(stream: IO[bytes], place: str) -> bytes:
    """The next line of `stream` (b"" at its end), refused once past MAX_RECORD_BYTES."""
    raw = stream.readline(MAX_RECORD_BYTES + 1)
    if len(raw) > MAX_RECORD_BYTES:
        raise TraceInputError(f"{place}: more than {MAX_RECORD_BYTES:,} bytes in one line")
    return raw


class SessionBuilder:
    """Appends gateway-shaped events with increasing `seq`."""

    def __init__(self) -> None:
        self.events: list[TraceEvent] = []
        self._tools: dict[str, str] = {}  # call id -> tool name
        self._calls = 0

    def emit(self, kind: str, data: dict[str, Any], t: float = 0.0) -> TraceEvent:
        event = TraceEvent(len(self.events) + 1, round(t, 6), kind, data)
        self.events.append(event)
        return event

    def model_call(
        self,
        model: str,
        input_tokens: Any,
        output_tokens: Any,
        prices: PriceTable,
        *,
        cost_usd: Any = None,
        latency_s: Any = None,
        t: float = 0.0,
    ) -> None:
        """A model call with its figures as recorded, None where the source left one out
        ("not measured", docs/architecture.md, Verdicts). A call the source gave no cost is
        priced from the counts, as a live call is (`agents/pricing.record_call`): not
        measured for counts it cannot price, and marked `unpriced` for a model `prices`
        does not know. traces/validation.py judges the values and flags bad ones."""
        data = {
            "model": model,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cost_usd": cost_usd,
            "latency_s": latency_s,
        }
        if cost_usd is None:
            data["cost_usd"], unpriced = call_cost(prices, model, input_tokens, output_tokens)
            if unpriced:
                data["unpriced"] = True
        self.emit("model_call", data, t)

    def message(self, role: str, content: str, t: float = 0.0) -> None:
        """A message; a user message after an assistant's marks that one as a question to
        the user, and a yes is a confirmation (as with the simulated user)."""
        last = self.events[-1] if self.events else None
        asked = (
            role == "user"
            and last is not None
            and last.kind == "message"
            and last.data.get("role") == "assistant"
        )
        if asked and last is not None:
            last.data["to"] = "user"
        self.emit("message", {"role": role, "content": content}, t)
        if asked and last is not None and is_affirmative(content):
            self.emit("confirmation", {"question": last.data["content"], "reply": content}, t)

    def tool_call(self, tool: str, args: Any, call_id: str | None = None, t: float = 0.0) -> str:
        self._calls += 1
        call_id = call_id or f"c{self._calls}"
        self._tools[call_id] = tool
        self.emit("tool_proposal", {"call_id": call_id, "tool": tool, "args": args}, t)
        return call_id

    def tool_result(self, call_id: str, result: Any, t: float = 0.0) -> None:
        tool = self._tools.get(call_id, "")
        self.emit("tool_result", {"call_id": call_id, "tool": tool, "result": result}, t)

    def tool_error(self, call_id: str, code: str, message: str, t: float = 0.0) -> None:
        data = {"call_id": call_id, "tool": self._tools.get(call_id, ""), "code": code}
        self.emit("tool_error", {**data, "error": message}, t)

    def answer(self, text: str, t: float = 0.0) -> None:
        self.emit("answer", {"text": text}, t)

    def build(self, session_id: str, **fields: Any) -> Session:
        if not any(e.kind == "answer" for e in self.events):
            self.answer("", self.events[-1].t if self.events else 0.0)
        return Session(session_id, self.events, **fields)
