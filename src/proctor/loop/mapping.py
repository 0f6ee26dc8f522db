"""The monitor's mapping file: how production sessions become slices and signals.

Production logs carry no task ids and no tags, and name their fields their own way. The
mapping says (every field optional, unknown fields are errors with file:line):

    tags:                                # a session gets each tag whose rule holds
      cancellation: {tools: [orders.cancel]}       # it called one of these tools
      refund: {prompt: '(?i)refund'}               # its first user message matches (RE2)
      vip: {metadata: {tier: vip}}                 # its metadata has these values
    sessions: {sess-0001: cancel-eligible-order}   # session id -> a --suite task: graded
    fields:                              # metadata keys tried in order (defaults shown)
      time: [timestamp, started_at, time, created_at]
      prompt_version: [prompt_version]
      feedback: [feedback, user_feedback, rating]
      outcome: [outcome, resolved, success]
    escalation: [handoff.human]          # tools that hand the case to a person
    inverses: {orders.cancel: orders.reinstate}    # a write, and the write undoing it

A rule holds when each of its fields does (`tools`: any of them was called). A session
matched to a suite task (through `sessions`, or the task id it carries) also gets that
task's tags, so production slices and the suite's slices share names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from proctor.core.documents import SpecError, read_document, validated
from proctor.tasks.models import Pattern


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TagRule(_Spec):
    tools: list[str] = Field(default_factory=list)
    prompt: Pattern | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _says_something(self) -> TagRule:
        if not self.tools and self.prompt is None and not self.metadata:
            raise ValueError("a tag rule needs `tools`, `prompt` or `metadata`")
        return self


class Fields(_Spec):
    time: list[str] = Field(
        default_factory=lambda: ["timestamp", "started_at", "time", "created_at"]
    )
    prompt_version: list[str] = Field(default_factory=lambda: ["prompt_version"])
    feedback: list[str] = Field(default_factory=lambda: ["feedback", "user_feedback", "rating"])
    outcome: list[str] = Field(default_factory=lambda: ["outcome", "resolved", "success"])


class Mapping(_Spec):
    tags: dict[str, TagRule] = Field(default_factory=dict)
    sessions: dict[str, str] = Field(default_factory=dict)
    fields: Fields = Field(default_factory=Fields)
    escalation: list[str] = Field(default_factory=list)
    inverses: dict[str, str] = Field(default_factory=dict)

    @property
    def maps_anything(self) -> bool:
        return bool(self.tags or self.sessions)


def load_monitor_mapping(path: str | Path) -> Mapping:
    """The mapping in a YAML/JSON file; SpecError (file:line: field: message) if bad.
    A plain `{session id: task id}` file (what `grade --map` reads) is `sessions`."""
    path = Path(path)
    data, lines = read_document(path)
    if not isinstance(data, dict):
        raise SpecError.one(path, 1, "", "a mapping file holds a mapping")
    known = set(Mapping.model_fields)
    if data and not set(data) & known and all(isinstance(v, str) for v in data.values()):
        data = {"sessions": data}
        lines = {("sessions", *loc): line for loc, line in lines.items()}
    return validated(Mapping.model_validate, path, data, lines)
