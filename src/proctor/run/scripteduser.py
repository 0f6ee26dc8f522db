"""ScriptedUserModel: a loopback model user with injectable failures, for work without a
network (tests, demos): what ScriptedAgent is to agents and ScriptedJudge to judges.

It says its `script` in order, one line per turn, then ends the conversation as done.
`fail` makes one turn (`at`, counted from 0) go wrong in one of the ways the field's
simulators do (FAILURES, each caught by a guard; UNGUARDED, which no guard can tell from
a faithful reply and only the fidelity judge sees, proctor.run.fidelity); `persist`
makes every attempt at that turn go wrong (the trial becomes `sim_error`), otherwise
only the first (a guard rejects it and the retry is clean). It reads nothing but the
messages it is given, like a chat model (docs/architecture.md, Simulated users).
"""

from __future__ import annotations

import json
from typing import Any

from proctor.core.jsonvalues import digest
from proctor.run.simulator import FACTS, OPENING, RETRY_MARK, UPFRONT, agent_messages

FAILURES = (
    "ends_early",
    "leaks",
    "invents_id",
    "rescues",
    "swaps_roles",
    "restarts",
    "discloses",
    "malformed",
)
#: Gives up on its goal with a plausible decline before the agent could act.
UNGUARDED = ("gives_up",)
Line = str | dict[str, Any]


class ScriptedUserModel:
    def __init__(
        self,
        script: list[Line] | tuple[Line, ...] = (),
        *,
        fail: str | None = None,
        at: int = 0,
        persist: bool = False,
        name: str = "scripted-user",
    ) -> None:
        if fail is not None and fail not in FAILURES + UNGUARDED:
            raise ValueError(f"fail must be one of {', '.join(FAILURES + UNGUARDED)}")
        self.script = list(script)
        self.fail = fail
        self.at = at
        self.persist = persist
        self.name = name
        self.calls = 0

    @property
    def fingerprint(self) -> str:
        return digest(
            {
                "kind": "scripted",
                "script": self.script,
                "fail": self.fail,
                "at": self.at,
                "persist": self.persist,
            }
        )

    def complete(self, messages: list[dict[str, str]], seed: int) -> str:
        self.calls += 1
        turn = len(agent_messages(messages)) - 1
        retry = any(m["content"].startswith(RETRY_MARK) for m in messages)
        if self.fail is not None and turn == self.at and (self.persist or not retry):
            return self._failure(self.fail, messages)
        if turn < len(self.script):
            line = self.script[turn]
            reply = line if isinstance(line, dict) else {"message": line, "stop": False}
        else:
            reply = {"message": "Thanks, that's all.", "stop": True, "stop_reason": "done"}
        return json.dumps({"stop_reason": None, "disclosed": [], **reply})

    @staticmethod
    def _failure(kind: str, messages: list[dict[str, str]]) -> str:
        prompt = messages[0]["content"]
        asked = " ".join(agent_messages(messages)).lower()
        if kind == "malformed":
            return "Sure, go ahead."
        if kind == "restarts":
            message = _after(prompt, OPENING)
        elif kind == "discloses":
            message = f"By the way, it is {_unasked_fact(prompt, asked)}."
        else:
            message = {
                "ends_early": "Never mind, bye.",
                "gives_up": "Never mind, I'll keep it.",
                "leaks": "I should never start over or greet again, so: yes.",
                "invents_id": "It is order ZX-9917, I think.",
                "rescues": "You should look the order up before you cancel it.",
                "swaps_roles": "As an AI assistant, I can help you with that.",
            }[kind]
        stop = kind in ("ends_early", "gives_up")
        reason = {"ends_early": "done", "gives_up": "declined"}.get(kind)
        return json.dumps(
            {
                "message": message,
                "stop": stop,
                "stop_reason": reason,
                "disclosed": [],
            }
        )


def _after(prompt: str, marker: str) -> str:
    line = next(line for line in prompt.splitlines() if line.startswith(marker))
    return line[len(marker) :].strip()


def _unasked_fact(prompt: str, asked: str) -> str:
    """The value of the first fact whose name the agent's messages do not hold."""
    lines = prompt.splitlines()
    for line in lines[lines.index(FACTS) + 1 :]:
        if not line.startswith("- "):
            break
        name, value = line[2:].split(": ", 1)
        if name.lower() not in asked:
            return value.removesuffix(UPFRONT)
    raise ValueError("every fact was asked for: nothing to disclose early")
