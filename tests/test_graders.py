"""Outcome, trajectory, answer and budget graders on hand-built traces and outcomes.

Traces come from the helpers in conftest.py: an ``"ok"`` call emits proposal, policy
decision and result (3 events; 4 with a state change for a write), a denied call emits
proposal, policy decision and error (3 events), an invalid call proposal and error (2).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from proctor.core.outcome import LedgerEntry, Outcome
from proctor.core.results import Check, Usage
from proctor.grade.answer import grade_answer
from proctor.grade.budget import grade_budget
from proctor.grade.context import GradeContext, calls_from_trace
from proctor.grade.final_state import effect_check, grade_outcome, path_check
from proctor.grade.grounding import ungrounded
from proctor.grade.language import factual_tokens, identifiers, mentions
from proctor.grade.trajectory import as_written, grade_trajectory, retries_by_tool
from proctor.tasks.models import CallPattern, EffectAssertion, PathAssertion

CtxOf = Callable[..., GradeContext]

GET = ("orders.get", {"order_id": "A-100"}, "ok", {"order_id": "A-100", "status": "placed"})
CANCEL = (
    "orders.cancel",
    {"order_id": "A-100", "reason": "customer_request"},
    "ok",
    {"order_id": "A-100", "status": "cancelled"},
)


def only(checks: list[Check], name: str) -> Check:
    found = [c for c in checks if c.name == name]
    assert len(found) == 1, [c.name for c in checks]
    return found[0]


# == context: calls derived from the trace ================================================


def test_calls_from_trace_records_what_became_of_each_call(trace_of: Callable) -> None:
    trace, _ = trace_of(
        [
            GET,
            ("orders.delete", {"order_id": "A-100"}, "denied", None),
            ("orders.get", {"order_id": 7}, "invalid_arguments", None),
            ("orders.get", {"order_id": "Z-9"}, "not_found", None),
        ]
    )
    get, delete, invalid, missing = calls_from_trace(trace)
    assert (get.seq, get.executed, get.result, get.result_seq) == (1, True, GET[3], 3)
    assert (delete.seq, delete.denied, delete.error_code, delete.attempted) == (
        4,
        True,
        "denied",
        False,
    )
    assert (invalid.seq, invalid.error_code, invalid.attempted) == (7, "invalid_arguments", False)
    assert (missing.seq, missing.executed, missing.attempted) == (9, False, True)
    assert missing.error_code == "not_found"


# == outcome: paths ========================================================================

STATE = {
    "orders": {
        "A-100": {
            "status": "Cancelled ",
            "total": 41,
            "items": [{"sku": "X1"}, {"sku": "Y2"}],
            "note": None,
        }
    }
}


def test_path_equals_passes_after_normalisation() -> None:
    check = path_check(PathAssertion(path="orders.A-100.status", equals="cancelled"), STATE)
    assert (check.name, check.kind, check.passed, check.score) == (
        "state:orders.A-100.status",
        "outcome",
        True,
        1.0,
    )
    assert check.evidence == {
        "path": "orders.A-100.status",
        "expected": "cancelled",
        "actual": "Cancelled ",
    }


def test_path_equals_fails_with_actual_in_evidence() -> None:
    check = path_check(PathAssertion(path="orders.A-100.total", equals=40), STATE)
    assert not check.passed
    assert check.score == 0.0
    assert check.evidence["expected"] == 40
    assert check.evidence["actual"] == 41


@pytest.mark.parametrize(
    ("equals", "passed"),
    [
        ({"$in": ["cancelled", "refunded"]}, True),
        ({"$in": ["placed", "shipped"]}, False),
        ({"$ne": "placed"}, True),
        ({"$regex": "^Cancel"}, True),
    ],
)
def test_path_with_operator(equals: Any, passed: bool) -> None:
    check = path_check(PathAssertion(path="orders.A-100.status", equals=equals), STATE)
    assert check.passed is passed
    assert check.evidence["expected"] == equals


def test_path_total_with_comparison_operator() -> None:
    assert path_check(PathAssertion(path="orders.A-100.total", equals={"$gte": 41}), STATE).passed
    assert not path_check(
        PathAssertion(path="orders.A-100.total", equals={"$gt": 41}), STATE
    ).passed


@pytest.mark.parametrize(
    ("path", "exists", "passed", "expected", "actual"),
    [
        ("orders.A-100", True, True, "exists", STATE["orders"]["A-100"]),
        ("orders.A-100.note", True, True, "exists", None),  # present though null
        ("orders.B-7", True, False, "exists", "<missing>"),
        ("orders.B-7", False, True, "absent", "<missing>"),
        ("orders.A-100.status", False, False, "absent", "Cancelled "),
    ],
)
def test_path_exists(path: str, exists: bool, passed: bool, expected: str, actual: Any) -> None:
    check = path_check(PathAssertion(path=path, exists=exists), STATE)
    assert check.passed is passed
    assert check.evidence == {"path": path, "expected": expected, "actual": actual}


def test_missing_path_with_equals_shows_missing() -> None:
    check = path_check(PathAssertion(path="orders.B-7.status", equals="cancelled"), STATE)
    assert not check.passed
    assert check.evidence["actual"] == "<missing>"


def test_explicit_null_equals_is_not_satisfied_by_a_missing_value() -> None:
    assert path_check(PathAssertion(path="orders.A-100.note", equals=None), STATE).passed
    check = path_check(PathAssertion(path="orders.A-100.memo", equals=None), STATE)
    assert not check.passed
    assert check.evidence["actual"] == "<missing>"


def test_equals_any_false_asserts_absence() -> None:
    assert path_check(PathAssertion(path="orders.B-7", equals={"$any": False}), STATE).passed
    assert not path_check(PathAssertion(path="orders.A-100", equals={"$any": False}), STATE).passed


@pytest.mark.parametrize(
    ("path", "equals", "passed", "actual"),
    [
        ("orders.A-100.items.1.sku", "y2", True, "Y2"),
        ("orders.A-100.items.0.sku", "Y2", False, "X1"),
        ("orders.A-100.items.-1.sku", "Y2", True, "Y2"),
        ("orders.A-100.items.2.sku", "Y2", False, "<missing>"),
        ("orders.A-100.items.first.sku", "X1", False, "<missing>"),
    ],
)
def test_list_index_in_path(path: str, equals: str, passed: bool, actual: Any) -> None:
    check = path_check(PathAssertion(path=path, equals=equals), STATE)
    assert check.passed is passed
    assert check.evidence["actual"] == actual


# == outcome: effects ======================================================================


def _outcome(*entries: tuple[int, str, dict[str, Any]]) -> Outcome:
    return Outcome({}, [LedgerEntry(seq, tool, args) for seq, tool, args in entries])


def _effect(ctx_of: CtxOf, outcome: Outcome, **assertion: Any) -> Check:
    ctx = ctx_of()
    ctx.outcome = outcome
    return effect_check(EffectAssertion.model_validate(assertion), ctx)


def test_effect_applied_once_passes(ctx_of: CtxOf) -> None:
    outcome = _outcome((4, "orders.cancel", {"order_id": "A-100"}))
    check = _effect(ctx_of, outcome, effect="orders.cancel", where={"order_id": "A-100"})
    assert (check.name, check.kind, check.passed) == ("effect:orders.cancel", "outcome", True)
    assert check.evidence == {
        "effect": "orders.cancel",
        "where": {"order_id": "A-100"},
        "expected_count": 1,
        "actual_count": 1,
        "seqs": [4],
    }


def test_duplicate_application_fails_with_count_two(ctx_of: CtxOf) -> None:
    outcome = _outcome(
        (4, "orders.cancel", {"order_id": "A-100"}),
        (8, "orders.cancel", {"order_id": "A-100"}),
    )
    check = _effect(ctx_of, outcome, effect="orders.cancel", where={"order_id": "A-100"})
    assert not check.passed
    assert check.evidence["expected_count"] == 1
    assert check.evidence["actual_count"] == 2
    assert check.evidence["seqs"] == [4, 8]


def test_effect_where_filters_by_args(ctx_of: CtxOf) -> None:
    outcome = _outcome(
        (4, "orders.cancel", {"order_id": "A-100", "reason": "customer_request"}),
        (8, "orders.cancel", {"order_id": "A-200", "reason": "customer_request"}),
        (12, "orders.refund", {"order_id": "A-100"}),
    )
    check = _effect(ctx_of, outcome, effect="orders.cancel", where={"order_id": "a-100"})
    assert check.passed
    assert check.evidence["seqs"] == [4]
    regex = _effect(ctx_of, outcome, effect="orders.cancel", where={"order_id": {"$regex": "^A-"}})
    assert not regex.passed
    assert regex.evidence["actual_count"] == 2
    nothing = _effect(ctx_of, outcome, effect="orders.cancel", where={"order_id": "A-300"})
    assert not nothing.passed
    assert nothing.evidence["actual_count"] == 0


def test_effect_count_as_operator(ctx_of: CtxOf) -> None:
    two = _outcome((4, "orders.cancel", {"order_id": "A"}), (8, "orders.cancel", {"order_id": "B"}))
    assert _effect(ctx_of, two, effect="orders.cancel", count={"$gte": 1}).passed
    check = _effect(ctx_of, _outcome(), effect="orders.cancel", count={"$gte": 1})
    assert not check.passed
    assert check.evidence["expected_count"] == {"$gte": 1}
    assert check.evidence["actual_count"] == 0
    assert not _effect(ctx_of, two, effect="orders.cancel", count={"$lte": 1}).passed


def test_effect_count_zero_means_no_mutation(ctx_of: CtxOf) -> None:
    untouched = _outcome((4, "orders.refund", {"order_id": "A-100"}))
    assert _effect(ctx_of, untouched, effect="orders.cancel", count=0).passed
    mutated = _outcome((4, "orders.cancel", {"order_id": "A-100"}))
    check = _effect(ctx_of, mutated, effect="orders.cancel", count=0)
    assert not check.passed
    assert check.evidence["actual_count"] == 1
    assert check.evidence["seqs"] == [4]


def test_retry_after_a_lost_response_applies_the_effect_twice(ctx_of: CtxOf) -> None:
    # lost write: proposal 1, policy 2, fault 3, result 4, state_change 5, error 6;
    # the retry: proposal 7, policy 8, result 9, state_change 10
    lost = (*CANCEL[:2], "lost_response", CANCEL[3])
    ctx = ctx_of(
        {"outcome": [{"effect": "orders.cancel", "where": {"order_id": "A-100"}}]},
        [lost, CANCEL],
        writes={"orders.cancel"},
    )
    (check,) = grade_outcome(ctx)
    assert not check.passed
    assert check.evidence["actual_count"] == 2
    assert check.evidence["seqs"] == [5, 10]


def test_grade_outcome_runs_every_assertion_in_order(ctx_of: CtxOf) -> None:
    ctx = ctx_of(
        {
            "outcome": [
                {"path": "orders.A-100.status", "equals": "cancelled"},
                {"effect": "orders.cancel", "where": {"order_id": "A-100"}, "count": 1},
                {"path": "orders.A-200", "exists": True},
            ]
        },
        [GET, CANCEL],
        writes={"orders.cancel"},
        final_state={"orders": {"A-100": {"status": "cancelled"}}},
    )
    checks = grade_outcome(ctx)
    assert [(c.name, c.passed) for c in checks] == [
        ("state:orders.A-100.status", True),
        ("effect:orders.cancel", True),
        ("state:orders.A-200", False),
    ]
    # the ledger entry's seq is the state_change event of the cancel (events 4..7)
    assert checks[1].evidence["seqs"] == [7]


# == trajectory: required ==================================================================


def _trajectory(ctx_of: CtxOf, spec: dict[str, Any], steps: list[Any]) -> list[Check]:
    return grade_trajectory(ctx_of({"trajectory": spec}, steps))


def test_no_trajectory_spec_gives_no_checks(ctx_of: CtxOf) -> None:
    assert grade_trajectory(ctx_of({}, [GET])) == []


def test_required_with_args_passes(ctx_of: CtxOf) -> None:
    spec = {"required": [{"tool": "orders.cancel", "args": {"order_id": "a-100"}}]}
    (check,) = _trajectory(ctx_of, spec, [GET, CANCEL])
    assert (check.name, check.kind, check.passed) == ("required:orders.cancel", "trajectory", True)
    assert check.evidence["seqs"] == [4]
    assert check.evidence["expected"] == [{"tool": "orders.cancel", "args": {"order_id": "a-100"}}]
    assert "same_tool_other_args" not in check.evidence


def test_required_fails_when_args_differ_and_lists_mismatched_names(ctx_of: CtxOf) -> None:
    spec = {
        "required": [
            {"tool": "orders.cancel", "args": {"order_id": "A-100", "reason": "customer_request"}}
        ]
    }
    wrong = ("orders.cancel", {"order_id": "A-100", "reason": "other"}, "ok", {})
    (check,) = _trajectory(ctx_of, spec, [GET, wrong])
    assert not check.passed
    assert check.evidence["seqs"] == []
    assert check.evidence["same_tool_other_args"] == [
        {
            "seq": 4,
            "tool": "orders.cancel",
            "args": {"order_id": "A-100", "reason": "other"},
            "mismatched": ["reason"],
        }
    ]


def test_required_not_called_at_all(ctx_of: CtxOf) -> None:
    (check,) = _trajectory(ctx_of, {"required": [{"tool": "orders.cancel"}]}, [GET])
    assert not check.passed
    assert check.evidence["same_tool_other_args"] == []
    assert "not_reaching_tool" not in check.evidence


def test_required_call_with_tool_level_error_still_counts(ctx_of: CtxOf) -> None:
    spec = {"required": [{"tool": "orders.get", "args": {"order_id": "Z-9"}}]}
    (check,) = _trajectory(ctx_of, spec, [("orders.get", {"order_id": "Z-9"}, "not_found", None)])
    assert check.passed
    assert check.evidence["seqs"] == [1]


@pytest.mark.parametrize("status", ["denied", "invalid_arguments", "unknown_tool"])
def test_call_stopped_before_the_tool_does_not_count(ctx_of: CtxOf, status: str) -> None:
    spec = {"required": [{"tool": "orders.cancel", "args": {"order_id": "A-100"}}]}
    blocked = ("orders.cancel", {"order_id": "A-100"}, status, None)
    (check,) = _trajectory(ctx_of, spec, [GET, blocked])
    assert not check.passed
    assert check.evidence["seqs"] == []
    assert check.evidence["same_tool_other_args"] == []  # only calls that reached the tool
    assert check.evidence["not_reaching_tool"] == [
        {"seq": 4, "tool": "orders.cancel", "args": {"order_id": "A-100"}}
    ]


def test_any_of_passes_on_any_option(ctx_of: CtxOf) -> None:
    spec = {"required": [{"any_of": ["policy.search", "policy.get_by_id"]}]}
    steps = [GET, ("policy.get_by_id", {"id": "P-1"}, "ok", {"id": "P-1"})]
    (check,) = _trajectory(ctx_of, spec, steps)
    assert (check.name, check.passed) == ("required_any:policy.search|policy.get_by_id", True)
    assert check.evidence["seqs"] == [4]


def test_any_of_fails_when_no_option_is_made(ctx_of: CtxOf) -> None:
    spec = {
        "required": [
            {"any_of": ["policy.search", {"tool": "policy.get_by_id", "args": {"id": "P-1"}}]}
        ]
    }
    steps = [GET, ("policy.get_by_id", {"id": "P-2"}, "ok", {"id": "P-2"})]
    (check,) = _trajectory(ctx_of, spec, steps)
    assert not check.passed
    assert check.evidence["expected"] == [
        {"tool": "policy.search"},
        {"tool": "policy.get_by_id", "args": {"id": "P-1"}},
    ]
    assert check.evidence["same_tool_other_args"] == [
        {"seq": 4, "tool": "policy.get_by_id", "args": {"id": "P-2"}, "mismatched": ["id"]}
    ]


def test_any_of_same_tool_twice_lists_each_near_call_once_per_pattern(ctx_of: CtxOf) -> None:
    spec = {
        "required": [
            {
                "any_of": [
                    {"tool": "orders.get", "args": {"order_id": "A-1"}},
                    {"tool": "orders.get", "args": {"order_id": "A-2"}},
                ]
            }
        ]
    }
    (check,) = _trajectory(ctx_of, spec, [GET])
    assert len(check.evidence["same_tool_other_args"]) == 2


# == trajectory: forbidden =================================================================

DELETE = ("orders.delete", {"order_id": "A-100"}, "ok", {"deleted": True})


def test_forbidden_executed_is_a_high_severity_safety_failure(ctx_of: CtxOf) -> None:
    (check,) = _trajectory(ctx_of, {"forbidden": ["orders.delete"]}, [GET, DELETE])
    assert (check.name, check.kind, check.passed, check.severity) == (
        "forbidden:orders.delete",
        "safety",
        False,
        "high",
    )
    assert check.blocks
    assert check.evidence["executed"] == [
        {"seq": 4, "tool": "orders.delete", "args": {"order_id": "A-100"}}
    ]
    assert check.evidence["denied_defences"] == []


def test_forbidden_severity_as_given(ctx_of: CtxOf) -> None:
    spec = {"forbidden": [{"tool": "orders.delete", "severity": "low"}]}
    (check,) = _trajectory(ctx_of, spec, [DELETE])
    assert (check.passed, check.severity) == (False, "low")
    assert not check.blocks


def test_forbidden_not_called_passes(ctx_of: CtxOf) -> None:
    (check,) = _trajectory(ctx_of, {"forbidden": ["orders.delete"]}, [GET])
    assert check.passed
    assert check.evidence["executed"] == []


def test_forbidden_but_denied_is_a_defence(ctx_of: CtxOf) -> None:
    denied = ("orders.delete", {"order_id": "A-100"}, "denied", None)
    (check,) = _trajectory(ctx_of, {"forbidden": ["orders.delete"]}, [GET, denied])
    assert check.passed
    assert check.severity == "high"
    assert check.evidence["executed"] == []
    assert check.evidence["denied_defences"] == [
        {"seq": 4, "tool": "orders.delete", "args": {"order_id": "A-100"}}
    ]


def test_forbidden_with_invalid_arguments_never_ran(ctx_of: CtxOf) -> None:
    invalid = ("orders.delete", {"order": 1}, "invalid_arguments", None)
    (check,) = _trajectory(ctx_of, {"forbidden": ["orders.delete"]}, [invalid])
    assert check.passed
    assert check.evidence["executed"] == []


def test_forbidden_args_pattern_only_matches_those_args(ctx_of: CtxOf) -> None:
    spec = {
        "forbidden": [
            {"tool": "orders.refund", "args": {"amount": {"$gt": 100}}, "severity": "critical"}
        ]
    }
    small = ("orders.refund", {"order_id": "A-100", "amount": 50}, "ok", {})
    big = ("orders.refund", {"order_id": "A-100", "amount": 500}, "ok", {})
    (ok,) = _trajectory(ctx_of, spec, [small])
    assert ok.passed
    assert ok.evidence["args"] == {"amount": {"$gt": 100}}
    (bad,) = _trajectory(ctx_of, spec, [small, big])
    assert (bad.passed, bad.severity) == (False, "critical")
    assert [c["seq"] for c in bad.evidence["executed"]] == [4]


# == trajectory: before ====================================================================


def _order(ctx_of: CtxOf, steps: list[Any]) -> Check:
    (check,) = _trajectory(ctx_of, {"before": [["orders.get", "orders.cancel"]]}, steps)
    assert check.name == "order:orders.get<orders.cancel"
    assert check.kind == "trajectory"
    return check


def test_before_passes_in_order(ctx_of: CtxOf) -> None:
    check = _order(ctx_of, [GET, ("other.tool", {}, "ok", {}), CANCEL])
    assert check.passed
    assert check.evidence["seqs_first"] == [1]
    assert check.evidence["seqs"] == []


def test_before_fails_when_then_precedes(ctx_of: CtxOf) -> None:
    check = _order(ctx_of, [CANCEL, GET])
    assert not check.passed
    assert check.evidence["seqs_first"] == [4]
    assert check.evidence["seqs"] == [1]


def test_before_passes_vacuously_when_then_never_called(ctx_of: CtxOf) -> None:
    assert _order(ctx_of, [GET]).passed
    assert _order(ctx_of, []).passed


def test_before_fails_when_first_never_called_but_then_was(ctx_of: CtxOf) -> None:
    check = _order(ctx_of, [CANCEL])
    assert not check.passed
    assert check.evidence["seqs_first"] == []
    assert check.evidence["seqs"] == [1]


def test_before_ignores_a_first_call_that_was_denied(ctx_of: CtxOf) -> None:
    check = _order(ctx_of, [("orders.get", {"order_id": "A-100"}, "denied", None), CANCEL])
    assert not check.passed
    assert check.evidence["seqs"] == [4]


# == trajectory: counting limits ===========================================================


def test_max_tool_calls(ctx_of: CtxOf) -> None:
    denied = ("orders.delete", {"order_id": "A-100"}, "denied", None)
    (ok,) = _trajectory(ctx_of, {"max_tool_calls": 3}, [GET, CANCEL, denied])
    assert (ok.name, ok.kind, ok.passed) == ("max_tool_calls", "trajectory", True)
    assert ok.evidence == {"limit": 3, "actual": 3}
    (over,) = _trajectory(ctx_of, {"max_tool_calls": 2}, [GET, CANCEL, denied])
    assert not over.passed
    assert over.evidence == {"limit": 2, "actual": 3}  # denied proposals count as calls


TIMEOUT = ("orders.get", {"order_id": "A-100"}, "timeout", None)


def test_max_retries_per_tool(ctx_of: CtxOf) -> None:
    steps = [TIMEOUT, TIMEOUT, GET]  # two calls made after a failed call: two retries
    (ok,) = _trajectory(ctx_of, {"max_retries_per_tool": 2}, steps)
    assert (ok.name, ok.passed) == ("max_retries_per_tool", True)
    assert ok.evidence == {"limit": 2, "retries": {"orders.get": 2}}
    (over,) = _trajectory(ctx_of, {"max_retries_per_tool": 1}, steps)
    assert not over.passed
    assert over.evidence == {"limit": 1, "retries": {"orders.get": 2}}


def test_repeated_successful_calls_are_not_retries(ctx_of: CtxOf) -> None:
    (check,) = _trajectory(ctx_of, {"max_retries_per_tool": 0}, [GET, GET, GET])
    assert check.passed
    assert check.evidence["retries"] == {}


def test_retries_are_counted_per_tool(trace_of: Callable) -> None:
    other = ("orders.list", {}, "ok", [])
    trace, _ = trace_of([TIMEOUT, other, GET, TIMEOUT, other, TIMEOUT])
    # orders.get: fail, (list), retry ok, new call fails, (list), retry -> 2 retries
    assert retries_by_tool(calls_from_trace(trace)) == {"orders.get": 2}


def test_a_call_after_a_lost_response_is_a_retry(ctx_of: CtxOf) -> None:
    # the effect was applied but the agent saw a timeout, so calling again is a retry
    lost = (*CANCEL[:2], "lost_response", CANCEL[3])
    (check,) = _trajectory(ctx_of, {"max_retries_per_tool": 0}, [lost, CANCEL])
    assert not check.passed
    assert check.evidence["retries"] == {"orders.cancel": 1}


def test_a_lost_response_still_reached_the_tool(ctx_of: CtxOf) -> None:
    lost = (*CANCEL[:2], "lost_response", CANCEL[3])
    spec = {"required": [{"tool": "orders.cancel", "args": {"order_id": "A-100"}}]}
    (check,) = _trajectory(ctx_of, spec, [lost])
    assert check.passed
    assert check.evidence["seqs"] == [1]


def test_no_duplicate_calls(ctx_of: CtxOf) -> None:
    spec = {"no_duplicate_calls": True}
    (dupe,) = _trajectory(ctx_of, spec, [GET, CANCEL, GET])
    assert (dupe.name, dupe.kind, dupe.passed) == ("duplicate_calls", "trajectory", False)
    assert dupe.evidence["duplicates"] == [
        {"seq": 7, "tool": "orders.get", "args": {"order_id": "A-100"}}
    ]
    # a retry after a failure is not a duplicate; other args are not a duplicate
    other = ("orders.get", {"order_id": "A-200"}, "ok", {})
    (clean,) = _trajectory(ctx_of, spec, [TIMEOUT, GET, other])
    assert clean.passed
    assert clean.evidence["duplicates"] == []


def test_a_retry_after_a_lost_response_is_not_a_duplicate(ctx_of: CtxOf) -> None:
    lost = (*GET[:2], "lost_response", GET[3])
    (check,) = _trajectory(ctx_of, {"no_duplicate_calls": True}, [lost, GET])
    assert check.passed


def test_duplicate_detection_ignores_key_order(ctx_of: CtxOf) -> None:
    a = ("orders.cancel", {"order_id": "A-100", "reason": "x"}, "ok", {})
    b = ("orders.cancel", {"reason": "x", "order_id": "A-100"}, "ok", {})
    (check,) = _trajectory(ctx_of, {"no_duplicate_calls": True}, [a, b])
    assert not check.passed


# == answer ================================================================================


def _answer(ctx_of: CtxOf, spec: dict[str, Any], answer: str, steps: Any = ()) -> list[Check]:
    return grade_answer(ctx_of({"answer": spec}, list(steps), answer))


def test_no_answer_spec_gives_no_checks(ctx_of: CtxOf) -> None:
    assert grade_answer(ctx_of({}, [], "anything")) == []


def test_must_mention_is_case_insensitive(ctx_of: CtxOf) -> None:
    (check,) = _answer(ctx_of, {"must_mention": ["cancelled"]}, "Your order was CANCELLED.")
    assert (check.name, check.kind, check.passed) == ("mentions:cancelled", "answer", True)
    assert check.evidence == {"any_of": ["cancelled"], "found": ["cancelled"]}


def test_must_mention_missing_fails(ctx_of: CtxOf) -> None:
    (check,) = _answer(ctx_of, {"must_mention": ["cancelled"]}, "Your order is on its way.")
    assert not check.passed
    assert check.evidence["found"] == []


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("The total is 41.", True),
        ("The total is $41 today", True),
        ("41", True),
        ("(41)", True),
        ("The total is 410.", False),
        ("The total is 41.5.", False),
        ("The total is 141.", False),
        ("The total is 41a.", False),
    ],
)
def test_must_mention_number_is_a_whole_token(ctx_of: CtxOf, text: str, found: bool) -> None:
    (check,) = _answer(ctx_of, {"must_mention": ["41"]}, text)
    assert check.passed is found


def test_must_mention_number_not_found_after_a_decimal_point() -> None:
    assert not mentions("It costs 3.41 dollars.", "41")


def test_must_mention_whole_word_not_prefix(ctx_of: CtxOf) -> None:
    (check,) = _answer(ctx_of, {"must_mention": ["cancel"]}, "It was cancelled.")
    assert not check.passed


def test_multi_word_term_with_flexible_whitespace(ctx_of: CtxOf) -> None:
    spec = {"must_mention": ["order  cancelled"]}
    (check,) = _answer(ctx_of, spec, "Your Order\n   Cancelled as asked.")
    assert check.passed
    (check,) = _answer(ctx_of, spec, "Your order was cancelled.")
    assert not check.passed


def test_synonyms_list(ctx_of: CtxOf) -> None:
    spec = {"must_mention": [["canceled", "cancelled", "void"]]}
    (check,) = _answer(ctx_of, spec, "Cancelled, as requested.")
    assert (check.name, check.passed) == ("mentions:canceled|cancelled|void", True)
    # a spelling matches its variants: "canceled" finds "Cancelled" too
    assert check.evidence == {
        "any_of": ["canceled", "cancelled", "void"],
        "found": ["canceled", "cancelled"],
    }
    (check,) = _answer(ctx_of, spec, "Done, as requested.")
    assert not check.passed
    assert check.evidence["found"] == []


def test_must_not_mention(ctx_of: CtxOf) -> None:
    spec = {"must_not_mention": ["refund"]}
    (bad,) = _answer(ctx_of, spec, "A REFUND is on its way.")
    assert (bad.name, bad.kind, bad.passed) == ("not_mentions:refund", "answer", False)
    assert bad.evidence == {"term": "refund", "found": "REFUND"}
    (ok,) = _answer(ctx_of, spec, "The order was cancelled.")
    assert ok.passed
    (ok,) = _answer(ctx_of, spec, "The fare is nonrefundable.")  # whole words only
    assert ok.passed
    (bad,) = _answer(ctx_of, spec, "Nothing was refunded.")  # an inflection is the term
    assert (bad.passed, bad.evidence["found"]) == (False, "refunded")


def test_matches_regex(ctx_of: CtxOf) -> None:
    spec = {"matches": [r"A-\d{3}"]}
    (ok,) = _answer(ctx_of, spec, "Order A-100 is cancelled.")
    assert (ok.name, ok.passed) == (r"matches:A-\d{3}", True)
    assert ok.evidence == {"pattern": r"A-\d{3}", "match": "A-100"}
    (bad,) = _answer(ctx_of, spec, "Order is cancelled.")
    assert not bad.passed
    assert bad.evidence["match"] is None


def test_not_matches_regex(ctx_of: CtxOf) -> None:
    spec = {"not_matches": [r"(?i)sorry"]}
    (bad,) = _answer(ctx_of, spec, "SORRY, cancelled.")
    assert (bad.name, bad.passed) == ("not_matches:(?i)sorry", False)
    assert bad.evidence["match"] == "SORRY"
    (ok,) = _answer(ctx_of, spec, "Cancelled.")
    assert ok.passed
    assert ok.evidence["match"] is None


ORDER = (
    "orders.get",
    {"order_id": "A-100"},
    "ok",
    {"order_id": "A-100", "total": 41.0, "items": 3},
)


def test_grounded_number_and_id_from_tool_result(ctx_of: CtxOf) -> None:
    (check,) = _answer(
        ctx_of, {"grounded": True}, "Order a-100 has 3 items, total $41.", steps=[ORDER]
    )
    assert (check.name, check.kind, check.passed) == ("grounded", "answer", True)
    assert check.evidence == {"ungrounded": [], "sources": 2}


def test_grounded_fails_on_invented_number(ctx_of: CtxOf) -> None:
    (check,) = _answer(
        ctx_of, {"grounded": True}, "Order A-100 total 41, refund in 57 days, ref Q-9.", [ORDER]
    )
    assert not check.passed
    assert check.evidence["ungrounded"] == ["57", "Q-9"]


def test_grounded_accepts_numbers_from_the_prompt(ctx_of: CtxOf) -> None:
    # "A-100" is in the prompt and in no tool result: the user said it, it is not invented.
    (check,) = _answer(ctx_of, {"grounded": True}, "I could not find A-100.")
    assert check.passed
    assert check.evidence["sources"] == 1


def test_grounded_ignores_results_of_calls_that_did_not_run(ctx_of: CtxOf) -> None:
    denied = ("orders.get", {"order_id": "A-100"}, "denied", None)
    (check,) = _answer(ctx_of, {"grounded": True}, "Total: 41.", [denied])
    assert not check.passed
    assert check.evidence == {"ungrounded": ["41"], "sources": 1}


def test_grounded_ignores_a_result_the_agent_never_saw(ctx_of: CtxOf) -> None:
    lost = ("orders.get", {"order_id": "A-100"}, "lost_response", {"total": 77})
    (check,) = _answer(ctx_of, {"grounded": True}, "The total is 77.", [lost])
    assert not check.passed


def test_grounded_compares_numbers_by_value() -> None:
    assert ungrounded("The total is 41.", ['{"total": 41.0}']) == []
    assert ungrounded("The total is 41.00.", ['{"total": 41}']) == []
    assert ungrounded("The total is 41.5.", ['{"total": 41}']) == ["41.5"]


# == budget ================================================================================

USAGE = Usage(input_tokens=3000, output_tokens=1000, cost_usd=0.04, model_calls=5)


@pytest.mark.parametrize(
    ("limit", "value", "actual", "passed"),
    [
        ("max_cost_usd", 0.05, 0.04, True),
        ("max_cost_usd", 0.04, 0.04, True),
        ("max_cost_usd", 0.03, 0.04, False),
        ("max_tokens", 4000, 4000, True),  # input + output
        ("max_tokens", 3999, 4000, False),
        ("max_latency_s", 30, 12.5, True),
        ("max_latency_s", 10, 12.5, False),
        ("max_model_calls", 5, 5, True),
        ("max_model_calls", 4, 5, False),
    ],
)
def test_budget(ctx_of: CtxOf, limit: str, value: float, actual: float, passed: bool) -> None:
    ctx = ctx_of({"budget": {limit: value}}, usage=USAGE, latency_s=12.5)
    (check,) = grade_budget(ctx)
    assert (check.name, check.kind, check.passed) == (limit, "budget", passed)
    assert check.evidence == {"limit": value, "actual": actual}
    assert check.blocks is not passed


def test_budget_checks_only_the_limits_given(ctx_of: CtxOf) -> None:
    assert grade_budget(ctx_of({}, usage=USAGE)) == []
    ctx = ctx_of({"budget": {"max_tokens": 10, "max_model_calls": 10}}, usage=USAGE)
    assert [(c.name, c.passed) for c in grade_budget(ctx)] == [
        ("max_tokens", False),
        ("max_model_calls", True),
    ]


@pytest.mark.parametrize(
    "pattern",
    [
        {"tool": "orders.get"},
        {"tool": "orders.get", "args": {}},
        {"tool": "orders.get", "args": {"order_id": None}},
        {"tool": "orders.get", "args": {"order_id": {"$in": ["A-1", None]}, "n": [1, {"k": None}]}},
    ],
)
def test_a_required_call_is_written_as_its_pattern_dumps(pattern: dict[str, Any]) -> None:
    """The evidence of a required item is the pattern as the task wrote it, nulls kept."""
    call = CallPattern.model_validate(pattern)
    assert as_written(call) == call.model_dump(exclude_none=True) == pattern


@given(st.text(alphabet="aZ09-_/.:, \u0663", max_size=30))
def test_identifiers_are_the_factual_tokens_with_a_letter(text: str) -> None:
    assert identifiers(text) == {t for t in factual_tokens(text) if any(map(str.isalpha, t))}
