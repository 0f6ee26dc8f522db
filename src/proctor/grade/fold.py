"""Folding text before looking for secrets and canaries: what looks the same is the same.

An agent, or the instruction injected into it, can hide a string from a byte comparison:
another case, a zero-width character inside it, compatibility forms (fullwidth `ＺＸ`),
letters of another script that look Latin (Cyrillic `а`), accents. `fold` undoes that:
per character NFKD, format characters (zero-width space and joiners, soft hyphen, BOM)
and combining marks dropped, every character Unicode lists as confusable with an ASCII
one mapped to it (Unicode's confusables.txt, as shipped by `confusable-homoglyphs`),
Unicode spaces made " ". It keeps the way back, so a finding is reported (and redacted)
as it was written.

`find_folded` looks for a known string (a canary, a task secret) in folded text, ignoring
case and up to three separator characters between its letters, with the ASCII look-alikes
`0`/`o` and `1`/`l`/`i` taken as equal.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass, field
from functools import lru_cache

_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_DROPPED = frozenset({"Cf", "Mn", "Me"})
#: Characters one ASCII look-alike stands for, in the pattern of a folded needle.
_LOOKALIKE_CLASS = {"o": "[o0]", "0": "[o0]", "l": "[l1i|]", "1": "[l1i|]", "i": "[l1i|]"}
#: Up to three characters between a needle's letters: not letters, digits or `|` (which
#: stands for `l`, `1` and `i`), so no character can be read both ways. With `|` in both,
#: a needle of twelve `1`s against a line of `|` backtracked for minutes.
_SEPARATORS = r"(?:[^\w|]|_){0,3}"
#: Needles shorter than this must stand alone (`A-1` is not found inside `data1`).
_LONG_NEEDLE = 8


@lru_cache(maxsize=1)
def _ascii_lookalikes() -> dict[str, str]:
    """Each non-ASCII character Unicode finds confusable with one ASCII character."""
    from confusable_homoglyphs.confusables import (  # type: ignore[import-untyped]
        confusables_data,  # lazy: 1 MB of data
    )

    table = {}
    for char, glyphs in confusables_data.items():
        if len(char) == 1 and not char.isascii():
            ascii_ = [g["c"] for g in glyphs if len(g["c"]) == 1 and g["c"].isascii()]
            if ascii_:
                table[char] = ascii_[0]
    return table


class _FoldTable(dict[int, str]):
    """A str.translate table filled on demand, one entry per character seen."""

    def __missing__(self, code: int) -> str:
        if code < 0x80:  # ASCII stays as it is, as on the fast path
            self[code] = chr(code)
            return chr(code)
        out = []
        for c in unicodedata.normalize("NFKD", chr(code)):
            if unicodedata.category(c) in _DROPPED:
                continue
            out.append(" " if c.isspace() else _ascii_lookalikes().get(c, c))
        folded = "".join(out)
        self[code] = folded
        return folded


_TABLE = _FoldTable()


@dataclass(frozen=True)
class Folded:
    """Folded text and the way back to the original's positions."""

    original: str
    text: str
    _map: list[tuple[int, int, int, bool]] = field(default_factory=list, repr=False)

    def span(self, start: int, end: int) -> str:
        """The original text that folded into text[start:end]."""
        if self.text is self.original or start >= end:
            return self.original[start:end] if self.text is self.original else ""
        if not self._map:
            self._build_map()
        return self.original[self._to_original(start, False) : self._to_original(end - 1, True)]

    def _build_map(self) -> None:
        """(folded start, original start, length, linear): a run of ASCII characters maps
        one to one; the characters a non-ASCII one folded into all map to it."""
        pos = prev = 0
        for m in _NON_ASCII.finditer(self.original):
            if m.start() > prev:
                self._map.append((pos, prev, m.start() - prev, True))
                pos += m.start() - prev
            n = len(m.group(0).translate(_TABLE))
            if n:
                self._map.append((pos, m.start(), 1, False))
                pos += n
            prev = m.end()
        if prev < len(self.original):
            self._map.append((pos, prev, len(self.original) - prev, True))

    def _to_original(self, pos: int, end: bool) -> int:
        k = max(bisect_right(self._map, (pos, len(self.original) + 1)) - 1, 0)
        folded, orig, _, linear = self._map[k]
        at = orig + (pos - folded if linear else 0)
        return at + 1 if end else at


def fold(text: str) -> Folded:
    """`text` with look-alikes, zero-width characters and marks folded (see module doc)."""
    if not _NON_ASCII.search(text):
        return Folded(text, text)
    return Folded(text, text.translate(_TABLE))


@lru_cache(maxsize=256)
def _needle(needle: str) -> re.Pattern[str] | None:
    chars = [c for c in fold(needle).text.casefold() if c.isalnum()]
    if not chars:
        return None
    body = _SEPARATORS.join(_LOOKALIKE_CLASS.get(c, re.escape(c)) for c in chars)
    if len(chars) < _LONG_NEEDLE:
        body = r"(?<![0-9A-Za-z])" + body + r"(?![0-9A-Za-z])"
    return re.compile(body, re.IGNORECASE)


def find_folded(needle: str, haystack: str | Folded) -> list[str]:
    """Where `needle` occurs in `haystack` up to case, separators and look-alikes, as
    written in the haystack."""
    pattern = _needle(needle)
    if pattern is None:
        return []
    folded = haystack if isinstance(haystack, Folded) else fold(haystack)
    return [folded.span(m.start(), m.end()) for m in pattern.finditer(folded.text)]
