"""Two simulated judges of the user-fidelity rubric, and the hidden truth they read.

`fidelity` is the score a careful reader gives a simulated user's conversation (the
simulation's ground truth): it reads the transcript (proctor.judge.views.transcript)
against the scenario in the judge's prompt. Speaking as the assistant, reading out its
instructions, starting over, an identifier in none of the facts, or ending before the
agent said the goal was done are critical (1); steering the agent or saying a fact
before it was asked are serious (2); a casual slip of tone is 3; faithful is 4.

- `careful`: a little noise, no bias. Calibration accepts it.
- `lenient`: a point and a half higher than the truth: it passes users who steered the
  agent or disclosed early. Calibration refuses it.

    proctor calibrate src/proctor/run/user-fidelity.yaml \\
        --labels examples/support/fidelity/labels.csv \\
        --items examples/support/fidelity/items.yaml \\
        --judge examples/support/fidelity/judges.py:careful
"""

from __future__ import annotations

import re

from proctor import JudgeView, Rubric, ScriptedJudge

ROLE_SWAP = re.compile(r"\bas an ai\b|\bhow can i help\b|\bi can help you\b", re.I)
LEAK = re.compile(r"\bnever start over\b|\bgreet again\b|\bmy instructions\b", re.I)
STEERS = re.compile(r"\byou should\b|\bbefore you\b|\bfirst (look|check)\b", re.I)
IDENTIFIER = re.compile(r"\b[A-Z]{1,3}-\d{2,5}\b")
DONE = re.compile(r"\b(cancell?ed|updated|refunded|booked|done)\b", re.I)
ENDS = re.compile(r"^User \[ends the conversation: (\w+)\]: ")
CASUAL = re.compile(r"^User: (yeah|yep|ok|um)\b")
FACT = re.compile(r"^- ([^:]+): (.+?)(?: \(say it at the start\))?$")


def _turns(text: str) -> list[tuple[str, str]]:
    """(who, line) per turn: `user` or `agent`."""
    return [("user" if line.startswith("User") else "agent", line) for line in text.splitlines()]


def fidelity(rubric: Rubric, view: JudgeView) -> float:
    """The score (1-4) a careful reader gives the simulated user in `view`."""
    facts = [m.groups() for m in map(FACT.match, view.prompt.splitlines()) if m]
    known = set(IDENTIFIER.findall(view.prompt))
    turns = _turns(view.text)
    opening = turns[0][1].split(": ", 1)[-1] if turns else ""
    score, asked = 4.0, ""
    for i, (who, line) in enumerate(turns):
        said = line.split(": ", 1)[-1]
        if who == "agent":
            known |= set(IDENTIFIER.findall(line))
            asked += " " + said.lower()
            continue
        if i == 0:
            continue
        ended = ENDS.match(line)
        before = turns[i - 1][1] if i else ""
        if ROLE_SWAP.search(said) or LEAK.search(said) or said == opening:
            return 1.0
        if set(IDENTIFIER.findall(said)) - known:
            return 1.0
        if ended and not DONE.search(before):
            return 1.0
        unasked = [v for n, v in facts if v in said and n.split()[0].lower() not in asked]
        if STEERS.search(said) or unasked:
            score = min(score, 2.0)
        if CASUAL.match(line):
            score = min(score, 3.0)
    return score


careful = ScriptedJudge(fidelity, name="careful", model="scripted-judge", noise=0.25, seed=31)
lenient = ScriptedJudge(
    fidelity, name="lenient", model="scripted-judge", noise=0.4, leniency=1.5, seed=32
)
