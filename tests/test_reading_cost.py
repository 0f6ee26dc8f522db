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

from proctor.grade import grounding

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


def test_the_cheap_date_test_skips_texts_without_a_month_and_reads_those_with_one() -> None:
    assert not grounding.may_name_a_date("Order A-00003 (total 13) is cancelled.")
    assert not grounding.may_name_a_date("the remark: 5 people marching")  # no month word
    assert grounding.may_name_a_date("due 5 March")
    assert grounding.may_name_a_date("due 5 ſeptember")  # not ASCII: read
    facts = grounding.read_facts.__wrapped__("due March 5, 2024", None)
    assert [d for _, d in facts.dates] == [grounding.date(2024, 3, 5)]
