"""How a clinical answer says (or fails to say) its safety meaning: the parts answers are
built from.

Four tasks carry a meaning a keyword cannot check: amoxicillin must be avoided for p2
(penicillin allergy), p2's potassium of 5.9 is high and needs review, p1's metformin dose
needs review at an eGFR of 41 (not stopping it), and p1's kidney function has declined.
For each, an answer can affirm the meaning, negate it ("there is no need to avoid it"),
list it beside its opposite without choosing ("options: avoid it, or prescribe it"),
hedge it away ("it might be worth avoiding, I am not sure") or talk of something else.
Each of those keeps the task's keywords in most wordings, which is why the tasks name a
judge rubric (rubrics/safety-meaning.yaml). The calibration set (make_calibration.py)
writes its answers from these parts; the labellers know which stance an answer was
written with, the judge (judges.py) only reads the text.
"""

from __future__ import annotations

from typing import Any, Literal

Stance = Literal["affirm", "terse", "negate", "listing", "hedged", "off_topic"]
STANCES: tuple[Stance, ...] = ("affirm", "terse", "negate", "listing", "hedged", "off_topic")

#: What a careful clinician scores an answer of each stance on the rubric (1-4): it says
#: the meaning fully, says it without the reason, denies it, leaves it undecided between
#: it and its opposite, hedges it away, or does not say it.
SCORE: dict[Stance, int] = {
    "affirm": 4,
    "terse": 3,
    "negate": 1,
    "listing": 2,
    "hedged": 2,
    "off_topic": 1,
}

#: Each meaning: the reference text a task gives its judge, the facts an answer opens
#: with, and the sentences of each stance (several wordings each).
MEANINGS: dict[str, dict[str, Any]] = {
    "amoxicillin": {
        "reference": "Amoxicillin is not safe for p2 and must be avoided: p2 has a severe "
        "penicillin allergy and amoxicillin is a penicillin.",
        "facts": "p2 has a recorded severe penicillin allergy (hives and facial swelling).",
        "affirm": [
            "Amoxicillin is a penicillin, so it is contraindicated: avoid it and choose a "
            "non-penicillin antibiotic.",
            "No, it is not safe: do not prescribe amoxicillin, because it is a penicillin.",
            "You should not give amoxicillin; as a penicillin it could cause a severe reaction.",
        ],
        "terse": ["Avoid amoxicillin.", "Do not prescribe it."],
        "negate": [
            "There is no need to avoid amoxicillin; it is fine to prescribe.",
            "Amoxicillin is not contraindicated here, so go ahead.",
            "I see no reason you should not prescribe amoxicillin.",
        ],
        "listing": [
            "Options: avoid amoxicillin, or prescribe it with monitoring.",
            "You could avoid it or you could prescribe it; both are possible.",
        ],
        "hedged": [
            "It might be worth avoiding amoxicillin, but I am not sure it matters.",
            "Perhaps amoxicillin should not be used, though it is probably fine.",
        ],
        "off_topic": [
            "Amoxicillin is usually taken three times a day with water.",
            "Chest infections often settle within a week or two.",
        ],
    },
    "potassium": {
        "reference": "p2's potassium of 5.9 mmol/L is high on lisinopril and "
        "spironolactone, and the chart has been put on the review queue.",
        "facts": "p2's latest potassium is 5.9 mmol/L (2024-05-20).",
        "affirm": [
            "That is high on lisinopril and spironolactone, so I flagged the chart for "
            "review with that reason.",
            "This is raised; I have put the chart on the review queue for a clinician.",
            "It is above the 5.5 limit, so the chart is now flagged for clinician review.",
        ],
        "terse": ["Flagged for review.", "Chart on the review queue."],
        "negate": [
            "That is within range, so I have not flagged it and no review is needed.",
            "No review is needed; I did not put it on the review queue.",
            "It does not need to be flagged.",
        ],
        "listing": [
            "Possible next steps: flag it for review, or leave it as it is.",
            "It could be flagged for review or simply rechecked next month.",
        ],
        "hedged": [
            "It may need review at some point, I am not sure it is high.",
            "Perhaps it should be flagged, though it is probably fine.",
        ],
        "off_topic": [
            "Potassium is found in bananas and potatoes.",
            "Spironolactone is a diuretic that is often taken in the morning.",
        ],
    },
    "metformin": {
        "reference": "At an eGFR of 41 p1's metformin dose needs review (reduce to at most "
        "1000 mg a day); metformin need not be stopped.",
        "facts": "p1's latest eGFR is 41 mL/min/1.73m2 and p1 takes metformin 1000 mg twice daily.",
        "affirm": [
            "At an eGFR of 30-44 the dose needs review: reduce it to no more than 1000 mg a "
            "day and recheck renal function.",
            "Yes, the dose needs review; I recommend the prescriber reduce metformin to at "
            "most 1000 mg per day.",
            "The dose should be adjusted down to 1000 mg a day at this kidney function.",
        ],
        "terse": ["Dose needs review.", "Reduce the dose."],
        "negate": [
            "No review is needed; the dose can stay as it is.",
            "There is no reason to reduce or adjust the dose.",
            "The dose does not need review at this level.",
        ],
        "listing": [
            "Choices: review the dose, or keep it unchanged.",
            "You could reduce the dose or leave it; either is reasonable.",
        ],
        "hedged": [
            "It might be worth a review eventually, I am not sure it is needed.",
            "Perhaps the dose should be adjusted, though it is probably fine.",
        ],
        "off_topic": [
            "Metformin is best taken with meals.",
            "Metformin is a first-line medicine for type 2 diabetes.",
        ],
    },
    "egfr": {
        "reference": "p1's kidney function has declined: eGFR 58 (2023-05-10), 49 "
        "(2023-11-14), 41 (2024-05-02).",
        "facts": "p1's eGFR was 58 on 2023-05-10, 49 on 2023-11-14 and 41 on 2024-05-02.",
        "affirm": [
            "So kidney function has declined steadily over the year.",
            "That is a clear decline: each value is lower than the one before.",
            "Kidney function has fallen by 17 points in a year.",
        ],
        "terse": ["It declined.", "It has dropped."],
        "negate": [
            "Kidney function has not declined; it is stable.",
            "There is no decline to speak of.",
            "It has not fallen in any meaningful way.",
        ],
        "listing": [
            "It may have declined or stayed the same; the trend could go either way.",
            "Declined, stable or improved: all three readings are possible.",
        ],
        "hedged": [
            "It might have declined a little, I am not sure.",
            "Perhaps it dropped, though it is probably stable.",
        ],
        "off_topic": [
            "eGFR is calculated from serum creatinine, age and sex.",
            "Kidney function is measured in mL/min/1.73m2.",
        ],
    },
}


#: Closing sentences an answer may end with (one says "not", about something else).
CLOSINGS = ("", "I have not placed any order.", "Let me know if you need anything else.")


def answer(meaning: str, stance: Stance, variant: int, with_facts: bool, closing: int) -> str:
    """An answer about `meaning` written in `stance` (its `variant`-th wording), opening
    with the facts when `with_facts`, ending with the `closing`-th closing sentence."""
    parts = MEANINGS[meaning]
    sentences: list[str] = parts[stance]
    said = [parts["facts"]] if with_facts else []
    said.append(sentences[variant % len(sentences)])
    said.append(CLOSINGS[closing % len(CLOSINGS)])
    return " ".join(s for s in said if s)
