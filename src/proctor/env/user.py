"""The task's simulated user: scripted replies, a model for the rest, and confirmations
recorded as events.

Scripted lines come first (`turns`, then the first matching `replies` rule); what they
leave unanswered goes to the trial's Responder when the run has a user model
(proctor.run.simulator), else the user says nothing. A Responder's failure is kept
here, because the agent may swallow the exception raised into it: the trial reads
`failure` for its status (docs/architecture.md, Simulated users).
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from proctor.core.trace import USER_SIM_KEY, Recorder, TraceEvent
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


class SimulatorFailed(RuntimeError):
    """The model playing the user gave no acceptable reply: the trial is `sim_error`."""


class Responder(Protocol):
    """What answers the questions scripted lines leave unanswered (a model user)."""

    def answer(self, question: str, recorder: Recorder) -> str: ...

    def said(self, question: str, reply: str) -> None:
        """A scripted line was said: the model's view of the conversation holds it."""


class SimulatedUser:
    """Answers `ask_user` with the task's `user.turns` in order, then from its
    `user.replies`, first matching rule wins, then from `responder` if there is one."""

    def __init__(
        self, spec: UserSpec, recorder: Recorder, responder: Responder | None = None
    ) -> None:
        self.spec = spec
        self.recorder = recorder
        self.turns = list(spec.turns)
        self.responder = responder
        #: What the responder raised (the first time): the trial's status reads it.
        self.failure: Exception | None = None
        #: Seconds spent waiting on the responder (a model) in waits that ended, and since
        #: when the current wait runs (None: no question is waiting), replaced as one
        #: value so that another thread never reads one half of a change.
        self._clock: tuple[float, float | None] = (0.0, None)
        self._asking = 0
        self._clock_lock = threading.Lock()

    def waited(self, now: float) -> float:
        """Seconds (time.monotonic) the agent has waited on the model user up to `now`:
        the agent's turn does not count them against its limit."""
        waited, since = self._clock
        return waited + (0.0 if since is None else max(0.0, now - since))

    @contextlib.contextmanager
    def asked(self) -> Iterator[None]:
        """The user's clock runs while any question to a model user waits for its answer,
        from the moment it is asked (an async agent's question waits for a thread before
        it is answered: proctor.env.toolbox) until the answer is back."""
        with self._clock_lock:
            self._asking += 1
            if self._asking == 1:
                self._clock = (self._clock[0], time.monotonic())
        try:
            yield
        finally:
            with self._clock_lock:
                self._asking -= 1
                waited, since = self._clock
                if self._asking == 0 and since is not None:
                    self._clock = (waited + time.monotonic() - since, None)

    def reply(self, question: str) -> str:
        question = str(question)
        self.recorder.emit("message", {"role": "assistant", "to": "user", "content": question})
        answer = self.turns.pop(0) if self.turns else ""
        scripted = bool(answer)
        for rule in [] if answer else self.spec.replies:
            if _matches(rule.when, question):
                answer, scripted = rule.say, True
                break
        if self.responder is not None:
            if scripted:
                self.responder.said(question, answer)
            else:
                answer = self._ask_model(question, self.responder)
        self.recorder.emit("message", {"role": "user", "content": answer})
        if is_affirmative(answer):
            self.recorder.emit("confirmation", {"question": question, "reply": answer})
        return answer

    @property
    def remote(self) -> bool:
        """A reply may wait on a model: an async agent's toolbox asks off its event loop."""
        return self.responder is not None

    def _ask_model(self, question: str, responder: Responder) -> str:
        if self.failure is not None:  # the conversation broke down: it stays broken
            raise SimulatorFailed(str(self.failure))
        with self.asked():
            try:
                return responder.answer(question, self.recorder)
            except Exception as exc:
                self.failure = exc
                raise


def recorded_turns(events: Iterable[TraceEvent]) -> list[dict[str, Any]]:
    """The conversation of a trial a model user played, turn by turn, as an export keeps
    it for replay (`proctor run --user-replay`): what the agent said, what the user
    answered, and for a turn the model answered, its `stop`, `stop_reason` and
    `disclosed` (its `user_sim` note, which has the trial's `seed`, comes before the
    answer). Empty when no model played."""
    turns: list[dict[str, Any]] = []
    asked: str | None = None
    note: dict[str, Any] | None = None
    for e in events:
        data = e.data
        sim = e.noted(USER_SIM_KEY)
        if sim is not None:
            note = sim if "seed" in sim else None
        elif e.kind == "message" and data.get("to") == "user":
            asked, note = str(data.get("content") or ""), None
        elif e.kind == "message" and data.get("role") == "user" and asked is not None:
            turn: dict[str, Any] = {"agent": asked, "user": str(data.get("content") or "")}
            if note is not None:
                turn["model"] = {
                    "stop": bool(note.get("stop")),
                    "stop_reason": note.get("stop_reason"),
                    "disclosed": list(note.get("disclosed") or []),
                }
            turns.append(turn)
            asked, note = None, None
    return turns if any("model" in t for t in turns) else []


def is_affirmative(reply: str) -> bool:
    """A yes to a question: recorded as a `confirmation` (here and in imported sessions)."""
    return bool(reply and _AFFIRMATIVE.match(reply))


def _matches(when: str, question: str) -> bool:
    if when == "*":
        return True
    if when == "confirm":
        return bool(_CONFIRM_QUESTION.search(question))
    return when.lower() in question.lower()
