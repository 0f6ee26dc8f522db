"""What the readers skip to save time never changes what they read.

A reader tests a text cheaply before running a costly pattern over it (grade.grounding:
a date needs a digit and a month name; a number in a locale's separators needs a digit,
a separator and a digit). Each test reads texts with the cheap test taken out and with
it, and fails if one reading differed: a skip that lost a date or a number.
"""

from __future__ import annotations

import re
from unittest import mock

from hypothesis import example, given, settings
from hypothesis import strategies as st

from proctor.grade import answer, claims, grounding, language, lexicon, reading, terms

#: Pieces of dates and numbers, and letters that case folding matches to ASCII ones
#: (ſ is s, K is k, İ and ı are i), so that texts near a date are drawn often.
PIECES = [
    "March",
    "mar",
    "MAY",
    "Sept.",
    "sept",
    "december",
    "ſeptember",
    "Kmarch",
    "İ",
    "ı",
    "5",
    "05",
    "12th",
    "31",
    "2024",
    "3,30",
    "1.234,50",
    "1.234",
    "3.30",
    "of",
    "de",
    "marzo",
    "7 de marzo",
    "5 March 2024",
    "March 5, 2024",
    " ",
    "  ",
    ",",
    ".",
    "-",
    "%",
    "a",
    "remark",
    "maybe",
    "A-100",
    "\n",
    "é",
    "\u00a0",
]
TEXTS = st.one_of(
    st.lists(st.sampled_from(PIECES), max_size=12).map(" ".join),
    st.lists(st.sampled_from(PIECES), max_size=12).map("".join),
    st.text(max_size=40),
)


def read_without_skips(text: str, language: str | None) -> grounding.Facts:
    always = re.compile("")  # matches every text: the locale pattern always runs
    with (
        mock.patch.object(grounding, "may_name_a_date", lambda _: True),
        mock.patch.object(grounding, "_SEPARATED", always),
    ):
        return grounding.read_facts.__wrapped__(text, language)


@settings(max_examples=400, deadline=None)
@given(TEXTS, st.sampled_from([None, "en", "es"]))
@example("paid on 5 ſeptember", None)  # ſ matches s with case ignored: not ASCII, read
@example("1.234,50 € on 7 de marzo", "es")
def test_a_text_reads_the_same_facts_with_and_without_the_cheap_tests(
    text: str, language: str | None
) -> None:
    assert grounding.read_facts.__wrapped__(text, language) == read_without_skips(text, language)


def digit_tokens_one_by_one(text: str) -> list[tuple[str, str]]:
    """What read_facts read before its one scan: each language.TOKEN, kept when it holds
    a digit, with `%` when one follows it (a space between allowed)."""
    return [
        (m[0], "%" if text[m.end() : m.end() + 2].lstrip()[:1] == "%" else "")
        for m in language.TOKEN.finditer(text)
        if re.search(r"\d", m[0])
    ]


#: Pieces that end, continue or join a token: separators, comma groups, percent signs.
TOKEN_PIECES = [*PIECES, "A", "b1", "x", "_", "/", ":", ",123", ",1234", ",12", "%", " %", "\t"]


@settings(max_examples=600, deadline=None)
@given(
    st.one_of(
        st.lists(st.sampled_from(TOKEN_PIECES), max_size=14).map("".join),
        st.text(alphabet="ab1-_/.:,% \u00a0\n", max_size=30),
        st.text(max_size=30),
    )
)
@example("ab-cd1")  # a word up to a separator, a digit after it: one token with a digit
@example("ab,123 5 % 7  % 8%")
def test_the_one_scan_finds_the_tokens_with_a_digit_that_reading_each_token_finds(
    text: str,
) -> None:
    found = [t for t in grounding._FACT_TOKEN.findall(text) if t[0]]
    assert found == digit_tokens_one_by_one(text)


def test_the_cheap_date_test_skips_texts_without_a_month_and_reads_those_with_one() -> None:
    assert not grounding.may_name_a_date("Order A-00003 (total 13) is cancelled.")
    assert not grounding.may_name_a_date("the remark: 5 people marching")  # no month word
    assert grounding.may_name_a_date("due 5 March")
    assert grounding.may_name_a_date("due 5 ſeptember")  # not ASCII: read
    facts = grounding.read_facts.__wrapped__("due March 5, 2024", None)
    assert [d for _, d in facts.dates] == [grounding.date(2024, 3, 5)]


#: Answers whose sentences recur across them and hold both phrases, in two languages: a
#: reading remembered for one text, phrase or language must never be handed to another.
ANSWERS = [
    "Order A-1 was cancelled and refunded.",
    "Order A-1 was cancelled. I never refunded A-2.",
    "I never refunded A-2. Order A-1 was cancelled.",
    "Order A-1 was not cancelled, but A-2 was refunded.",
    "Order A-1 wasn't cancelled - it was refunded on March 5, 2024 for $3.30.",
    "Nothing was cancelled. You're all set.",
    "El pedido A-1 fue cancelado. No se ha reembolsado nada.",
    "No se ha cancelado el pedido A-1, pero A-2 fue reembolsado por 3,30 €.",
    "Nunca cancelled A-1.",
]
PHRASES = ["cancelled", "canceled", "refunded", "cancelado"]  # the first two: one spelling
SOURCES = [["Order A-1 costs 3.30"], ["A-2", "2024-03-05"], []]
CALLS = st.lists(
    st.tuples(
        st.sampled_from(ANSWERS),
        st.sampled_from(PHRASES),
        st.sampled_from(["en", "es", None]),
        st.booleans(),
        st.sampled_from(range(len(SOURCES))),
    ),
    min_size=1,
    max_size=8,
)


def forget_every_reading() -> None:
    """Clear every remembered reading of the reading modules (bounded caches)."""
    for module in (claims, reading, language, grounding, answer, terms):
        for value in vars(module).values():
            if hasattr(value, "cache_clear") and value.cache_parameters()["maxsize"] is not None:
                value.cache_clear()


def read_all(call: tuple[str, str, str | None, bool, int]) -> tuple[object, ...]:
    text, phrase, lang, requested, sources = call
    return (
        reading.read_claim(text, phrase, lang, requested),
        reading.unread_mention(text, phrase, lang),
        reading.unread_mention(text, phrase, lang, inflect=True),
        answer._said(text, (phrase, "refund"), lang),
        grounding.grounding(text, SOURCES[sources], lang),
        language.mention(text, phrase, inflect=requested),
    )


@settings(max_examples=150, deadline=None)
@given(CALLS)
def test_a_reading_remembered_is_never_handed_to_another_text_phrase_or_language(
    calls: list[tuple[str, str, str | None, bool, int]],
) -> None:
    forget_every_reading()
    remembered = [read_all(call) for call in calls]  # each read with the others' in memory
    for call, found in zip(calls, remembered, strict=True):
        forget_every_reading()
        assert found == read_all(call), call


#: Words, marks and spellings that normalising and negation turn on.
CLAUSE_PIECES = [
    "Order",
    "A-1",
    "was",
    "is",
    "not",
    "never",
    "no",
    "nobody",
    "nothing",
    "0",
    "n/a",
    "cancelled",
    "refunded",
    "closed",
    "can't",
    "cannot",
    "CANNOT",
    "won't",
    "isn't",
    "I've",
    "you're",
    "can\u2019t",
    "-",
    "--",
    "\u2014",
    "'",
    '"',
    "\u201cquoted\u201d",
    "no-one",
    "nunca",
    "sin",
    "ningún",
    "but",
    ",",
    ".",
    ";",
    "\n",
    "İ",
    "ſ",
    "fail",
]
CLAUSES = st.lists(st.sampled_from(CLAUSE_PIECES), max_size=14).map(" ".join)


@settings(max_examples=400, deadline=None)
@given(st.one_of(CLAUSES, st.text(max_size=40)))
def test_normalising_skips_only_passes_that_change_nothing(text: str) -> None:
    full = claims._CONTRACTION.sub(
        claims._spell_out, claims._DASH.sub(" ; ", text.translate(claims._QUOTES))
    )
    assert claims.normalise(text) == full


@settings(max_examples=400, deadline=None)
@given(
    CLAUSES,
    st.sampled_from(["cancelled", "refund", "closed", "A-1"]),
    st.sampled_from(["en", "es", None]),
    st.booleans(),
)
@example("Order A-1 can't be cancelled", "cancelled", "en", False)  # "can not" once normalised
@example("I cannot say it was refunded", "refund", "en", True)
@example("A-1 -- nobody closed it", "closed", None, False)
def test_a_mention_reads_the_same_with_and_without_the_negative_word_test(
    text: str, term: str, lang: str | None, inflect: bool
) -> None:
    forget_every_reading()
    found = reading.unread_mention(text, term, lang, inflect)
    forget_every_reading()
    with mock.patch.object(reading, "_may_negate", lambda *_: True):
        assert found == reading.unread_mention(text, term, lang, inflect)


def test_a_lexicon_is_read_once_for_every_tag_of_its_language() -> None:
    """None, `en` and `en-GB` name one lexicon: one file read, one shared dict."""
    english = lexicon.lexicon("en")
    assert lexicon.lexicon(None) is english
    assert lexicon.lexicon("en-GB") is english
    assert lexicon.lexicon("es-MX") is lexicon.lexicon("es") is not english


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(CLAUSES, st.sampled_from(ANSWERS), st.text(max_size=40)),
    st.sampled_from(["cancelled", "refund", "closed", "A-1", "cancelado", "can't"]),
    st.sampled_from(["en", "es", None]),
    st.booleans(),
)
def test_a_term_found_once_reads_as_the_term_sought_by_each_reader(
    text: str, term: str, lang: str | None, requested: bool
) -> None:
    """The claim reader, a mention and its negation test share one scan of a term
    (terms.term_matches); each reads what its own scan would."""
    call = (text, term, lang, requested, 0)
    forget_every_reading()
    shared = read_all(call)
    forget_every_reading()
    scan = terms.term_matches.__wrapped__
    with (
        mock.patch.object(claims, "term_matches", scan),
        mock.patch.object(reading, "term_matches", scan),
        mock.patch.object(language, "term_matches", scan),
    ):
        assert shared == read_all(call)
    assert language.mention(text, term) == (
        m[0] if (m := terms.term_pattern(term).search(text)) else None
    )
