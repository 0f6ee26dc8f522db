"""Trace events: the ordered record of a trial, and its JSON-lines form.

Events are plain slotted dataclasses, not pydantic models: a trial writes dozens of them
and the harness's own cost per trial is a feature we measure.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, TextIO

#: Key of a `note` event saying the agent stopped on a limit before answering; its value
#: names the limit (`max_steps_reached`) and is the name of the check that fails it.
STOPPED_KEY = "stopped"
#: Keys of the `note` events a model user's turns leave (proctor.run.simulator): a reply
#: it gave (`user_sim`: seed, attempt, stop, disclosed, what it spent), and one its guards
#: rejected (`user_rejected`: attempt, reply, why, what it spent).
USER_SIM_KEY = "user_sim"
USER_REJECTED_KEY = "user_rejected"
EventKind = Literal[
    "model_call",
    "tool_proposal",
    "policy_decision",
    "fault",
    "tool_result",
    "tool_error",
    "state_change",
    "state_rollback",
    "confirmation",
    "message",
    "answer",
    "note",
]


@dataclass(slots=True)
class TraceEvent:
    seq: int
    t: float
    kind: str
    data: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "t": self.t, "kind": self.kind, "data": self.data}

    def noted(self, key: str) -> dict[str, Any] | None:
        """The record this `note` holds under `key` (USER_SIM_KEY, ...); None when it is
        another event, or holds none there."""
        found = self.data.get(key) if self.kind == "note" else None
        return found if isinstance(found, dict) else None


@dataclass(slots=True)
class Trace:
    trial_id: str
    trace_id: str
    events: list[TraceEvent] = field(default_factory=list)

    def of_kind(self, *kinds: str) -> Iterator[TraceEvent]:
        return (e for e in self.events if e.kind in kinds)

    @property
    def prompt(self) -> str | None:
        """The first user message: the task prompt as the agent received it."""
        for event in self.events:
            if event.kind == "message" and event.data.get("role") == "user":
                return str(event.data.get("content", ""))
        return None

    @property
    def answer(self) -> str:
        for event in reversed(self.events):
            if event.kind == "answer":
                return str(event.data.get("text", ""))
        return ""


class Recorder:
    """Appends events with increasing `seq` and the simulated clock's time.

    `emitted` counts the events it wrote, so a trace shortened behind its back shows.
    """

    __slots__ = ("_at", "_stamp", "clock", "emitted", "events")

    def __init__(self, clock: SimClock) -> None:
        self.clock = clock
        self.events: list[TraceEvent] = []
        self.emitted = 0
        # the clock's time at the last event and its rounding: most events share a time
        self._at = self._stamp = 0.0

    def emit(self, kind: EventKind, data: dict[str, Any]) -> TraceEvent:
        self.emitted = seq = self.emitted + 1
        now = self.clock.now
        if now != self._at:
            self._at, self._stamp = now, round(now, 6)
        event = TraceEvent(seq, self._stamp, kind, data)
        self.events.append(event)
        return event


class SimClock:
    """A fixed clock per trial: starts at 0 s and moves only by the latencies it is given.

    `simulated` counts the seconds that no one measured: tool latencies, injected faults,
    waits, model calls their agent marked simulated. The rest was reported (a real model
    call's latency). Reports label simulated time as such.
    """

    __slots__ = ("now", "simulated")

    def __init__(self) -> None:
        self.now = 0.0
        self.simulated = 0.0

    def advance(self, seconds: float, *, simulated: bool = True) -> None:
        if seconds > 0:
            self.now += seconds
            if simulated:
                self.simulated += seconds


def write_jsonl(traces: Iterable[Trace], out: TextIO) -> None:
    """One JSON object per event, each carrying its trial and trace ids."""
    for trace in traces:
        for e in trace.events:
            row = {"trial_id": trace.trial_id, "trace_id": trace.trace_id, **e.to_dict()}
            out.write(json.dumps(row, default=str) + "\n")


def read_jsonl(lines: Iterable[str]) -> list[Trace]:
    """Inverse of `write_jsonl`; events are regrouped by trace id in file order."""
    traces: dict[str, Trace] = {}
    for line in lines:
        if not line.strip():
            continue
        row = json.loads(line)
        trace = traces.setdefault(row["trace_id"], Trace(row["trial_id"], row["trace_id"]))
        trace.events.append(TraceEvent(row["seq"], row["t"], row["kind"], row["data"]))
    return list(traces.values())
