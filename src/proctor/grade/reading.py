"""Three answers, not two: what a text reader says of a check (docs/architecture.md, Reading).

A reader answers `holds`, `violated` or `undecided`, with the sentence and the reason. An
`undecided` check carries core.results.UNDECIDED in its evidence: it neither passes nor
fails its trial, and a deciding one makes the trial `needs_review` unless a calibrated
judge the task names settles it (run.trial.decide). Claims are read by the reader of the
task's language: English (grade.claims), Spanish (grade.spanish); a language without a
claim lexicon is undecided.
"""

from __future__ import annotations

from typing import Any, Literal

from proctor.core.results import UNDECIDED
from proctor.grade.claims import ClaimReading, Undecided, read_english
from proctor.grade.lexicon import primary
from proctor.grade.spanish import read_spanish

Answer = Literal["holds", "violated", "undecided"]
#: The checks text readers make, by name before any `:` (their undecided rates are
#: reported per run: decide.summary.undecided_rates).
READER_CHECKS = frozenset({"false_success", "declined_out_of_scope", "grounded"})

_READERS = {"en": read_english, "es": read_spanish}


def read_claim(
    answer: str, phrase: str, language: str | None, requested: bool = False
) -> ClaimReading:
    """What `answer`, in `language`, claims of `phrase`; `requested`: the user asked for
    the action, so a bare confirmation ("you're all set", "listo") claims it."""
    reader = _READERS.get(primary(language))
    if reader is not None:
        return reader(answer, phrase, requested)
    if not answer.strip():
        return ClaimReading()
    reason = f"no claim lexicon for language {primary(language)!r}"
    return ClaimReading((), (Undecided(answer.strip()[:200], reason),))


def undecided_evidence(found: tuple[Undecided, ...] | list[Undecided]) -> dict[str, Any]:
    """The evidence an undecided check carries: why, and the sentences."""
    first = found[0]
    return {
        UNDECIDED: first.reason,
        "reading": "undecided",
        "sentences": [u.sentence for u in found[:5]],
    }
