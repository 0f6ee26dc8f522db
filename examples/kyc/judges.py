"""Two simulated judges of the document-request rubric, and the hidden truth they read.

`quality` is the score a careful analyst gives a request (the simulation's ground truth):
it reads back the features `wording.py` builds messages from. Documents named in plain
words and a courteous opening carry a message to a pass; internal codes or a threat keep
it below, whatever else it has. Both judges see that truth only through their faults:

- `careful`: a little noise, no bias. Calibration accepts it.
- `lenient`: scores a point higher than the truth and likes long messages (length bias),
  with more noise: the judge that passes what analysts fail. Calibration refuses it.

    proctor calibrate examples/kyc/rubrics/document-request.yaml \\
        --labels examples/kyc/labels.csv --items examples/kyc/messages.yaml \\
        --judge examples/kyc/judges.py:lenient
"""

from __future__ import annotations

from proctor import JudgeView, Rubric, ScriptedJudge

CODES = ("Missing documents:", "نامکمل دستاویزات")
COURTESY = ("Dear ", "Thank you", "محترم", "درخواست کا شکریہ")
HOW_FULL = ("reply to this message", "پیغام کے جواب میں")
HOW_SHORT = ("Upload them.", "اپ لوڈ کریں۔")
WHY = ("The law requires", "قانون کے مطابق")
THREAT = ("will be rejected", "مسترد کر دی جائے")


def _has(text: str, markers: tuple[str, ...]) -> bool:
    return any(marker in text for marker in markers)


def quality(rubric: Rubric, view: JudgeView) -> float:
    """The score (1-4) a careful analyst gives the request in `view`."""
    text = view.text
    score = 1.0
    score += 0.0 if _has(text, CODES) else 1.0
    score += 1.0 if _has(text, COURTESY) else 0.0
    score += 0.75 if _has(text, HOW_FULL) else 0.25 if _has(text, HOW_SHORT) else 0.0
    score += 0.5 if _has(text, WHY) else 0.0
    if _has(text, CODES):
        score = min(score, 2.0)
    if _has(text, THREAT):
        score = 1.0
    return max(1.0, min(4.0, score))


careful = ScriptedJudge(quality, name="careful", model="scripted-judge", noise=0.25, seed=11)
lenient = ScriptedJudge(
    quality,
    name="lenient",
    model="scripted-judge",
    noise=0.5,
    leniency=1.0,
    length_bias=0.4,
    seed=12,
)
