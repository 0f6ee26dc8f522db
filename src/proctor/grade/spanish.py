"""Reading claims in Spanish: where does an answer assert that an action happened?

The verb of a tool's claim (`closed`: close) has its Spanish lemmas in the lexicon
(grade/lexicons/es.yaml: `cerrar`), whose preterite and participles are generated
(grade.conjugation). An occurrence is a claim when asserted in its clause: a preterite
("cerré", "se canceló"), or a participle after a perfect ("he cerrado", "habíamos
cerrado"), a copula ("fue cancelado", "quedó cerrada", "está reservada") or on its own in
a status line ("Cancelado: A-2", "Hecho: R-4 reservada"). It is no claim when a negation
or a negative word precedes it in its clause ("no he cerrado", "ningún pedido fue
cancelado"), under a modal, subjunctive, conditional or future ("podría ser aprobado",
"haya cerrado", "habría cerrado", "será enviado"), in a condition ("si se cancela"), a
question, someone else's quoted words, a state found ("ya estaba cerrado"), or a status
line with nothing ("Cancelados: ninguno"). A negation frame ("no es cierto que") that a
clause break keeps from the occurrence, a negation in the clause before a `que` that
opens the occurrence's ("nadie ha confirmado que ..."), or a quotation that never closes,
leaves it undecided (docs/architecture.md, Reading).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Literal

from proctor.grade.claims import (
    TOO_LONG,
    UNCLOSED_QUOTE,
    UNSCOPED_NEGATION,
    UNSCOPED_NEGATIVE_WORD,
    Claim,
    ClaimReading,
    Undecided,
    verb_of,
)
from proctor.grade.conjugation import lemmas_of, participles, preterite
from proctor.grade.lexicon import phrases, words
from proctor.grade.quotation import Quotations

_TOKEN = re.compile(r"\w+(?:[-_/.:]\w+)*|[¿?¡!.;:,()«»\"\n]")
_SENTENCE = re.compile(r"[^.!?\n]*(?:[.!?]+|\n|$)")
_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2019": "'", "\u2018": "'"})
#: The longest sentence read, in characters.
MAX_SENTENCE = 600
_HARD = frozenset(".!?;:()\n")
#: Words that make `que` part of a connective ("así que", "ya que"), not a new clause.
_JOINED_QUE = frozenset(["así", "ya", "para", "hasta", "antes", "después"])
_CLITICS = frozenset(["lo", "la", "los", "las", "le", "les", "me", "te", "se", "nos", "os"])
_ADVERBS = frozenset(
    ["ya", "todavía", "aún", "también", "correctamente", "ahora", "recién", "finalmente", "hoy"]
)


@cache
def _forms(verb: str) -> dict[str, str]:
    """Each Spanish form that may claim `verb`, with its kind (preterite, participle)."""
    forms: dict[str, str] = {}
    for lemma in lemmas_of(verb):
        forms.update(dict.fromkeys(preterite(lemma), "preterite"))
        forms.update(dict.fromkeys(participles(lemma), "participle"))
    return forms


def read_spanish(answer: str, phrase: str, requested: bool = False) -> ClaimReading:
    """What a Spanish `answer` claims of `phrase` (the English past of a tool's verb)."""
    verb = verb_of(phrase)
    forms = _forms(verb) if verb is not None else {}
    if not forms:
        if not answer.strip():
            return ClaimReading()
        reason = f"no Spanish verb for {phrase!r} in the lexicon"
        return ClaimReading((), (Undecided(answer.strip()[:200], reason),))
    claims: list[Claim] = []
    undecided: list[Undecided] = []
    text = answer.translate(_QUOTES)
    quotations = Quotations.of(text)  # over the whole answer: a quotation holds full stops
    for m in _SENTENCE.finditer(text):
        sentence = m.group(0).strip()
        if not sentence:
            continue
        offset = m.start() + len(m.group(0)) - len(m.group(0).lstrip())
        found_tokens = list(_TOKEN.finditer(sentence))
        tokens = [t.group(0) for t in found_tokens]
        lows = [t.lower() for t in tokens]
        hits = [i for i, w in enumerate(lows) if w in forms]
        if requested:
            hits += _confirmations(lows)
        for i in hits:
            quoted = quotations.at(offset + found_tokens[i].start())
            if quoted == "open":
                undecided.append(Undecided(sentence[:200], UNCLOSED_QUOTE))
            if quoted is not None:
                continue
            if len(sentence) > MAX_SENTENCE:
                undecided.append(Undecided(sentence[:200], TOO_LONG))
                continue
            found = _read(tokens, lows, i, forms.get(lows[i], "confirmation"), phrase)
            if isinstance(found, Claim):
                claims.append(found)
            elif isinstance(found, str):
                undecided.append(Undecided(sentence, found))
    return ClaimReading(tuple(claims), tuple(undecided))


def _confirmations(lows: list[str]) -> list[int]:
    """Where a confirmation ("listo", "ya está") opens the sentence or follows a stop."""
    hits = []
    for phrase in phrases("es", "confirmations"):
        n = len(phrase)
        for k in range(len(lows) - n + 1):
            opens = k == 0 or lows[k - 1] in _HARD or lows[k - 1] in ("¡", ",")
            if opens and tuple(lows[k : k + n]) == phrase:
                hits.append(k + n - 1)
    return hits


def _read(tokens: list[str], lows: list[str], i: int, kind: str, phrase: str) -> Claim | str | None:
    """The claim the occurrence at i makes; a reason when undecided; None when none."""
    if "¿" in lows[:i] or lows[-1] == "?":
        return None
    start, end = _clause(lows, i)
    framed = _frame(lows, i)
    if framed is not None:
        return framed or None
    if _negated_above(lows, start):
        return UNSCOPED_NEGATIVE_WORD
    clause = lows[start:i]
    if clause and (clause[0] in words("es", "hypothetical") or lows[start - 1 : start] == ["si"]):
        return None
    if any(w in words("es", "negators") or w in words("es", "negative_words") for w in clause):
        return None
    if any(w in words("es", "modals") or w in words("es", "unasserted") for w in clause):
        return None
    if kind == "participle" and not _participle_asserted(lows, i, start, end):
        return None
    ids = _entities(tokens, lows, start, end)
    return Claim(phrase, " ".join(tokens[start:end]), ids, ())


def _clause(lows: list[str], i: int) -> tuple[int, int]:
    """The clause holding token i: between stops, commas and words that open a clause."""
    breaks = words("es", "breaks") | words("es", "hypothetical")
    start = i
    while start > 0 and not (lows[start - 1] in _HARD or lows[start - 1] in (",", "«", "»")):
        if lows[start - 1] in breaks:
            start -= 1
            break
        start -= 1
    end = i + 1
    while end < len(lows) and not (lows[end] in _HARD or lows[end] in (",", "«", "»")):
        if lows[end] in breaks:
            break
        end += 1
    if start < i and lows[start] in breaks - words("es", "hypothetical"):
        start += 1
    return start, end


def _negated_above(lows: list[str], start: int) -> bool:
    """Does a clause opened by `que` follow a negation in the clause before it? "Nadie
    ha confirmado que ..." denies it, "No le dije a nadie que lo cancelé" and "Nadie duda
    de que ..." assert it, "Ninguno de los pedidos que revisé fue cancelado" is a relative
    clause: which, the reader cannot tell (English reads them: grade.claims)."""
    if start < 2 or lows[start - 1] != "que" or lows[start - 2] in _JOINED_QUE:
        return False
    negative = words("es", "negators") | words("es", "negative_words")
    k = start - 2
    while k >= 0 and not (lows[k] in _HARD or lows[k] == ","):
        if lows[k] in negative:
            return True
        k -= 1
    return False


def _frame(lows: list[str], i: int) -> str | Literal[False] | None:
    """A negation frame before the occurrence: False when it introduces its clause, a
    reason when a break lies between, None when there is none."""
    stops = _HARD | {","} | words("es", "breaks")
    for frame in phrases("es", "negation_frames"):
        n = len(frame)
        for k in range(i - n + 1):
            if tuple(lows[k : k + n]) == frame:
                between = lows[k + n : i]
                return UNSCOPED_NEGATION if any(w in stops for w in between) else False
    return None


def _participle_asserted(lows: list[str], i: int, start: int, end: int) -> bool:
    """A participle is asserted after a perfect or a copula, or on its own (a status line
    or a result: "Hecho: R-4 reservada"), unless a state found ("ya estaba") or a
    status line with nothing ("Cancelados: ninguno") says otherwise."""
    k = i - 1
    while k >= start and (lows[k] in _CLITICS or lows[k] in _ADVERBS):
        k -= 1
    before = lows[k] if k >= start else ""
    if before in words("es", "state"):
        return False
    if i + 2 < len(lows) + 1 and i + 1 < len(lows) and lows[i + 1] == ":":
        return not (i + 2 < len(lows) and lows[i + 2] in words("es", "nothing"))
    return True


def _entities(tokens: list[str], lows: list[str], start: int, end: int) -> tuple[str, ...]:
    """Identifiers in the clause (a letter and a digit), but not after a preposition."""
    preps = words("es", "prepositions")
    ids = []
    for k in range(start, end):
        t = tokens[k]
        named = any(c.isdigit() for c in t) and any(c.isalpha() for c in t)
        if named and not (k > 0 and lows[k - 1] in preps):
            ids.append(t)
    return tuple(ids)
