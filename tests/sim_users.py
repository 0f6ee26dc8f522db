"""Loopback user models for tests/test_simulated_user.py (`--user-model FILE.py:NAME`)."""

from __future__ import annotations

from proctor.run.scripteduser import FAILURES, ScriptedUserModel

SCRIPT = ["It is sam.k@example.com."]

good = ScriptedUserModel(SCRIPT)
#: Every attempt at the first turn fails this way (the trial is sim_error).
persistent = {mode: ScriptedUserModel(SCRIPT, fail=mode, persist=True) for mode in FAILURES}
#: Only the first attempt fails: a guard rejects it, the retry is delivered.
once = {mode: ScriptedUserModel(SCRIPT, fail=mode) for mode in FAILURES}
globals().update({f"{mode}_always": m for mode, m in persistent.items()})
globals().update({f"{mode}_once": m for mode, m in once.items()})


class Replayed(ScriptedUserModel):
    """`good`'s fingerprint, but no model behind it: only the cache can answer."""

    def complete(self, messages: list[dict[str, str]], seed: int) -> str:
        raise AssertionError("the user model was called: the cache should have answered")


replayed = Replayed(SCRIPT)
