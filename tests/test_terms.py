"""How terms match: spelling variants both ways, inflections for must_not_mention.

The answer checks run on an agent's answer through a real environment; the case that
would pass wrongly (the other spelling, an inflected form) comes first.
"""

from __future__ import annotations

from typing import Any

import pytest

from conftest import make_task
from proctor import Domain, SyncToolbox
from proctor.core.trace import Trace
from proctor.env import Environment
from proctor.grade import GradeContext
from proctor.grade.answer import grade_answer
from proctor.grade.terms import past_forms, term_pattern, word_forms

DESK = Domain("terms-desk", base_state={"orders": {}})


@DESK.tool("orders.get")
def get(state: dict[str, Any], order_id: str) -> dict[str, Any]:
    """Read an order."""
    return {"order_id": order_id}


def answer_checks(answer: str, expect: dict[str, Any]) -> dict[str, bool]:
    task = make_task({"answer": expect}, domain="terms-desk")
    env = Environment.fresh(task, DESK, seed=0)
    SyncToolbox(env).call("orders.get", {"order_id": "A-1"})
    env.close()
    env.recorder.emit("answer", {"text": answer})
    ctx = GradeContext(task, Trace("t1#0", "t", env.recorder.events), env.outcome(), domain=DESK)
    return {c.name: c.passed for c in grade_answer(ctx)}


@pytest.mark.parametrize(
    ("term", "answer"),
    [
        ("cancelled", "Your order was canceled."),
        ("canceled", "Your order was cancelled."),
        ("refund", "The order was refunded."),
        ("refund", "Refunds take five days."),
        ("cancelled", "I can cancel it for you."),
        ("send", "I sent the form."),
        ("authorise", "I am not authorized to do that."),
        ("colour", "Pick a color."),
        ("licence", "Your license expired."),
    ],
)
def test_must_not_mention_finds_other_spellings_and_inflections(term: str, answer: str) -> None:
    assert answer_checks(answer, {"must_not_mention": [term]}) == {f"not_mentions:{term}": False}


@pytest.mark.parametrize(
    ("term", "answer"),
    [
        ("refund", "The fare is nonrefundable."),
        ("cancel", "Cancellation is free."),
        ("four", "Wait for the call."),
        ("filled", "The form was filed."),
    ],
)
def test_must_not_mention_leaves_other_words_alone(term: str, answer: str) -> None:
    assert answer_checks(answer, {"must_not_mention": [term]}) == {f"not_mentions:{term}": True}


def test_must_mention_accepts_either_spelling_but_no_other_form() -> None:
    assert answer_checks("It was canceled.", {"must_mention": ["cancelled"]}) == {
        "mentions:cancelled": True
    }
    assert answer_checks("I can cancel it.", {"must_mention": ["cancelled"]}) == {
        "mentions:cancelled": False
    }


def test_past_forms_name_a_claim_by_its_usual_spelling() -> None:
    assert past_forms("cancel") == ("cancelled", "canceled")
    assert past_forms("open") == ("opened", "openned")
    assert past_forms("submit")[0] == "submitted"
    assert past_forms("send") == ("sent",)
    assert past_forms("freeze") == ("froze", "frozen")
    assert past_forms("apply") == ("applied",)


def test_word_forms_and_patterns() -> None:
    assert word_forms("refund", inflect=True) >= {"refund", "refunds", "refunded", "refunding"}
    assert "cancel" in word_forms("cancelled", inflect=True)
    assert word_forms("A-1") == {"a-1"}
    assert term_pattern("order  A-1").search("Order A-1 is late") is not None
    assert term_pattern("41").search("410 and 41.5") is None
