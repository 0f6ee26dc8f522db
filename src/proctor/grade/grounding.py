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
- identifiers (tokens with a digit, such as "A-100"): equal ignoring case; a time of day
  "9:40" is "09:40".

An answer is read in its task's language (docs/architecture.md, Reading): numbers in
words become numbers first ("three hundred dollars" is 300, "trescientos" too: text2num),
numbers are read by the locale's separators ("1.234,50 €" and "3,30 €" in Spanish: Babel)
and month names in the locale's words ("7 de marzo": Babel's CLDR names). Sources (the
prompt, tool results) are read as written in JSON. A number the answer's locale cannot
read ("3,30" in English: 3.30 or 330?) is unreadable: the check is undecided rather than
guess. Babel (33 MB installed, ~50 ms to import) and text2num (0.9 MB, ~20 ms) are
imported on the first non-trivial answer only.

A number no source holds, at any of these readings, stays ungrounded.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import cache, lru_cache
from operator import itemgetter
from typing import TYPE_CHECKING

from proctor.grade.claims import Undecided
from proctor.grade.language import TOKEN
from proctor.grade.lexicon import primary
from proctor.tasks.predicates import numbers_close

if TYPE_CHECKING:
    from proctor.grade.context import GradeContext

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
#: The runs of letters of a lower-cased text: a month name _CALENDAR matches is one whole.
_LETTERS = re.compile(r"[a-z]+")
#: The first three letters of every month name (each name starts with one): a text without
#: any names no month, and finding them is cheaper than listing its runs of letters.
_MONTH_STEMS = tuple(sorted({name[:3] for name in _MONTHS}))
#: A language TOKEN without a digit, matched only where TOKEN's own match is one: it
#: cannot go on with a letter, a digit, a separated run or a comma group (backtracking
#: to a shorter run leaves one of those next, so it fails where TOKEN's match has a digit).
_WORD_TOKEN = r"[A-Za-z]+(?:[-_/.:][A-Za-z]+)*(?![A-Za-z0-9]|[-_/.:][A-Za-z0-9]|,\d{3}(?!\d))"
#: TOKEN's matches, in order, found by one scan: a word by the first alternative (no
#: group), a token with a digit by the second (group 1), with group 2 `%` when a percent
#: sign follows it, a space between allowed. read_facts reads only the tokens with a digit.
_FACT_TOKEN = re.compile(rf"{_WORD_TOKEN}|({TOKEN.pattern})(?:(?=\s?(%)))?")
#: Unix timestamps between 2000 and 2100, in seconds and in milliseconds.
_EPOCH_S = (946_684_800, 4_102_444_800)


@dataclass
class Facts:
    """The facts a text states, each with the token it was read from."""

    ids: dict[str, str] = field(default_factory=dict)  # casefolded token -> token
    numbers: list[tuple[str, int | float, int, bool]] = field(default_factory=list)
    dates: list[tuple[str, date | tuple[int, int]]] = field(default_factory=list)
    instants: list[tuple[str, datetime]] = field(default_factory=list)
    #: Numbers the text's locale cannot read ("3,30" in English).
    unreadable: list[str] = field(default_factory=list)


#: Numbers with a decimal comma or dot-grouped thousands: "3,30", "1.234,50", "1.234".
_LOCALE_NUMBER = re.compile(
    r"(?<![\w.,])\d{1,3}(?:\.\d{3})+(?:,\d+)?(?![\w]|[.,]\d)|(?<![\w.,])\d+,\d{1,2}(?![\w]|[.,]?\d)"
)
#: Number words the answer's language has (text2num's languages that proctor reads).
_WORDS_LANGUAGES = frozenset({"en", "es"})
#: What every _LOCALE_NUMBER holds (a digit, a separator, a digit): sought first, cheaply.
_SEPARATED = re.compile(r"\d[.,]\d")
_TIME = re.compile(r"^\d:\d{2}$")
#: Three letters in a row: a text without them writes no number in words.
_WORD_OF_3 = re.compile(r"[^\W\d_]{3,}")


def _locale_numbers(text: str, language: str, facts: Facts) -> str:
    """Read numbers written with the locale's separators into `facts` (Babel), or mark
    them unreadable where the locale has none such, or where Babel knows no such locale
    (`tlh`: a well-formed tag); return the text with them blanked."""
    from babel.core import UnknownLocaleError
    from babel.numbers import NumberFormatError, parse_decimal

    def take(match: re.Match[str]) -> str:
        token = match.group(0)
        percent = match.string[match.end() : match.end() + 2].lstrip()[:1] == "%"
        try:
            value = parse_decimal(token, locale=language, strict=True)
        except (NumberFormatError, ValueError, UnknownLocaleError):
            facts.unreadable.append(token)
        else:
            exponent = value.as_tuple().exponent
            decimals = -exponent if isinstance(exponent, int) and exponent < 0 else 0
            number = float(value) if decimals else int(value)
            facts.numbers.append((token, number, decimals, percent))
        return " " * len(token)

    return _LOCALE_NUMBER.sub(take, text)


def _number_words(text: str, language: str) -> str:
    """Numbers written in words as digits ("three hundred" -> "300"): text2num."""
    if not _WORD_OF_3.search(text):
        return text
    return str(_alpha2digit()(text, language))


@cache
def _alpha2digit() -> Callable[[str, str], str]:
    """text2num's reader, imported once on first use (an import statement in the reader
    would look the package up again for every answer)."""
    from text_to_num import alpha2digit

    return alpha2digit


@lru_cache(maxsize=16)
def _month_names(language: str) -> dict[str, int]:
    """The locale's month names, wide and abbreviated, to their numbers (Babel's CLDR)."""
    from babel.core import UnknownLocaleError
    from babel.dates import get_month_names

    names: dict[str, int] = {}
    try:
        for width in ("wide", "abbreviated"):
            for number, name in get_month_names(width, locale=language).items():
                names[name.casefold().rstrip(".")] = number
    except (UnknownLocaleError, ValueError):
        return {}
    return names


def _local_calendar(text: str, language: str, facts: Facts) -> str:
    """Dates with the locale's month names: "7 de marzo", "7 de marzo de 2024"."""
    months = _month_names(language)
    if not months:
        return text
    alternatives = "|".join(re.escape(m) for m in sorted(months, key=len, reverse=True))
    pattern = re.compile(
        rf"\b(\d{{1,2}})\s+(?:de\s+)?({alternatives})\.?(?:\s+(?:de\s+)?(\d{{4}}))?\b",
        re.IGNORECASE,
    )

    def take(match: re.Match[str]) -> str:
        day, month, year = match.group(1, 2, 3)
        try:
            m = months[month.casefold()]
            facts.dates.append(
                (match.group(0), date(int(year), m, int(day)) if year else (m, int(day)))
            )
        except (KeyError, ValueError):
            return match.group(0)
        return " " * len(match.group(0))

    return pattern.sub(take, text)


def _time_of_day(moment: datetime) -> str:
    return moment.strftime("%H:%M")


def _instant(token: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(token)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def may_name_a_date(text: str) -> bool:
    """Can _CALENDAR match in `text`? A date has a digit, and its month name is a whole
    run of letters (a space, a full stop or a non-word character either side), so an
    ASCII text needs both; in another, case folding may match more, so it is read. A
    cheap test first: most answers name no month, and _CALENDAR tries every word."""
    if not _DIGIT.search(text):
        return False
    if not text.isascii():
        return True
    low = text.lower()
    if not any(map(low.__contains__, _MONTH_STEMS)):  # a month name holds its stem
        return False
    return not _MONTHS.keys().isdisjoint(_LETTERS.findall(low))


def _calendar(text: str, facts: Facts) -> str:
    """Read month-name dates into `facts`; return the text with them blanked out."""
    if not may_name_a_date(text):
        return text

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
def read_facts(text: str, language: str | None = None) -> Facts:
    """Every number, date, instant and identifier in `text`, read in `language` (None:
    as JSON and English write them). Cached: a task's prompt and its tools' results recur
    in every trial; callers only read the result."""
    facts = Facts()
    if language is not None:
        base = primary(language)
        if base in _WORDS_LANGUAGES:
            text = _number_words(text, base)
        if base != "en":
            text = _local_calendar(text, base, facts)
        if _SEPARATED.search(text) and _LOCALE_NUMBER.search(text):
            text = _locale_numbers(text, base, facts)
    text = _calendar(text, facts)
    for token, percent_sign in filter(itemgetter(0), _FACT_TOKEN.findall(text)):
        number = _NUMBER.match(token)
        if number:
            plain = token.replace(",", "")
            value = float(plain) if number.group(1) else int(plain)
            facts.numbers.append((token, value, len(number.group(1) or ""), percent_sign == "%"))
            continue
        if _TIME.match(token):  # "9:40" is "09:40"
            facts.ids["0" + token] = token
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
        """A source number the written one is, at its written precision: "7.5%" is 7.5
        to one decimal or 0.075 to three (not 0.1)."""
        readings = [(value, decimals), (value / 100, decimals + 2)] if percent else []
        if not percent:
            readings = [(value, decimals)]
        return any(self._holds(w, d) for w, d in readings)

    def _holds(self, wanted: int | float, decimals: int) -> bool:
        if not decimals:
            return any(numbers_close(u, wanted) for u in self.numbers)
        half = 0.5 * 10.0**-decimals * (1 + 1e-9)  # what rounds to the written digits
        return any(abs(u - wanted) <= half for u in self.numbers)

    def has_date(self, day: date | tuple[int, int]) -> bool:
        if isinstance(day, date):
            return day in self.dates
        return any((d.month, d.day) == day for d in self.dates)

    def has_instant(self, moment: datetime) -> bool:
        return any(abs(moment - m) < timedelta(minutes=1) for m in self.instants)


def unreadable_numbers(answer: str, unreadable: list[str]) -> Undecided:
    """Why a check on the answer's facts is undecided: numbers its language cannot read."""
    why = f"numbers written as {', '.join(unreadable[:3])} cannot be read in this language"
    return Undecided(answer.strip()[:200], why)


@lru_cache(maxsize=256)
def _known(sources: tuple[str, ...]) -> _Known:
    """What `sources` ground, read once: a task's prompt and its tools' results recur in
    every trial; callers only read it."""
    known = _Known()
    for source in sources:
        known.add(read_facts(source))
    return known


def ungrounded(answer: str, sources: list[str], language: str | None = None) -> list[str]:
    """The answer's facts found in no source, as the answer wrote them, sorted."""
    return grounding(answer, sources, language)[0]


def grounding(
    answer: str, sources: list[str], language: str | None = None
) -> tuple[list[str], list[str]]:
    """(the answer's facts found in no source, the numbers it wrote that its language
    cannot read), each as the answer wrote them, sorted."""
    missing, unreadable = _grounding(answer, tuple(sources), language or "en")
    return list(missing), list(unreadable)


def trial_grounding(ctx: GradeContext) -> tuple[list[str], list[str], int]:
    """`grounding` of a trial's answer in its sources (the prompt, then the tool results
    the agent received), and how many sources there are. The prompt is read first: a
    source added never ungrounds a fact (what sources know is a union), so where the
    prompt grounds every fact, the tool results are not written out as text at all."""
    language = ctx.task.language or "en"
    count = 1 + sum(c.succeeded for c in ctx.calls)
    missing, unreadable = _grounding(ctx.answer, (ctx.task.prompt,), language)
    if missing and count > 1:
        sources = (ctx.task.prompt, *ctx.tool_texts)
        missing, unreadable = _grounding(ctx.answer, sources, language)
    return list(missing), list(unreadable), count


@lru_cache(maxsize=256)
def _grounding(
    answer: str, sources: tuple[str, ...], language: str
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """`grounding`, once per answer and sources: a task's trials mostly give the same
    answer from the same tool results (as few entries as `_known`: keys are whole texts)."""
    known = _known(sources)
    facts = read_facts(answer, language)
    instants = {token for token, _ in facts.instants}
    missing = {t for key, t in facts.ids.items() if key not in known.ids}
    missing |= {t for t, v, d, p in facts.numbers if not known.has_number(v, d, p)}
    missing |= {t for t, d in facts.dates if t not in instants and not known.has_date(d)}
    missing |= {
        t for t, m in facts.instants if not known.has_instant(m) and t.casefold() not in known.ids
    }
    return tuple(sorted(missing)), tuple(sorted(set(facts.unreadable)))
