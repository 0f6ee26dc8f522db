"""Two simulated judges of the safety-meaning rubric, and the reading they share.

`reads` is the judge's reading of an answer, not the truth: it finds the sentences that
state the reference's meaning (the cues of the meaning the reference names), then reads
each one's clause for a negation before the cue ("no need to avoid", "has not
declined"), the sentence for a hedge ("might", "perhaps", "not sure") and for a list
that sets the meaning beside its opposite ("options: ... or ..."). An answer that states
the meaning plainly scores 3, with its reason 4; hedged or listed 2; negated or absent 1.
It is a reading of the text, so it can be wrong; the calibration against two labellers
who know how each answer was written (make_calibration.py) measures how often.

- `careful`: the reading with a little noise. Calibration accepts it.
- `lenient`: scores a point higher and likes long answers: it passes hedged and listing
  answers. Calibration refuses it.

    proctor calibrate examples/clinical/rubrics/safety-meaning.yaml \\
        --labels examples/clinical/labels.csv --items examples/clinical/answers.yaml \\
        --judge examples/clinical/judges.py:careful
"""

from __future__ import annotations

import re

from proctor import JudgeView, Rubric, ScriptedJudge

#: Each meaning the judge knows: what in the reference names it, and the words that
#: state it in an answer.
CUES = (
    (
        re.compile(r"must be avoided"),
        re.compile(
            r"\b(?:avoid\w*|not safe|contraindicated|do not prescribe"
            r"|should not (?:give|prescribe|be used))\b"
        ),
    ),
    (
        re.compile(r"review queue"),
        re.compile(r"\b(?:flagged|review queue|flag(?:ged)? for (?:clinician )?review)\b"),
    ),
    (
        re.compile(r"dose needs review"),
        re.compile(r"\b(?:needs? (?:a )?(?:dose )?review|reduc\w*|adjust\w*)\b"),
    ),
    (
        re.compile(r"has declined"),
        re.compile(r"\b(?:declin\w*|fallen|fell|dropped|decreas\w*)\b"),
    ),
)
NEGATION = re.compile(r"\b(?:no|not|never|nothing|without)\b|n't\b")
HEDGE = re.compile(r"\b(?:might|may|perhaps|possibly|probably|could|not sure|unclear)\b")
LIST = re.compile(r"\b(?:options|choices|either|possible next steps|all three)\b")
SENTENCES = re.compile(r"(?<=[.!?])\s+")
CLAUSES = re.compile(r"[,;:]")


def _cue(view: JudgeView) -> re.Pattern[str] | None:
    reference = str(dict(view.shown).get("reference") or "")
    return next((said for names, said in CUES if names.search(reference)), None)


def _sentence_score(sentence: str, cue: re.Pattern[str]) -> int | None:
    """The score of one sentence that states the meaning; None when it does not."""
    low = sentence.casefold()
    for clause in CLAUSES.split(low):
        hit = cue.search(clause)
        if hit is None:
            continue
        if NEGATION.search(clause[: hit.start()]):
            return 1
        if HEDGE.search(low) or (" or " in low and LIST.search(low)):
            return 2
        return 4 if len(low.split()) >= 8 else 3
    return None


def reads(rubric: Rubric, view: JudgeView) -> float:
    """The score (1-4) this reading gives the answer in `view` for its reference."""
    cue = _cue(view)
    if cue is None:
        return 1.0
    scores = [s for part in SENTENCES.split(view.text) if (s := _sentence_score(part, cue))]
    if not scores or 1 in scores:  # unsaid, or said and denied
        return 1.0
    return float(min(scores))


careful = ScriptedJudge(reads, name="careful", model="scripted-judge", noise=0.2, seed=21)
lenient = ScriptedJudge(
    reads,
    name="lenient",
    model="scripted-judge",
    noise=0.5,
    leniency=1.0,
    length_bias=0.4,
    seed=22,
)
