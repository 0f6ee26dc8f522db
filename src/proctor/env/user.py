"""The task's simulated user: scripted replies, and confirmations recorded as events."""

from __future__ import annotations

import re

from proctor.core.trace import Recorder
from proctor.tasks.models import UserSpec

_CONFIRM_QUESTION = re.compile(
    r"\b(confirm|proceed|go ahead|shall i|should i|ok to|okay to|do you want|would you like|"
    r"is it ok|can i)\b",
    re.IGNORECASE,
)
_AFFIRMATIVE = re.compile(
    r"^\s*(yes|yep|yeah|sure|ok|okay|confirm(ed)?|go ahead|please do|do it|proceed|correct"
    r"|s[íi]|vale|claro|de acuerdo)\b",  # a Spanish-speaking user's yes (seed 004's case)
    re.IGNORECASE,
)


class SimulatedUser:
    """Answers `ask_user` with the task's `user.turns` in order, then from its
    `user.replies`, first matching rule wins."""

    def __init__(self, spec: UserSpec, recorder: Recorder) -> None:
        self.spec = spec
        self.recorder = recorder
        self.turns = list(spec.turns)

    def reply(self, question: str) -> str:
        question = str(question)
        self.recorder.emit("message", {"role": "assistant", "to": "user", "content": question})
        answer = self.turns.pop(0) if self.turns else ""
        for rule in [] if answer else self.spec.replies:
            if _matches(rule.when, question):
                answer = rule.say
                break
        self.recorder.emit("message", {"role": "user", "content": answer})
        if is_affirmative(answer):
            self.recorder.emit("confirmation", {"question": question, "reply": answer})
        return answer


def is_affirmative(reply: str) -> bool:
    """A yes to a question: recorded as a `confirmation` (here and in imported sessions)."""
    return bool(reply and _AFFIRMATIVE.match(reply))


def _matches(when: str, question: str) -> bool:
    if when == "*":
        return True
    if when == "confirm":
        return bool(_CONFIRM_QUESTION.search(question))
    return when.lower() in question.lower()
