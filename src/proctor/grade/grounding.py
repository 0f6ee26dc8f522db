"""Grounding: every number, date and identifier an answer states must come from a source.

The sources are the prompt and the tool results the agent received. Facts compare by
value, not by spelling (docs/architecture.md, Verdicts):

- numbers: "1,234" is 1234 and "$3.30" is 3.3000000000000003: a number written with d
  decimals is a source rounded to d decimals ("3.14" from 3.14159, not "3.15"); a whole
  number equals a source number (within the predicates' tolerance: "3" is not 2.6);
- percentages: "50%" is 50 or 0.5, and a source's "50%" grounds 50 and 0.5;
- dates: "2024-03-05", "March 5, 2024" and "5 March" are the date of a source's
  "2024-03-05T10:00:00Z" or of a Unix timestamp (seconds or milliseconds, UTC); an ISO
  date-time is grounded by the same instant (within a minute);
- identifiers (tokens with a digit, such as "A-100"): equal ignoring case.

A number no source holds, at any of these readings, stays ungrounded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache

from proctor.grade.language import TOKEN
from proctor.tasks.predicates import numbers_close

_NUMBER = re.compile(r"^(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?$")
_ISO = re.compile(
    r"^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$"
)
_MONTHS = {
    name: i
    for i, names in enumerate(
        [
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s+(\d{4}))?"
#: "March 5, 2024", "Mar 5" (groups 1-3), "5 March 2024", "5th of March" (groups 4-6).
_CALENDAR = re.compile(
    rf"\b{_MONTH}\s+{_DAY}\b{_YEAR}|\b{_DAY}\s+(?:of\s+)?{_MONTH}\b{_YEAR}", re.IGNORECASE
)
_DIGIT = re.compile(r"\d")
#: Unix timestamps between 2000 and 2100, in seconds and in milliseconds.
_EPOCH_S = (946_684_800, 4_102_444_800)


@dataclass
class Facts:
    """The facts a text states, each with the token it was read from."""

    ids: dict[str, str] = field(default_factory=dict)  # casefolded token -> token
    numbers: list[tuple[str, int | float, int, bool]] = field(default_factory=list)
    dates: list[tuple[str, date | tuple[int, int]]] = field(default_factory=list)
    instants: list[tuple[str, datetime]] = field(default_factory=list)


def _time_of_day(moment: datetime) -> str:
    return moment.strftime("%H:%M")


def _instant(token: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(token)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _calendar(text: str, facts: Facts) -> str:
    """Read month-name dates into `facts`; return the text with them blanked out."""

    def take(match: re.Match[str]) -> str:
        month, day, year = match.group(1, 2, 3) if match[1] else match.group(5, 4, 6)
        try:
            m, d = _MONTHS[month.casefold()], int(day)
            facts.dates.append((match.group(0), date(int(year), m, d) if year else (m, d)))
        except (KeyError, ValueError):
            return match.group(0)
        return " " * len(match.group(0))

    return _CALENDAR.sub(take, text)


@lru_cache(maxsize=1024)
def read_facts(text: str) -> Facts:
    """Every number, date, instant and identifier in `text`. Cached: a task's prompt and
    its tools' results recur in every trial; callers only read the result."""
    facts = Facts()
    text = _calendar(text, facts)
    for match in TOKEN.finditer(text):
        token = match.group(0)
        if not _DIGIT.search(token):
            continue
        number = _NUMBER.match(token)
        if number:
            percent = text[match.end() : match.end() + 2].lstrip()[:1] == "%"
            plain = token.replace(",", "")
            value = float(plain) if number.group(1) else int(plain)
            facts.numbers.append((token, value, len(number.group(1) or ""), percent))
            continue
        if _ISO.match(token) and (moment := _instant(token)) is not None:
            facts.dates.append((token, date.fromisoformat(token[:10])))
            if len(token) > 10:
                facts.instants.append((token, moment))
            continue
        facts.ids[token.casefold()] = token
    return facts


@dataclass
class _Known:
    ids: set[str] = field(default_factory=set)
    numbers: list[int | float] = field(default_factory=list)
    dates: set[date] = field(default_factory=set)
    instants: list[datetime] = field(default_factory=list)

    def add(self, facts: Facts) -> None:
        self.ids |= set(facts.ids)
        for _, value, _, percent in facts.numbers:
            self.numbers.append(value)
            if percent:
                self.numbers.append(value / 100)
            for scale in (1, 1000):
                if _EPOCH_S[0] * scale <= value < _EPOCH_S[1] * scale:
                    moment = datetime.fromtimestamp(value / scale, UTC)
                    self.instants.append(moment)
                    self.dates.add(moment.date())
                    self.ids.add(_time_of_day(moment))
        self.dates |= {d for _, d in facts.dates if isinstance(d, date)}
        for _, moment in facts.instants:
            self.instants.append(moment)
            self.ids.add(_time_of_day(moment))  # "at 10:00" is grounded by 10:00:00Z

    def has_number(self, value: int | float, decimals: int, percent: bool) -> bool:
        wanted = [value, value / 100] if percent else [value]
        if not decimals:
            return any(numbers_close(u, w) for u in self.numbers for w in wanted)
        half = 0.5 * 10.0**-decimals * (1 + 1e-9)  # what rounds to the written digits
        return any(abs(u - w) <= half for u in self.numbers for w in wanted)

    def has_date(self, day: date | tuple[int, int]) -> bool:
        if isinstance(day, date):
            return day in self.dates
        return any((d.month, d.day) == day for d in self.dates)

    def has_instant(self, moment: datetime) -> bool:
        return any(abs(moment - m) < timedelta(minutes=1) for m in self.instants)


def ungrounded(answer: str, sources: list[str]) -> list[str]:
    """The answer's facts found in no source, as the answer wrote them, sorted."""
    known = _Known()
    for source in sources:
        known.add(read_facts(source))
    facts = read_facts(answer)
    instants = {token for token, _ in facts.instants}
    missing = {t for t in facts.ids.values() if t.casefold() not in known.ids}
    missing |= {t for t, v, d, p in facts.numbers if not known.has_number(v, d, p)}
    missing |= {t for t, d in facts.dates if t not in instants and not known.has_date(d)}
    missing |= {
        t for t, m in facts.instants if not known.has_instant(m) and t.casefold() not in known.ids
    }
    return sorted(missing)
