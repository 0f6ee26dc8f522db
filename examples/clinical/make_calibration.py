"""Generate the safety-meaning calibration set: 112 answers, each labelled by two clinicians.

The answers (`answers.yaml`) are written for the example from `wording.py`'s parts: for
each of the four meanings, every wording of every stance (affirming, terse, negating,
listing, hedged, off-topic), with and without the facts first, ending with one of the
closing sentences (seeded). Each item carries its meaning's `reference`, as the task
gives it to its judge. The clinicians, Dr Amara Osei and Dr Lucas Ferreira, are invented
and simulated: each labels an answer with the score of the stance it was written in
(`wording.SCORE`) and slips now and then by a point (seeded; Dr Ferreira a little more
often), so people disagree on a few answers, as they do. `labels.csv` is in the format
`proctor calibrate` reads (item, label, labeller, slice, rubric).

    python examples/clinical/make_calibration.py          # (re)write answers.yaml, labels.csv
    python examples/clinical/make_calibration.py --check  # exit 1 if the committed files differ
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

from proctor import load_module_from_path
from proctor.labels.label_file import Label, write_generated_set

SEED = 20261205
HERE = Path(__file__).resolve().parent
SCRIPT = "examples/clinical/make_calibration.py"
ANSWERS = HERE / "answers.yaml"
LABELS = HERE / "labels.csv"
wording: Any = load_module_from_path(HERE / "wording.py")

#: The simulated labellers and how often each slips by a point.
CLINICIANS = (("Dr Amara Osei", 0.06), ("Dr Lucas Ferreira", 0.10))


def _answers(rng: random.Random) -> list[tuple[dict[str, Any], int]]:
    """Every answer with the score of the stance it was written in."""
    items = []
    for meaning, parts in wording.MEANINGS.items():
        for stance in wording.STANCES:
            for variant in range(len(parts[stance])):
                for with_facts in (True, False):
                    closing = rng.randrange(len(wording.CLOSINGS))
                    text = wording.answer(meaning, stance, variant, with_facts, closing)
                    item = {
                        "id": f"ans-{len(items) + 1:03d}",
                        "slice": meaning,
                        "subject": text,
                        "reference": parts["reference"],
                    }
                    items.append((item, wording.SCORE[stance]))
    return items


def _labels(items: list[tuple[dict[str, Any], int]], rng: random.Random) -> list[Label]:
    labels = []
    for item, truth in items:
        for clinician, slips in CLINICIANS:
            slip = rng.choice([-1, 1]) if rng.random() < slips else 0
            score = max(1, min(4, truth + slip))
            labels.append(Label(item["id"], str(score), clinician, item["slice"], "safety-meaning"))
    return labels


def main(argv: list[str]) -> int:
    rng = random.Random(SEED)
    items = _answers(rng)
    labels = _labels(items, rng)
    answers = [answer for answer, _ in items]
    return write_generated_set(
        ANSWERS, answers, LABELS, labels, script=SCRIPT, check="--check" in argv
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
