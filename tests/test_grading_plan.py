"""What grading derives once (per task: its required and forbidden patterns, its effects'
evidence; per trial: the calls that matched each required item; the answer grounded in
the prompt before the tool results; a literal equal at once) must be what it would derive
every time.

Each test fails if a derived value leaked from one trial to another, from a task to a
changed copy of it, or if the prompt-first reading of grounding gave another verdict
than reading every source.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import make_ctx
from proctor.grade.grounding import grounding, trial_grounding
from proctor.grade.state import without_state_checks
from proctor.tasks.models import EffectAssertion, Task
from proctor.tasks.predicates import Equal, _scalar_equal
from trial_run import checks_of, order_desk, run_task

DESK = order_desk(
    "plan-desk",
    {"A-100": {"status": "placed", "total": 42}, "A-200": {"status": "placed", "total": 17}},
)


def cancel_task(order_id: str = "A-100") -> Task:
    return Task.model_validate(
        {
            "id": "plan-cancel",
            "domain": DESK.name,
            "prompt": f"Cancel order {order_id}, I changed my mind.",
            "expect": {
                "outcome": [{"effect": "orders.cancel", "where": {"order_id": order_id}}],
                "trajectory": {
                    "required": [{"tool": "orders.get", "args": {"order_id": order_id}}],
                    "forbidden": [{"tool": "orders.cancel", "args": {"order_id": "A-200"}}],
                },
                "answer": {"grounded": True},
            },
        }
    )


def cancels(order_id: str) -> Any:
    def agent(_: Any, box: Any) -> str:
        box.call("orders.get", {"order_id": order_id})
        box.call("orders.cancel", {"order_id": order_id})
        return f"Order {order_id} is cancelled."

    return agent


def test_trials_of_one_task_each_read_their_own_calls() -> None:
    task = cancel_task()
    for _ in range(2):  # right, wrong, right again, wrong again
        right = run_task(task, DESK, cancels("A-100"))
        wrong = run_task(task, DESK, cancels("A-200"))
        good, bad = checks_of(right), checks_of(wrong)
        assert good["required:orders.get"].passed and good["forbidden:orders.cancel"].passed
        assert right.result.metrics["arg_accuracy"] == 1.0
        assert not bad["required:orders.get"].passed
        assert bad["required:orders.get"].evidence["same_tool_other_args"][0]["args"] == {
            "order_id": "A-200"
        }
        assert not bad["forbidden:orders.cancel"].passed
        assert not bad["effect:orders.cancel"].passed
        assert wrong.result.metrics["arg_accuracy"] == 0.0
        assert wrong.result.metrics["tool_recall"] == 1.0  # the tool, with other arguments


def test_a_changed_copy_of_a_task_is_graded_on_its_own_expectations() -> None:
    original = cancel_task("A-100")
    assert checks_of(run_task(original, DESK, cancels("A-100")))["required:orders.get"].passed
    changed = original.model_copy(update={"expect": cancel_task("A-200").expect})
    checks = checks_of(run_task(changed, DESK, cancels("A-100")))
    required, effect = checks["required:orders.get"], checks["effect:orders.cancel"]
    assert not required.passed and not effect.passed
    assert required.evidence["expected"] == [{"tool": "orders.get", "args": {"order_id": "A-200"}}]
    assert effect.evidence["where"] == {"order_id": "A-200"}
    assert checks_of(run_task(original, DESK, cancels("A-100")))["required:orders.get"].passed


def reads_total(answer: str) -> Any:
    def agent(_: Any, box: Any) -> str:
        box.call("orders.get", {"order_id": "A-100"})
        return answer

    return agent


def test_a_fact_only_a_tool_result_holds_is_grounded_and_one_no_source_holds_is_not() -> None:
    task = cancel_task()
    said = checks_of(run_task(task, DESK, reads_total("Order A-100 totals 42.")))["grounded"]
    assert said.passed and said.evidence == {"ungrounded": [], "sources": 2}
    made_up = checks_of(run_task(task, DESK, reads_total("Order A-100 totals 43.")))["grounded"]
    assert not made_up.passed and made_up.evidence == {"ungrounded": ["43"], "sources": 2}
    prompt_only = checks_of(run_task(task, DESK, lambda _, box: "Order A-100, noted."))["grounded"]
    assert prompt_only.passed and prompt_only.evidence == {"ungrounded": [], "sources": 1}


FACTS = ["A-100", "A-200", "42", "17", "3.5", "50%", "2024-03-05", "March 5", "09:40", "0.5"]


@settings(max_examples=80, deadline=None)
@given(
    said=st.lists(st.sampled_from(FACTS), max_size=4),
    prompt=st.lists(st.sampled_from(FACTS), max_size=3),
    results=st.lists(st.lists(st.sampled_from(FACTS), max_size=3), max_size=3),
    language=st.sampled_from(["en", "es"]),
)
def test_prompt_first_grounding_is_grounding_in_every_source(
    said: list[str], prompt: list[str], results: list[list[str]], language: str
) -> None:
    steps = [("orders.get", {"n": i}, "ok", {"note": " ".join(r)}) for i, r in enumerate(results)]
    answer = "We found " + ", ".join(said) + "."
    ctx = make_ctx({}, steps, answer, prompt="Look at " + " ".join(prompt), language=language)
    missing, unreadable, sources = trial_grounding(ctx)
    assert (missing, unreadable) == grounding(answer, [ctx.task.prompt, *ctx.tool_texts], language)
    assert sources == 1 + len(results)


def refund_desk(claims: tuple[str, ...]) -> Any:
    """A desk whose `orders.refund` write is claimed by `claims` (an entity `order_id`)."""
    desk = order_desk("refunds", {"A-100": {"total": 42}})

    @desk.tool("orders.refund", kind="write", entity="order_id", claims=claims)
    def refund(state: dict[str, Any], order_id: str) -> dict[str, Any]:
        """Refund an order."""
        return {"order_id": order_id, "refunded": True}

    return desk


def test_one_task_on_two_domains_reads_each_domain_claims() -> None:
    task = Task.model_validate(
        {"id": "plan-refund", "domain": "refunds", "prompt": "Please refund order A-100."}
    )
    says = "Your order A-100 has been refunded."  # and no refund made
    claimed = checks_of(run_task(task, refund_desk(("refunded",)), lambda _, box: says))
    assert not claimed["false_success:refunded"].passed
    assert claimed["false_success:refunded"].evidence["claimed_entities"] == ["A-100"]
    other = checks_of(run_task(task, refund_desk(("reimbursed",)), lambda _, box: says))
    assert "false_success:refunded" not in other  # this domain's write says "reimbursed"


SCALARS = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False)
TEXTS = st.sampled_from(["A-100", "a-100", " A-100 ", "cancelled", "Cancelled", "", "1"])


@given(actual=SCALARS | TEXTS, expected=SCALARS | TEXTS)
def test_a_literal_taken_as_equal_at_once_is_equal_after_normalising(
    actual: Any, expected: Any
) -> None:
    assert Equal(expected).test(actual) == _scalar_equal(actual, expected)


def test_a_task_less_its_state_checks_is_one_copy_per_task() -> None:
    outcome = [
        {"effect": "orders.cancel", "where": {"order_id": "A-100"}},
        {"path": "orders.A-100.status", "equals": "cancelled"},
    ]
    task = Task.model_validate({**cancel_task().model_dump(), "expect": {"outcome": outcome}})
    copy, dropped = without_state_checks(task)
    dropped.append("changed by a caller")
    again, dropped_again = without_state_checks(task)
    assert again is copy and dropped_again == ["state:orders.A-100.status"]
    assert [a.effect for a in copy.expect.outcome if isinstance(a, EffectAssertion)] == [
        "orders.cancel"
    ]
    assert len(copy.expect.outcome) == 1
    twin = Task.model_validate(task.model_dump())  # equal, another object: its own copy
    assert without_state_checks(twin)[0] is not copy
    plain = cancel_task()
    assert without_state_checks(plain) == (plain, [])
