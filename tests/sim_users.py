"""Loopback user models for tests/test_simulated_user.py (`--user-model FILE.py:NAME`)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

from proctor import load_module_from_path
from proctor.run.scripteduser import FAILURES, ScriptedUserModel
from proctor.run.simulator import user_seed

SCRIPT = ["It is sam.k@example.com."]
TASK = "cancel-eligible-order"

good = ScriptedUserModel(SCRIPT)


class FailureByTrial(ScriptedUserModel):
    """Trial i of TASK fails the i-th way of FAILURES (read from its user seed): one run
    injects every failure. `persist`: every attempt fails (sim_error), else the first."""

    def __init__(self, persist: bool) -> None:
        super().__init__(SCRIPT, persist=persist, name="failure-by-trial")
        self.models = {
            user_seed(TASK, i): ScriptedUserModel(SCRIPT, fail=mode, persist=persist)
            for i, mode in enumerate(FAILURES)
        }

    def complete(self, messages: list[dict[str, str]], seed: int) -> str:
        return self.models[seed].complete(messages, seed)


always = FailureByTrial(persist=True)
once = FailureByTrial(persist=False)


class Replayed(ScriptedUserModel):
    """`good`'s fingerprint, but no model behind it: only the cache can answer."""

    def complete(self, messages: list[dict[str, str]], seed: int) -> str:
        raise AssertionError("the user model was called: the cache should have answered")


replayed = Replayed(SCRIPT)


class FailsFirstTrial(ScriptedUserModel):
    """`good`'s replies, except that trial 0 of TASK ends early on every attempt: one
    `sim_error` in a run of two trials, and another user model than `good` in the manifest
    (and another fingerprint, so `good`'s cached replies are not its own)."""

    def __init__(self) -> None:
        super().__init__(SCRIPT, persist=True, name="fails-first-trial")
        self.broken = ScriptedUserModel(SCRIPT, fail="ends_early", persist=True)

    def complete(self, messages: list[dict[str, str]], seed: int) -> str:
        if seed == user_seed(TASK, 0):
            return self.broken.complete(messages, seed)
        return super().complete(messages, seed)


fails_first = FailsFirstTrial()


class Slow(ScriptedUserModel):
    """`good` (or `script`), taking `pause` seconds over each reply (a slow endpoint)."""

    def __init__(self, pause: float, script: list[str] = SCRIPT) -> None:
        super().__init__(script, name=f"slow-{pause}")
        self.pause = pause

    def complete(self, messages: list[dict[str, str]], seed: int) -> str:
        time.sleep(self.pause)
        return super().complete(messages, seed)


#: Two replies of 0.8 s: within the user's own bound of `--timeout 2`.
slow = Slow(0.8)
#: Two replies of 1.5 s: past the user's own bound of `--timeout 2`.
stalled = Slow(1.5)

_support: Any = load_module_from_path(
    Path(__file__).resolve().parents[1] / "examples" / "support" / "agents.py"
)


class Pausing:
    """examples/support's `conversational`, thinking `pause` seconds before it starts."""

    name = "pausing-conversational"

    def __init__(self, pause: float) -> None:
        self.pause = pause

    async def run(self, agent_input: Any, toolbox: Any) -> Any:
        await asyncio.sleep(self.pause)
        return await _support.conversational.run(agent_input, toolbox)


pausing = Pausing(1.0)


#: Gives up at its first turn with a plausible decline: no guard can tell; the fidelity
#: judge does (proctor.run.fidelity).
gives_up = ScriptedUserModel(SCRIPT, fail="gives_up", persist=True, name="gives-up")

#: Asks for the account's email, looks the order up, and never cancels it: a failed
#: trial a model user talked in.
asks_only = _support.ScriptedAgent(
    {
        TASK: _support.Plan(
            steps=(
                _support.Step(ask="What is the email address on your account?"),
                _support.get("A-100"),
            ),
            answer="I looked order A-100 up.",
        )
    },
    name="asks-only",
)

#: `conversational`, with its closing question in other words: the agents differ from
#: the second turn on.
rephrasing = _support.ScriptedAgent(
    {
        TASK: _support.Plan(
            steps=(
                _support.Step(ask="What is the email address on your account?"),
                _support.get("A-100"),
                _support.cancel("A-100"),
                _support.Step(ask="A-100 is cancelled now. Anything more I can do?"),
            ),
            answer="Order A-100 is cancelled.",
        )
    },
    name="rephrasing",
)

#: Another user model than `good`: its own closing words.
other = ScriptedUserModel(
    [*SCRIPT, {"message": "No, that's it. Bye.", "stop": True, "stop_reason": "done"}],
    name="other-user",
)


class Gathering(ScriptedUserModel):
    """`good`, whose first reply in each trial waits (up to `within` seconds) until the
    first questions of `parties` trials are all being answered at once: a user model
    that needs many questions in flight, as a busy endpoint batching requests does. Once
    it has waited in vain it stops waiting, so a run that cannot gather ends soon."""

    def __init__(self, parties: int, within: float) -> None:
        super().__init__(SCRIPT, name=f"gathering-{parties}")
        self.parties, self.within = parties, within
        self.asked: set[int] = set()
        self.gathered = threading.Condition()
        self.gave_up = False

    def complete(self, messages: list[dict[str, str]], seed: int) -> str:
        with self.gathered:
            if seed not in self.asked:
                self.asked.add(seed)
                self.gathered.notify_all()
                full = self.gathered.wait_for(
                    lambda: self.gave_up or len(self.asked) >= self.parties, self.within
                )
                self.gave_up = self.gave_up or not full
        return super().complete(messages, seed)


#: More concurrent trials than asyncio's default pool has threads (32 at most).
GATHERED = 40
gathering = Gathering(GATHERED, within=3.0)
