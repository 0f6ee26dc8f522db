"""Rubric files: what a model judge is asked, on which scale, and what it may see.

A rubric is a versioned YAML/JSON file a task names under `expect.judge`. Every score of
its scale has a description and at least one example, so the judge (and the people who
calibrate it) read the same anchors; the pass threshold is a score of the scale. The
rubric's version is its content hash: any change to the question, the scale or what the
judge sees makes a new version, which voids the calibrations of the old one
(docs/architecture.md, Judges). Loading reports every problem as `file:line: field:
message`, like task files.
"""

from __future__ import annotations

import hashlib
import json
from functools import cached_property
from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
)

from proctor.core.documents import read_model
from proctor.tasks.models import Severity

#: What a rubric may show the judge besides the subject and the task's prompt;
#: `reference` is the text the task's `expect.judge` entry gives (tasks/models.py).
Shown = Literal["answer", "messages", "tool_calls", "final_state", "expected", "reference"]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScalePoint(_Spec):
    score: int
    description: str = Field(min_length=1)
    examples: list[str] = Field(min_length=1)


class ToolSubject(_Spec):
    """The text judged is an argument of the calls the agent made to `tool`."""

    tool: str = Field(min_length=1)
    argument: str = Field(min_length=1)


class Rubric(_Spec):
    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.:-]+$")
    title: str | None = None
    question: str = Field(min_length=1)
    criteria: list[str] = Field(min_length=1)
    scale: list[ScalePoint] = Field(min_length=2)
    pass_threshold: int
    severity: Severity = "high"
    #: `user_turns`: the conversation of a model-played user, for the simulator's fidelity
    #: (proctor.run.fidelity), with the user's scenario as the judge's prompt.
    subject: Literal["answer", "user_turns"] | ToolSubject = "answer"
    shows: list[Shown] = Field(default_factory=list)

    @field_validator("scale")
    @classmethod
    def _distinct(cls, scale: list[ScalePoint]) -> list[ScalePoint]:
        scores = [p.score for p in scale]
        if len(set(scores)) != len(scores):
            raise ValueError(f"scale scores must be distinct, got {scores}")
        return scale

    @field_validator("pass_threshold")
    @classmethod
    def _on_the_scale(cls, threshold: int, info: ValidationInfo) -> int:
        scale = info.data.get("scale")
        if scale is None:  # the scale itself is wrong: reported there
            return threshold
        scores = [p.score for p in scale]
        if threshold not in scores:
            raise ValueError(f"{threshold} is not a score of the scale {sorted(scores)}")
        if threshold == min(scores):
            raise ValueError("the lowest score of the scale: nothing could fail")
        return threshold

    @cached_property
    def version(self) -> str:
        """The content hash: formatting and key order do not change it, content does."""
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    @property
    def scores(self) -> list[int]:
        return sorted(p.score for p in self.scale)

    def passes(self, score: float) -> bool:
        return score >= self.pass_threshold

    @property
    def subject_tool(self) -> str | None:
        return self.subject.tool if isinstance(self.subject, ToolSubject) else None

    def describe_subject(self) -> str:
        if isinstance(self.subject, ToolSubject):
            return f"the `{self.subject.argument}` the agent wrote in `{self.subject.tool}` calls"
        if self.subject == "user_turns":
            return "conversation with a model-played user"
        return "the agent's final answer"


def load_rubric(path: str | Path) -> Rubric:
    """Read one rubric file; every problem is a SpecError line with file:line."""
    return read_model(Path(path), Rubric.model_validate, "a rubric file holds one mapping")
