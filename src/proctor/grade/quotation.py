"""Where an answer quotes someone: quotations found over the whole answer, not per
sentence (docs/architecture.md, Reading).

A quotation may hold full stops (`He said: "Thanks. I cancelled it."`, `«Gracias. Lo he
cancelado.»`), so a reader that splits the answer into sentences first loses the opening
mark and reads the quoted words as the agent's own claim. The claim readers ask here
instead: is this position inside a quotation that closes (someone else's words: no
claim), inside one that never closes (undecided), or outside any? Straight double quotes
pair in order; curly quotes and guillemets nest; a `"` right after a digit is an inch
mark (`a 27" screen`), not a quotation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

#: Each opening mark and the mark that closes it.
PAIRS = {'"': '"', "\u201c": "\u201d", "\u00ab": "\u00bb", "\u201e": "\u201c"}
_MARKS = re.compile("[" + re.escape("".join({*PAIRS, *PAIRS.values()})) + "]")

Quoted = Literal["closed", "open"]


@dataclass(frozen=True, slots=True)
class Quotations:
    """The quotations of one text: (start, end) of each, end None for one left open."""

    spans: tuple[tuple[int, int | None], ...]

    @classmethod
    def of(cls, text: str) -> Quotations:
        """The quotations of `text`; the readers ask for one answer's many times (a refusal
        or claim pattern per match), so the last few are kept."""
        return _quotations(text)

    def at(self, position: int) -> Quoted | None:
        """Is `position` inside a quotation: one that closes, one left open, or none?"""
        inside = [
            end for start, end in self.spans if start < position and (end is None or position < end)
        ]
        if not inside:
            return None
        return "open" if None in inside else "closed"


@lru_cache(maxsize=16)
def _quotations(text: str) -> Quotations:
    spans: list[tuple[int, int | None]] = []
    stack: list[tuple[int, str]] = []  # (where it opened, the mark that closes it)
    for mark in _MARKS.finditer(text):
        i, ch = mark.start(), mark.group(0)
        if ch == '"' and i > 0 and text[i - 1].isdigit():
            continue  # an inch mark
        if stack and ch == stack[-1][1]:
            spans.append((stack.pop()[0], i))
        elif ch in PAIRS:
            stack.append((i, PAIRS[ch]))
    spans.extend((start, None) for start, _ in stack)
    return Quotations(tuple(spans))
