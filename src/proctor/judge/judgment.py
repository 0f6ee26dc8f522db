"""What a judge is: something that scores a view of a trial on a rubric, or prefers one
of two, and says why before it says how much.

A JudgeView is everything the judge is shown, and nothing more: the task's prompt, the
subject (the text being judged), and only what the rubric lets it see. Its canonical
form is the judge cache's key (with the rubric version and the judge's fingerprint), so a
judge's verdict on the same inputs is computed once (docs/architecture.md, Judges).

A JudgeError is the harness's failure, never the agent's: an endpoint that kept failing,
or a judge whose answers stayed malformed after its retries. It never reads as a pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from proctor.core.jsonvalues import digest
from proctor.core.results import Usage
from proctor.tasks.rubrics import Rubric

Winner = Literal["1", "2", "tie"]


class JudgeError(Exception):
    """The judge gave no valid verdict (after its retries); `usage` is what it spent."""

    def __init__(self, message: str, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.usage = usage or Usage()


@dataclass(frozen=True)
class JudgeView:
    """What one judgment reads. `agent_model` is not shown to a model judge; it is kept
    so a simulated judge can prefer its own family, and it is part of the cache key."""

    prompt: str
    subject: tuple[str, ...]
    shown: tuple[tuple[str, Any], ...] = ()
    agent_model: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "prompt": self.prompt,
            "subject": list(self.subject),
            "shown": {name: value for name, value in self.shown},
            "agent_model": self.agent_model,
        }

    @property
    def text(self) -> str:
        """The subject as one text (several occurrences numbered)."""
        if len(self.subject) == 1:
            return self.subject[0]
        return "\n\n".join(f"[{i}] {s}" for i, s in enumerate(self.subject, 1))

    @property
    def key(self) -> str:
        return digest(self.to_dict(), 32)


@dataclass(frozen=True)
class Judgment:
    score: int
    justification: str
    confidence: float = 1.0
    usage: Usage = field(default_factory=Usage)
    attempts: int = 1
    note: str = ""  # what was corrected in the answer (a confidence clamped to 0–1)

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "justification": self.justification,
            "confidence": self.confidence,
            "usage": self.usage.to_dict(),
            "attempts": self.attempts,
            **({"note": self.note} if self.note else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Judgment:
        return cls(
            int(data["score"]),
            str(data["justification"]),
            float(data["confidence"]),
            Usage.stored(data["usage"]),
            int(data["attempts"]),
            str(data.get("note", "")),
        )


@dataclass(frozen=True)
class Preference:
    """Which of two subjects, as shown (first = "1"), the judge prefers; "tie" allowed."""

    winner: Winner
    justification: str
    confidence: float = 1.0
    usage: Usage = field(default_factory=Usage)
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "winner": self.winner,
            "justification": self.justification,
            "confidence": self.confidence,
            "usage": self.usage.to_dict(),
            **({"note": self.note} if self.note else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Preference:
        winner = data["winner"]
        assert winner in ("1", "2", "tie")
        return cls(
            winner,
            str(data["justification"]),
            float(data["confidence"]),
            Usage.stored(data["usage"]),
            str(data.get("note", "")),
        )


@runtime_checkable
class Judge(Protocol):
    """A judge: `name` and `model` for people, `fingerprint` for records and the cache
    (it changes when anything that changes the verdicts does: model, settings, prompt)."""

    name: str
    model: str

    @property
    def fingerprint(self) -> str: ...

    async def score(self, rubric: Rubric, view: JudgeView) -> Judgment: ...

    async def prefer(self, rubric: Rubric, first: JudgeView, second: JudgeView) -> Preference: ...
