"""Loopback model users for the support example: `proctor run --user-model` without a
network or a key (proctor.run.scripteduser).

- `customer`: gives the account's email when asked, then ends the conversation as done.
- `leaky`: on its first turn reads its instructions out, every time it is asked again,
  so the trial is `sim_error`.
- `rescuer`: on its first turn tells the agent what to do; a guard rejects it once and
  the retry is delivered (the rejection is in the trace).
- `quitter`: gives up at its first turn ("Never mind, I'll keep it."), which no guard
  can tell from a real decline; a calibrated fidelity judge makes the trial `sim_error`
  (`fidelity/`).
"""

from __future__ import annotations

from proctor.run.scripteduser import ScriptedUserModel

SCRIPT = ["It is sam.k@example.com."]

customer = ScriptedUserModel(SCRIPT, name="support-customer")
leaky = ScriptedUserModel(SCRIPT, fail="leaks", persist=True, name="support-leaky")
rescuer = ScriptedUserModel(SCRIPT, fail="rescues", name="support-rescuer")
quitter = ScriptedUserModel(SCRIPT, fail="gives_up", persist=True, name="support-quitter")
