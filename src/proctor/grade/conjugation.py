"""Spanish verb forms that assert a past act, generated from a lemma (grade/lexicons/es.yaml).

The claim reader looks for the preterite ("cerré", "canceló") and the participle in its
four agreements ("cerrado", "cerradas"), made from the lemma's class (-ar, -er, -ir) by the
endings in the lexicon, with the first person's spelling change ("pagué", "marqué") and
the irregular participles it lists ("devuelto"). Stem changes of the present ("cierro")
never reach these forms, so no form is written by hand.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from proctor.grade.lexicon import lexicon


def _rules() -> dict[str, Any]:
    return dict(lexicon("es").get("conjugation") or {})


@cache
def preterite(lemma: str) -> tuple[str, ...]:
    """The six persons of the preterite of `lemma`."""
    rules = _rules()
    stem, kind = lemma[:-2], lemma[-2:]
    endings = rules["preterite"][kind]
    forms = [stem + ending for ending in endings]
    for tail, spelled in rules["spelling"].items():
        if lemma.endswith(tail) and endings[0].startswith(("é", "e")):
            forms[0] = lemma[: -len(tail)] + spelled + endings[0]
    return tuple(forms)


@cache
def participles(lemma: str) -> tuple[str, ...]:
    """The participle of `lemma` in its four agreements (masculine, feminine, plurals)."""
    rules = _rules()
    irregular = rules["irregular_participles"].get(lemma)
    base = irregular[:-1] if irregular else lemma[:-2] + rules["participle"][lemma[-2:]][:-1]
    return tuple(base + ending for ending in rules["agreement"])


def lemmas_of(english_verb: str) -> tuple[str, ...]:
    """The Spanish lemmas that claim the English verb of a tool's claim (`close`)."""
    return tuple(lexicon("es").get("verbs", {}).get(english_verb, ()))
