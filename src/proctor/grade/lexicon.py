"""The words the text readers read a language with, from data files (grade/lexicons/).

A task's `language` (BCP 47; `en` when unset) picks the lexicon by its primary subtag:
`es-MX` reads with `es`. A reader asked for a part a language's lexicon lacks (Urdu has
confirmations and refusals, no claims) says `undecided` rather than read it with another
language's words (docs/architecture.md, Reading).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

from proctor.core.documents import read_document

LEXICONS = Path(__file__).parent / "lexicons"
DEFAULT_LANGUAGE = "en"


def primary(language: str | None) -> str:
    """The primary subtag of a BCP 47 tag, lower case: `es-MX` → `es`; None → `en`."""
    return (language or DEFAULT_LANGUAGE).split("-", 1)[0].lower()


@cache
def lexicon(language: str | None) -> dict[str, Any]:
    """The lexicon of `language` (its primary subtag); empty for a language without one.
    Remembered by the tag as given (a lookup on the readers' path), and read once per
    primary subtag: None, `en` and `en-GB` share one file read (~2.4 ms)."""
    return _lexicon_file(primary(language))


@cache
def _lexicon_file(base: str) -> dict[str, Any]:
    """The lexicon file of a primary subtag, read once."""
    path = LEXICONS / f"{base}.yaml"
    if not path.is_file():
        return {}
    data, _ = read_document(path)  # bounded like every file proctor reads
    return data if isinstance(data, dict) else {}


def has(language: str | None, part: str) -> bool:
    """Does `language`'s lexicon hold `part` (`verbs`, `refusals`, `confirmations`)?"""
    return bool(lexicon(language).get(part))


@cache
def words(language: str | None, part: str) -> frozenset[str]:
    """The single words of a part (lower case), built once: readers ask for them in
    every sentence they read."""
    return frozenset(str(w).lower() for w in lexicon(language).get(part) or ())


@cache
def phrases(language: str | None, part: str) -> tuple[tuple[str, ...], ...]:
    """The phrases of a part as word tuples, longest first (so the longest matches),
    built once."""
    split = {tuple(str(p).lower().split()) for p in lexicon(language).get(part) or ()}
    return tuple(sorted(split, key=lambda p: (-len(p), p)))


@cache
def patterns(language: str | None, part: str) -> tuple[re.Pattern[str], ...]:
    """A part of regular expressions, compiled (case ignored)."""
    return tuple(re.compile(p, re.IGNORECASE) for p in lexicon(language).get(part) or ())


def languages() -> list[str]:
    """The languages with a lexicon."""
    return sorted(p.stem for p in LEXICONS.glob("*.yaml"))
