"""Loopback user models for tests/test_simulated_user.py (`--user-model FILE.py:NAME`)."""

from __future__ import annotations

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
