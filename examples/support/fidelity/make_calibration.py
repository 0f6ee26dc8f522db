"""Generate the user-fidelity calibration set: 72 simulated users' conversations, each
labelled by two reviewers.

The conversations (`items.yaml`) are played by proctor's loopback user model
(ScriptedUserModel) in four invented customer scenarios against a fixed agent script:
faithful users (some casual in tone), and users failing in each way it injects (ending
early, leaking, inventing an id, rescuing, speaking as the assistant, restarting,
disclosing early, giving up), here delivered as if no guard had caught them. Each item
is what the fidelity judge sees in a run: the user's scenario as the prompt, the
transcript as the subject (proctor.run.fidelity). The reviewers, Noor Haddad and Tomás
Ibarra, are invented and simulated: each reads a conversation's true score (the injected
failure) and slips now and then by a point (seeded), Tomás a little stricter, so people
disagree on a few items, as they do. `labels.csv` is in the format `proctor calibrate`
reads (item, label, labeller, slice, rubric).

    python examples/support/fidelity/make_calibration.py          # (re)write both files
    python examples/support/fidelity/make_calibration.py --check  # exit 1 if they differ
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

from proctor.judge.views import transcript
from proctor.labels.label_file import Label, write_generated_set
from proctor.run.scripteduser import FAILURES, UNGUARDED, ScriptedUserModel
from proctor.run.simulator import user_prompt
from proctor.tasks.models import UserSpec

SEED = 20261205
HERE = Path(__file__).resolve().parent
SCRIPT = "examples/support/fidelity/make_calibration.py"
ITEMS = HERE / "items.yaml"
LABELS = HERE / "labels.csv"
RUBRIC = "user-fidelity"
REVIEWERS = (("Noor Haddad", 0.0), ("Tomás Ibarra", -0.2))
#: Failures a conversation can carry (a malformed reply is never a message).
KINDS = tuple(k for k in FAILURES if k != "malformed") + UNGUARDED
#: The true score of each kind (the rubric's scale): steering and early disclosure are
#: serious, the rest break the simulation.
TRUTH = {"faithful": 4, "casual": 3, "rescues": 2, "discloses": 2} | {
    k: 1 for k in KINDS if k not in ("rescues", "discloses")
}


def _spec(persona: str, goal: str, facts: list[tuple[str, str, list[str]]]) -> UserSpec:
    return UserSpec.model_validate(
        {
            "persona": persona,
            "goals": [goal],
            "facts": [{"name": n, "value": v, "asked_by": a} for n, v, a in facts],
            "unknown": ["the order's tracking number"],
        }
    )


#: (opening, scenario, the agent's lines: one per fact it asks for, then its report,
#: the user's faithful answers, the agent's final answer).
SCENARIOS: list[tuple[str, UserSpec, list[str], list[str], str]] = [
    (
        "Cancel order A-100 because I changed my mind.",
        _spec(
            "A customer who ordered a desk lamp and no longer wants it.",
            "have order A-100 cancelled",
            [("email", "sam.k@example.com", ["email"]), ("phone number", "555-0142", ["phone"])],
        ),
        [
            "What is the email address on your account?",
            "Order A-100 is cancelled. Is there anything else?",
        ],
        ["It is sam.k@example.com."],
        "Order A-100 is cancelled.",
    ),
    (
        "Please send order B-311 to my new address.",
        _spec(
            "A customer who moved last week and writes politely.",
            "have order B-311 delivered to the new address",
            [
                ("email", "ana.p@example.org", ["email"]),
                ("new address", "12 Elm Street, Springfield", ["address"]),
            ],
        ),
        [
            "Which email address is on the account?",
            "What is the new delivery address?",
            "The address of order B-311 is updated. Anything else?",
        ],
        ["ana.p@example.org", "It's 12 Elm Street, Springfield."],
        "Order B-311 will go to 12 Elm Street, Springfield.",
    ),
    (
        "The kettle from order C-778 arrived broken; I would like a refund.",
        _spec(
            "A customer annoyed by a broken kettle, short in replies.",
            "get a refund for order C-778",
            [
                ("email", "lee.w@example.net", ["email"]),
                ("damage", "the lid is cracked", ["damage"]),
            ],
        ),
        [
            "Could you confirm the email on the order?",
            "What damage did you find on the kettle?",
            "Order C-778 is refunded. Can I help with anything else?",
        ],
        ["lee.w@example.net", "The lid is cracked."],
        "Order C-778 is refunded in full.",
    ),
    (
        "I need a meeting room for my team on Friday.",
        _spec(
            "An office manager booking rooms, brisk and clear.",
            "book a room for Friday",
            [("team size", "6 people", ["team size"]), ("time", "10:00 to 11:00", ["time"])],
        ),
        [
            "What is the team size?",
            "At what time?",
            "Room R-4 is booked for Friday, 10:00 to 11:00. Anything else?",
        ],
        ["6 people.", "10:00 to 11:00."],
        "Room R-4 is booked for Friday 10:00-11:00.",
    ),
]
CASUAL = ("yeah ", "ok ", "um ")


def _conversation(
    scenario: tuple[str, UserSpec, list[str], list[str], str],
    kind: str,
    rng: random.Random,
) -> tuple[str, str]:
    """(the user's prompt, the transcript) of one simulated user of `kind`."""
    opening, spec, agent, answers, final = scenario
    script: list[str | dict[str, Any]] = list(answers)
    if kind == "casual":
        script = [rng.choice(CASUAL) + a[0].lower() + a[1:] for a in answers]
    fail = None if kind in ("faithful", "casual") else kind
    stops = kind in ("ends_early", "gives_up")
    at = 0 if kind == "discloses" else rng.randrange(len(agent) - 1 if stops else len(agent))
    model = ScriptedUserModel(script, fail=fail, at=at, persist=True)
    prompt = user_prompt(spec, opening)
    messages = [{"role": "system", "content": prompt}]
    turns: list[tuple[str, str, str | None]] = [("User", opening, None)]
    ended = False
    for line in agent:
        messages.append({"role": "user", "content": line})
        reply = json.loads(model.complete(messages, 0))
        messages.append({"role": "assistant", "content": reply["message"]})
        turns += [("Agent", line, None), ("User", reply["message"], reply["stop_reason"])]
        if reply["stop"]:
            ended = True
            break
    if not ended or turns[-2][1] == agent[-1]:
        turns.append(("Agent (final answer)", final, None))
    else:
        turns.append(("Agent (final answer)", "The customer left before it was done.", None))
    return prompt, transcript(turns)


def _items(rng: random.Random) -> list[dict[str, Any]]:
    kinds = ["faithful"] * 20 + ["casual"] * 4 + [k for k in KINDS for _ in range(6)]
    items = []
    for n, kind in enumerate(kinds):
        scenario = SCENARIOS[n % len(SCENARIOS)]
        prompt, subject = _conversation(scenario, kind, rng)
        items.append(
            {"id": f"user-{n + 1:02d}", "slice": kind, "prompt": prompt, "subject": subject}
        )
    return items


def _labels(items: list[dict[str, Any]], rng: random.Random) -> list[Label]:
    labels = []
    for item in items:
        truth = TRUTH[item["slice"]]
        for reviewer, lean in REVIEWERS:
            slip = rng.choice([-1, 1]) if rng.random() < 0.1 else 0
            score = max(1, min(4, round(truth + lean) + slip))
            labels.append(Label(item["id"], str(score), reviewer, item["slice"], RUBRIC))
    return labels


def main(argv: list[str]) -> int:
    rng = random.Random(SEED)
    items = _items(rng)
    labels = _labels(items, rng)
    return write_generated_set(ITEMS, items, LABELS, labels, script=SCRIPT, check="--check" in argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
