"""How a term of a task matches the words of an answer (docs/architecture.md, Verdicts).

Every term matches whole words, ignoring case and spacing. On top of that:

- **spelling variants**: British and American spellings match each other, by rule
  (`cancelled`/`canceled`, `authorise`/`authorize`, `colour`/`color`, `centre`/`center`,
  `catalogue`/`catalog`, `analyse`/`analyze`) and by the word pairs in VARIANTS
  (`licence`/`license`, `enrol`/`enroll`, `e-mail`/`email`, ...);
- **inflections** (`must_not_mention` only): a word also matches its inflected forms, so
  `refund` finds refunds, refunded and refunding, and `cancelled` finds cancel and
  cancels; irregular verbs come from IRREGULAR (`send` finds sent). Derived words are
  other words: `cancel` does not find `cancellation`.
- **claims** read past forms: `past_forms("cancel")` is cancelled/canceled, the phrases a
  write tool without declared claims is claimed with.

The rules generate candidate forms; a form that is not an English word never occurs in an
answer, so generating one costs nothing.
"""

from __future__ import annotations

import re
from functools import lru_cache

#: Spellings that no suffix rule relates (each pair matches both ways).
VARIANTS: tuple[tuple[str, str], ...] = (
    ("licence", "license"),
    ("defence", "defense"),
    ("offence", "offense"),
    ("pretence", "pretense"),
    ("grey", "gray"),
    ("programme", "program"),
    ("enrol", "enroll"),
    ("enrolment", "enrollment"),
    ("fulfil", "fulfill"),
    ("instalment", "installment"),
    ("judgement", "judgment"),
    ("acknowledgement", "acknowledgment"),
    ("ageing", "aging"),
    ("aluminium", "aluminum"),
    ("mould", "mold"),
    ("plough", "plow"),
    ("jewellery", "jewelry"),
    ("cosy", "cozy"),
    ("cancellation", "cancelation"),
    ("email", "e-mail"),
)

#: Irregular verbs a tool may be named after: base, past tense, past participle.
IRREGULAR: tuple[tuple[str, str, str], ...] = (
    ("send", "sent", "sent"),
    ("resend", "resent", "resent"),
    ("pay", "paid", "paid"),
    ("prepay", "prepaid", "prepaid"),
    ("make", "made", "made"),
    ("give", "gave", "given"),
    ("take", "took", "taken"),
    ("write", "wrote", "written"),
    ("rewrite", "rewrote", "rewritten"),
    ("overwrite", "overwrote", "overwritten"),
    ("buy", "bought", "bought"),
    ("sell", "sold", "sold"),
    ("tell", "told", "told"),
    ("hold", "held", "held"),
    ("withhold", "withheld", "withheld"),
    ("set", "set", "set"),
    ("reset", "reset", "reset"),
    ("put", "put", "put"),
    ("cut", "cut", "cut"),
    ("shut", "shut", "shut"),
    ("split", "split", "split"),
    ("freeze", "froze", "frozen"),
    ("unfreeze", "unfroze", "unfrozen"),
    ("choose", "chose", "chosen"),
    ("draw", "drew", "drawn"),
    ("withdraw", "withdrew", "withdrawn"),
    ("lend", "lent", "lent"),
    ("spend", "spent", "spent"),
    ("build", "built", "built"),
    ("rebuild", "rebuilt", "rebuilt"),
    ("bring", "brought", "brought"),
    ("get", "got", "gotten"),
    ("keep", "kept", "kept"),
    ("leave", "left", "left"),
    ("lose", "lost", "lost"),
    ("find", "found", "found"),
    ("do", "did", "done"),
    ("undo", "undid", "undone"),
    ("redo", "redid", "redone"),
    ("begin", "began", "begun"),
    ("run", "ran", "run"),
    ("rerun", "reran", "rerun"),
    ("forgive", "forgave", "forgiven"),
    ("bind", "bound", "bound"),
    ("deal", "dealt", "dealt"),
    ("feed", "fed", "fed"),
    ("read", "read", "read"),
    ("lead", "led", "led"),
    ("meet", "met", "met"),
    ("hide", "hid", "hidden"),
    ("forget", "forgot", "forgotten"),
    ("say", "said", "said"),
    ("lay", "laid", "laid"),
    ("mislay", "mislaid", "mislaid"),
    ("sign", "signed", "signed"),
    ("upload", "uploaded", "uploaded"),
)

_PAST = {base: (past, part) for base, past, part in IRREGULAR}
_BASE_OF = {form: base for base, past, part in IRREGULAR for form in (past, part)}
_VOWELS = "aeiou"
#: Suffix pairs (British, American) for whole families of words.
_SUFFIXES: tuple[tuple[str, str], ...] = (
    ("isation", "ization"),
    ("isations", "izations"),
    ("ise", "ize"),
    ("ised", "ized"),
    ("ises", "izes"),
    ("ising", "izing"),
    ("iser", "izer"),
    ("isers", "izers"),
    ("yse", "yze"),
    ("ysed", "yzed"),
    ("yses", "yzes"),
    ("ysing", "yzing"),
    ("our", "or"),
    ("ours", "ors"),
    ("oured", "ored"),
    ("ouring", "oring"),
    ("ourite", "orite"),
    ("ourites", "orites"),
    ("ourable", "orable"),
    ("tre", "ter"),
    ("tres", "ters"),
    ("ogue", "og"),
    ("ogues", "ogs"),
)
#: British doubles the l of these endings after an unstressed vowel: cancelled, labelling.
_L_ENDINGS: tuple[tuple[str, str], ...] = (
    ("lled", "led"),
    ("lling", "ling"),
    ("ller", "ler"),
    ("llers", "lers"),
)
_WORD = re.compile(r"[a-z]+")


def _syllables(stem: str) -> int:
    return len(re.findall(r"[aeiouy]+", stem))


def spellings(word: str) -> set[str]:
    """`word` (lower case) and its British/American variants."""
    out = {word}
    for a, b in VARIANTS:
        if word in (a, b):
            out |= {a, b}
    for uk, us in _SUFFIXES:
        for have, other in ((uk, us), (us, uk)):
            stem = word[: -len(have)]
            if word.endswith(have) and len(stem) >= 3 and stem[-1] not in _VOWELS:
                out.add(stem + other)
    for double, single in _L_ENDINGS:
        for have, other in ((double, single), (single, double)):
            stem = word[: -len(have)]
            if (
                word.endswith(have)
                and len(stem) >= 3
                and stem[-1] in _VOWELS
                and stem[-2] not in _VOWELS
                and _syllables(stem) >= 2
            ):
                out.add(stem + other)
    return out


def _cvc(base: str) -> bool:
    """Ends consonant, one vowel, consonant (not w, x, y): the final consonant may double."""
    return (
        len(base) >= 3
        and base[-1] not in _VOWELS + "wxy"
        and base[-2] in _VOWELS
        and base[-3] not in _VOWELS
    )


def _doubles_first(base: str) -> bool:
    """Which doubling to name a claim by: stop→stopped, cancel→cancelled, open→opened."""
    return _syllables(base) == 1 or base.endswith(("l", "mit", "fer", "cur", "pel", "gret"))


def past_forms(base: str) -> tuple[str, ...]:
    """Past tense and participle of a verb, the usual spelling first."""
    base = base.lower()
    if base in _PAST:
        past, part = _PAST[base]
        return (past,) if past == part else (past, part)
    if base.endswith("e"):
        return (base + "d",)
    if base.endswith("y") and len(base) > 2 and base[-2] not in _VOWELS:
        return (base[:-1] + "ied",)
    if _cvc(base):
        doubled, plain = base + base[-1] + "ed", base + "ed"
        return (doubled, plain) if _doubles_first(base) else (plain, doubled)
    return (base + "ed",)


def inflections(base: str) -> set[str]:
    """Every inflected form of `base` as a verb or noun: -s, -ed, -ing, irregular pasts."""
    forms = {base, *past_forms(base)}
    if base.endswith(("s", "x", "z", "ch", "sh")):
        forms.add(base + "es")
    elif base.endswith("y") and len(base) > 2 and base[-2] not in _VOWELS:
        forms.add(base[:-1] + "ies")
    else:
        forms.add(base + "s")
    if base.endswith("ie"):
        forms.add(base[:-2] + "ying")
    elif base.endswith("e") and not base.endswith(("ee", "ye", "oe")):
        forms.add(base[:-1] + "ing")
    else:
        forms.add(base + "ing")
    if _cvc(base):
        forms.add(base + base[-1] + "ing")
    return forms


def _doubled(stem: str) -> bool:
    """Was the last letter of `stem` doubled by inflection (stopp-ed, cancell-ed), not
    part of the word (fill-ed, pass-ed)? English keeps ll/ss/ff/zz at the end of short
    words; a longer word doubles its l (travel, cancel)."""
    letter = stem[-1]
    if letter in _VOWELS:
        return False
    if letter in "sfz":
        return False
    return letter != "l" or _syllables(stem[:-1]) >= 2


def lemmas(word: str) -> set[str]:
    """Base forms `word` may be an inflection of (itself included), checked by regenerating
    the word from each candidate."""
    candidates = {word}
    if word in _BASE_OF:
        candidates.add(_BASE_OF[word])
    for suffix in ("ied", "ies"):
        if word.endswith(suffix):
            candidates.add(word[:-3] + "y")
    for suffix in ("ed", "ing", "es", "s"):
        stem = word[: -len(suffix)]
        if not word.endswith(suffix) or len(stem) < 3 or word.endswith(("ss", "us", "is", "ws")):
            continue
        candidates |= {stem, stem + "e"}
        if len(stem) > 3 and stem[-1] == stem[-2] and _doubled(stem):
            candidates.add(stem[:-1])
    return {c for c in candidates if c == word or word in inflections(c)}


def word_forms(word: str, inflect: bool = False) -> set[str]:
    """The spellings (and, with `inflect`, the inflections) a word of a term matches."""
    word = word.lower()
    if not _WORD.fullmatch(word):
        return {word}
    forms = {word}
    if inflect:
        for base in lemmas(word):
            forms |= inflections(base)
    return {s for form in forms for s in spellings(form)}


@lru_cache(maxsize=2048)
def term_pattern(term: str, inflect: bool = False) -> re.Pattern[str]:
    """A term as whole words, any case and spacing, with its variants (see module doc)."""
    parts = []
    for part in term.split():
        forms = sorted(word_forms(part, inflect), key=lambda f: (-len(f), f))
        parts.append("(?:" + "|".join(re.escape(f) for f in forms) + ")")
    left = r"(?<![0-9A-Za-z])(?<!\d\.)" if term[:1].isalnum() else ""
    right = r"(?![0-9A-Za-z])(?!\.\d)" if term[-1:].isalnum() else ""
    return re.compile(left + r"\s+".join(parts) + right, re.IGNORECASE)


@lru_cache(maxsize=256)
def term_matches(text: str, term: str, inflect: bool) -> tuple[re.Match[str], ...]:
    """Every match of `term_pattern(term, inflect)` in `text`, in order, found once: a
    claim's reader, a mention and its negation test each look for the same term in the
    same answer, and with case ignored and look-behinds the scan costs far more than the
    look-up (as few entries as the readings: keys are whole answers). `inflect` has no
    default: the memo tells a key with an argument left out from one with it given."""
    return tuple(term_pattern(term, inflect).finditer(text))
