"""Three answers, not two: what a text reader says of a check (docs/architecture.md, Reading).

A reader answers `holds`, `violated` or `undecided`, with the sentence and the reason. An
`undecided` check carries core.results.UNDECIDED in its evidence: it neither passes nor
fails its trial, and a deciding one makes the trial `needs_review` unless a calibrated
judge the task names settles it (run.trial.decide). Claims are read by the reader of the
task's language: English (grade.claims), Spanish (grade.spanish); a language without a
claim lexicon is undecided.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from typing import Any, Literal

from proctor.core.results import UNDECIDED
from proctor.grade.claims import (
    HARD,
    NEGATOR,
    NO,
    NOT,
    Claim,
    ClaimReading,
    Token,
    Undecided,
    clause_start,
    negates,
    normalise,
    read_english,
    token_words,
    tokenize,
)
from proctor.grade.lexicon import phrases, primary, words
from proctor.grade.spanish import read_spanish
from proctor.grade.terms import term_matches

Answer = Literal["holds", "violated", "undecided"]
#: A term that says a negation itself ("cannot", "not found") or a fact (a number, an
#: id) is read as written: what is negated is not its meaning (grade/lexicons/en.yaml:
#: negative_terms, negative_suffixes).
_NEGATIVE_TERM = re.compile(
    r"\b(?:"
    + "|".join(re.escape(w) for w in sorted(words("en", "negative_terms")))
    + r")\b|"
    + "|".join(re.escape(w) for w in sorted(words("en", "negative_suffixes")))
    + r"|\d"
)

_READERS = {"en": read_english, "es": read_spanish}
#: Readings remembered: a pure function of its text, and the trials of a task (a regrade
#: grades them one after another) mostly give the same answer. Few: a key is a whole
#: answer, and answers can be hundreds of kilobytes.
_REMEMBERED = 256


@lru_cache(maxsize=_REMEMBERED)
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
    confirmed = _confirmation(answer, language) if requested else None
    if confirmed is not None:  # "ho gaya": the action asked for is said done
        return ClaimReading((Claim(phrase, confirmed, (), ()),))
    reason = f"no claim lexicon for language {primary(language)!r}"
    return ClaimReading((), (Undecided(answer.strip()[:200], reason),))


def _confirmation(answer: str, language: str | None) -> str | None:
    """The sentence in which a language with only a confirmation lexicon (Urdu) says the
    action asked for is done, outside a question and a negation; None when it does not."""
    negators = words(language, "negators")
    for sentence in re.split(r"(?<=[.!?\u06d4\u061f])\s*|\n", answer):
        if not sentence.strip() or sentence.rstrip().endswith(("?", "\u061f")):
            continue
        low = sentence.casefold()
        if any(n in low.split() for n in negators):
            continue
        if any(" ".join(p) in low for p in phrases(language, "confirmations")):
            return sentence.strip()
    return None


def undecided_evidence(found: tuple[Undecided, ...] | list[Undecided]) -> dict[str, Any]:
    """The evidence an undecided check carries: why, and the sentences."""
    first = found[0]
    return {
        UNDECIDED: first.reason,
        "reading": "undecided",
        "sentences": [u.sentence for u in found[:5]],
    }


#: Why a mention is undecided: a keyword under a negation may mean its opposite.
NEGATED_MENTION = "the term is said only under a negation, which a keyword cannot read"
_SENTENCE_STOPS = ".!?\n\u06d4\u061f"


@lru_cache(maxsize=_REMEMBERED)
def unread_mention(
    text: str, term: str, language: str | None, inflect: bool = False
) -> Undecided | None:
    """Why `term`, found in `text`, cannot be read as said: every occurrence lies under a
    negation ("INC-7 is not closed", "no review is needed", "no se ha cerrado": in its
    clause; in a language with only a list of negators, in its sentence), or the language
    has no negation lexicon at all. None when one occurrence is asserted, when the term
    is itself negative or a fact (read as written), or when it is not found."""
    base = primary(language)
    if _NEGATIVE_TERM.search(term.casefold()):
        return None
    matches = term_matches(text, term.strip(), inflect)
    if not matches:
        return None
    if base not in ("en", "es") and not words(language, "negators"):
        why = f"no negation lexicon for language {base!r}: {NEGATED_MENTION}"
        return Undecided(_sentence(text, matches[0].start()), why)
    if all(_under_negation(text, m.start(), language) for m in matches):
        return Undecided(_sentence(text, matches[0].start()), NEGATED_MENTION)
    return None


def _sentence(text: str, at: int) -> str:
    """The sentence holding position `at`."""
    start = max(text.rfind(c, 0, at) for c in _SENTENCE_STOPS) + 1
    ends = [i for i in (text.find(c, at) for c in _SENTENCE_STOPS) if i >= 0]
    return text[start : min(ends) + 1 if ends else len(text)].strip()


def _under_negation(text: str, at: int, language: str | None) -> bool:
    """Is the occurrence at `at` negated: before it in its clause (English, Spanish), or
    anywhere in its sentence (a language with only negators: Urdu puts the negation after
    the object)?"""
    base = primary(language)
    if base not in ("en", "es"):
        said = _sentence(text, at).casefold().split()
        return any(w.strip(".,;:!?\u06d4\u061f") in words(language, "negators") for w in said)
    before = text[max(0, at - 300) : at]
    cut = max(before.rfind(c) for c in ".!?\n") + 1
    if not _may_negate(before[cut:], base):
        return False
    window = normalise(before[cut:]) + " \u2063"
    tokens = tokenize(window)
    if not tokens:
        return False
    here = len(tokens)
    tokens = tokens + _STAND_IN
    start = clause_start(tokens, here) if base == "en" else _clause_from(tokens, here)
    negative = _clause_negatives(base)
    if base == "en":
        return any(negates(tokens, k) or tokens[k].low in negative for k in range(start, here))
    return any(tokens[k].low in negative for k in range(start, here))


#: The occurrence's stand-in after the words before it (_under_negation).
_STAND_IN = tokenize("x")


@cache
def _clause_negatives(base: str) -> frozenset[str]:
    """The negative words that negate an occurrence after them in its clause, besides
    English's negators (`negates` reads those in context)."""
    if base == "en":
        return words("en", "nothing") | words("en", "clause_negatives")
    return words("es", "negators") | words("es", "negative_words")


@cache
def _negatives(base: str) -> frozenset[str]:
    """Every word that may negate an occurrence after it in its clause (_under_negation)."""
    found = _clause_negatives(base)
    return NEGATOR | {NOT, NO} | found if base == "en" else found


def _may_negate(before: str, base: str) -> bool:
    """Can the words `before` an occurrence (in its sentence) negate it? Not when none of
    them is a negative word and normalising leaves them as they are (an ASCII text with
    no apostrophe, no dash and no `cannot`): a test cheaper than reading its clause."""
    if not before.isascii() or normalise(before) != before:
        return True
    return not _negatives(base).isdisjoint(token_words(before))


def _clause_from(tokens: list[Token], here: int) -> int:
    """Where the Spanish clause holding token `here` starts (grade.spanish's breaks)."""
    stops = HARD | {","} | words("es", "breaks") | words("es", "hypothetical")
    k = here - 1
    while k >= 0 and tokens[k].low not in stops:
        k -= 1
    return k + 1
