"""Generate the document-request calibration set: 64 messages, each labelled by two analysts.

The messages (`messages.yaml`) are written for the example from `wording.py`'s parts, half
in English and half in Urdu, in every mix of plain or coded document names, courtesy,
instructions, reasons and threats, so the set spans the rubric's scale. The analysts,
Sana Qureshi and Hamza Malik, are invented and simulated: each reads a message's true
quality (`judges.quality`) and slips now and then by a point (seeded), Hamza a little
stricter, so people disagree on a few messages, as they do. `labels.csv` is in the
format `proctor calibrate` reads (item, label, labeller, slice, rubric).

    python examples/kyc/make_calibration.py          # (re)write messages.yaml, labels.csv
    python examples/kyc/make_calibration.py --check  # exit 1 if the committed files differ
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

from proctor import JudgeView, load_module_from_path
from proctor.labels.label_file import Label, write_generated_set

SEED = 20250212
HERE = Path(__file__).resolve().parent
SCRIPT = "examples/kyc/make_calibration.py"
MESSAGES = HERE / "messages.yaml"
LABELS = HERE / "labels.csv"
wording: Any = load_module_from_path(HERE / "wording.py")
judges: Any = load_module_from_path(HERE / "judges.py")

NAMES = {
    "en": ["Sara Khan", "Daniel Okoro", "Maria Costa", "Tom Becker", "Aisha Rahman", "Leo Park"],
    "ur": ["علی رضا", "فاطمہ نقوی", "عمران شیخ", "زینب حسین", "بلال احمد", "حنا قریشی"],
}
KINDS = ["passport", "proof_of_address", "source_of_funds", "bank_statement"]
ANALYSTS = (("Sana Qureshi", 0.0), ("Hamza Malik", -0.2))


def _messages(rng: random.Random) -> list[dict[str, Any]]:
    items = []
    for n in range(64):
        language = "en" if n % 2 == 0 else "ur"
        style = wording.Style(
            greeting=rng.random() < 0.6,
            thanks=rng.random() < 0.5,
            plain=rng.random() < 0.7,
            how=rng.choice(["full", "full", "short", "none"]),
            why=rng.random() < 0.35,
            threat=rng.random() < 0.12,
            sign=rng.random() < 0.5,
        )
        documents = sorted(rng.sample(KINDS, rng.choice([1, 1, 2])))
        text = wording.message(rng.choice(NAMES[language]), documents, language, style)
        slice_ = {"en": "english", "ur": "urdu"}[language]
        items.append({"id": f"msg-{n + 1:02d}", "slice": slice_, "subject": text})
    return items


def _labels(items: list[dict[str, Any]], rng: random.Random) -> list[Label]:
    labels = []
    for item in items:
        truth = judges.quality(None, JudgeView("", (item["subject"],)))
        for analyst, lean in ANALYSTS:
            slip = rng.choice([-1, 1]) if rng.random() < 0.1 else 0
            score = max(1, min(4, round(truth + lean) + slip))
            labels.append(Label(item["id"], str(score), analyst, item["slice"], "document-request"))
    return labels


def main(argv: list[str]) -> int:
    rng = random.Random(SEED)
    items = _messages(rng)
    labels = _labels(items, rng)
    return write_generated_set(
        MESSAGES, items, LABELS, labels, script=SCRIPT, check="--check" in argv
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
