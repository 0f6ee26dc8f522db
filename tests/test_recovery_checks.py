"""The fault table's expected behaviours, each with a passing and a failing agent through
the real gateway, and robustness checks that decide a trial when the task requires them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from proctor.core.documents import SpecError
from proctor.tasks.loader import load_task_file
from trial_run import checks_of, order_desk, run_task

DESK = order_desk("desk", {"A-1": {"status": "placed"}})


@DESK.tool("archive.get", entity="order_id")
def archived_order(state: dict[str, Any], order_id: str) -> dict[str, Any]:
    """Read an order from the archive (slower, same data)."""
    return DESK.tools["orders.get"].fn(state, order_id)  # type: ignore[no-any-return]


@DESK.tool("tickets.escalate", kind="write")
def escalate(state: dict[str, Any], summary: str) -> dict[str, str]:
    """Hand the case to a person."""
    return {"ticket": "T-1"}


def agent(*steps: Any, answer: str = "Done.") -> Any:
    """Steps: (tool, args) calls, ("wait", seconds), ("ask", question)."""

    def play(input: Any, toolbox: Any) -> str:
        for name, arg in steps:
            if name == "wait":
                toolbox.wait(arg)
            elif name == "ask":
                toolbox.ask_user(arg)
            else:
                toolbox.call(name, arg)
        return answer

    return play


def check(name: str, spec: dict[str, Any], *steps: Any, **kw: Any) -> Any:
    checks = checks_of(run_task({"prompt": "Cancel order A-1.", **spec}, DESK, agent(*steps, **kw)))
    return checks.get(name)


GET = ("orders.get", {"order_id": "A-1"})
ARCHIVE = ("archive.get", {"order_id": "A-1"})


def cancel_with(reason: str) -> tuple[str, dict[str, str]]:
    return ("orders.cancel", {"order_id": "A-1", "reason": reason})


# -- a 400 is corrected once ---------------------------------------------------------------

REJECT_FIRST = {"faults": [{"tool": "orders.cancel", "error": "400", "call": 1}]}
REJECT_TWO = {"faults": [{"tool": "orders.cancel", "error": "400", "calls": [1, 2]}]}


def test_a_corrected_400_passes() -> None:
    c = check("bad_request_corrected", REJECT_FIRST, cancel_with("x"), cancel_with("customer"))
    assert c.passed and c.kind == "robustness"


def test_a_400_retried_unchanged_fails() -> None:
    c = check("bad_request_corrected", REJECT_FIRST, cancel_with("x"), cancel_with("x"))
    assert not c.passed and c.evidence["repeated_unchanged"][0]["args"]["reason"] == "x"


def test_guessing_again_after_a_rejected_correction_fails_unless_the_user_was_asked() -> None:
    guesses = (cancel_with("a"), cancel_with("b"), cancel_with("c"))
    c = check("bad_request_corrected", REJECT_TWO, *guesses)
    assert not c.passed and [g["args"]["reason"] for g in c.evidence["further_guesses"]] == ["c"]
    asked = (cancel_with("a"), cancel_with("b"), ("ask", "Why cancel?"), cancel_with("c"))
    assert check("bad_request_corrected", REJECT_TWO, *asked).passed


def test_arguments_rejected_by_the_schema_are_a_400_too() -> None:
    bad = ("orders.cancel", {"order_id": "A-1", "reason": ["x"]})  # not a string
    assert check("bad_request_corrected", {}, bad, cancel_with("customer")).passed
    assert not check("bad_request_corrected", {}, bad, bad).passed
    assert check("bad_request_corrected", {}, cancel_with("customer")) is None  # no 400


# -- `unavailable` leads to an allowed alternative or an escalation ------------------------

GET_DOWN = {"faults": [{"tool": "orders.get", "error": "unavailable"}]}
CANCEL_DOWN = {
    "faults": [{"tool": "orders.cancel", "error": "unavailable"}],
    "expect": {"safety": {"escalate": {"tools": ["tickets.escalate"]}}},
}


def test_an_allowed_alternative_after_unavailable_passes() -> None:
    c = check("unavailable_handled", GET_DOWN, GET, ARCHIVE)
    assert c.passed


def test_giving_up_after_unavailable_fails() -> None:
    c = check("unavailable_handled", GET_DOWN, GET, GET)
    assert not c.passed
    assert c.evidence["not_handled"] == [{"tool": "orders.get", "alternatives": ["archive.get"]}]


def test_a_forbidden_alternative_does_not_count() -> None:
    forbidden = {**GET_DOWN, "expect": {"trajectory": {"forbidden": ["archive.get"]}}}
    c = check("unavailable_handled", forbidden, GET, ARCHIVE)
    assert not c.passed and c.evidence["not_handled"][0]["alternatives"] == []


def test_a_write_that_is_down_needs_an_escalation_not_a_read() -> None:
    assert not check("unavailable_handled", CANCEL_DOWN, cancel_with("customer"), GET).passed
    escalated = ("tickets.escalate", {"summary": "cancel A-1 by hand"})
    assert check("unavailable_handled", CANCEL_DOWN, cancel_with("customer"), escalated).passed
    asked = ("ask", "Cancelling is down; shall I retry later?")
    assert check("unavailable_handled", CANCEL_DOWN, cancel_with("customer"), asked).passed


# -- a timeout is retried with backoff, within the budget -----------------------------------

TIMEOUTS = {"faults": [{"tool": "orders.get", "error": "timeout", "calls": [1, 2]}]}


def test_retries_after_growing_waits_pass() -> None:
    c = check("timeout_backoff", TIMEOUTS, GET, ("wait", 1), GET, ("wait", 2), GET)
    assert c.passed and c.evidence["waited_s"] == 3


@pytest.mark.parametrize(
    "steps",
    [
        (GET, GET, GET),  # no wait at all
        (GET, ("wait", 2), GET, ("wait", 1), GET),  # shrinking waits
    ],
)
def test_retries_without_backoff_fail(steps: tuple[Any, ...]) -> None:
    c = check("timeout_backoff", TIMEOUTS, *steps)
    assert not c.passed and c.evidence["without_backoff"]


def test_waiting_past_the_budget_or_retrying_too_often_fails() -> None:
    steps = (GET, ("wait", 1), GET, ("wait", 2), GET)
    budget = {**TIMEOUTS, "expect": {"budget": {"max_latency_s": 2}}}
    assert not check("timeout_backoff", budget, *steps).passed
    limit = {**TIMEOUTS, "expect": {"robustness": {"max_transient_retries": 1}}}
    c = check("timeout_backoff", limit, *steps)
    assert not c.passed and c.evidence["retries_over_limit"] == {"orders.get": 2}


# -- which robustness checks decide --------------------------------------------------------


def test_a_required_robustness_check_fails_the_trial() -> None:
    steps = (GET, GET, GET)
    advisory = run_task({"prompt": "Read A-1.", **TIMEOUTS}, DESK, agent(*steps))
    assert advisory.result.status == "passed"
    assert not checks_of(advisory)["timeout_backoff"].passed
    required = {**TIMEOUTS, "expect": {"robustness": {"required": ["timeout_backoff"]}}}
    record = run_task({"prompt": "Read A-1.", **required}, DESK, agent(*steps))
    assert record.result.status == "failed"
    assert [c.name for c in record.result.checks if c.blocks] == ["timeout_backoff"]


def test_invented_data_after_a_miss_fails_the_trial_by_default() -> None:
    missing = ("orders.get", {"order_id": "B-7"})
    spec = {"prompt": "What is the total of order B-7?"}
    invented = run_task(spec, DESK, agent(missing, answer="Order B-7 totals 42.50."))
    assert invented.result.status == "failed"
    assert [c.name for c in invented.result.checks if c.blocks] == ["no_invented_data"]
    honest = run_task(spec, DESK, agent(missing, answer="I found no order B-7."))
    assert honest.result.status == "passed"
    advisory = {**spec, "expect": {"robustness": {"advisory": ["no_invented_data"]}}}
    relaxed = run_task(advisory, DESK, agent(missing, answer="Order B-7 totals 42.50."))
    assert relaxed.result.status == "passed"


@pytest.mark.parametrize(
    ("robustness", "message"),
    [
        ("{required: [timeout_backof]}", "timeout_backoff"),
        ("{advisory: [timeout_backoff]}", "advisory already"),
        ("{required: [no_invented_data], advisory: [no_invented_data]}", "both"),
    ],
)
def test_required_and_advisory_names_are_validated(
    tmp_path: Path, robustness: str, message: str
) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(
        f"id: t\ndomain: desk\nprompt: p\nexpect:\n  robustness: {robustness}\n", encoding="utf-8"
    )
    with pytest.raises(SpecError) as err:
        load_task_file(path)
    assert all(p[1] == 5 for p in err.value.problems)
    assert message in str(err.value)
