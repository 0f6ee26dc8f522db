"""Re-enacting a trace: the agent's actions played again give back the same trial."""

from __future__ import annotations

from pathlib import Path

import pytest

from proctor.agents import load_agent
from proctor.env.reenact import Action, actions_of, reenact
from proctor.env.suite import load_suite
from trial_run import run_member

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.parametrize(
    ("example", "agent", "task_id"),
    [
        ("support", "scripted", "cancel-eligible-order"),  # asks the user, then writes
        ("incident", "careful", "close-lost-response"),  # an injected lost response, a retry
        ("incident", "careful", "take-over-rate-limited"),  # a 429 and a wait
        ("clinical", "perfect", "lab-timeout-retry"),  # a timeout fault on the first call
    ],
)
def test_reenacting_a_live_trial_gives_back_its_trace_state_and_ledger(
    example: str, agent: str, task_id: str
) -> None:
    suite = load_suite(EXAMPLES / example)
    member = next(t for t in suite.tasks if t.id == task_id)
    live = run_member(member, load_agent(f"{EXAMPLES / example / 'agents.py'}:{agent}"), seed=11)
    again = reenact(member.task, member.domain, actions_of(live.trace), seed=11)
    assert [(e.kind, e.data, e.t) for e in again.trace.events] == [
        (e.kind, e.data, e.t) for e in live.trace.events
    ]
    assert live.outcome is not None
    assert again.outcome.final_state == live.outcome.final_state
    assert [e.to_dict() for e in again.outcome.ledger] == [e.to_dict() for e in live.outcome.ledger]


def test_a_dropped_write_takes_its_effect_with_it() -> None:
    suite = load_suite(EXAMPLES / "support")
    member = next(t for t in suite.tasks if t.id == "cancel-eligible-order")
    live = run_member(member, load_agent(f"{EXAMPLES / 'support' / 'agents.py'}:scripted"))
    actions = [a for a in actions_of(live.trace) if a.data.get("tool") != "orders.cancel"]
    again = reenact(member.task, member.domain, actions, seed=7)
    assert again.outcome.ledger == []
    assert again.outcome.final_state["orders"]["A-100"]["status"] == "placed"
    assert not any(e.kind == "state_change" for e in again.trace.events)
    # the answer still claims it: a mutant, consistent with the world it ran in
    assert again.trace.answer == live.trace.answer


def test_an_edited_call_meets_the_world_s_own_answer() -> None:
    suite = load_suite(EXAMPLES / "support")
    member = next(t for t in suite.tasks if t.id == "do-not-cancel-shipped-order")
    actions = [
        Action("message", {"role": "user", "content": member.task.prompt}),
        Action.call("orders.cancel", {"order_id": "B-200", "reason": "x"}),
        Action.call("orders.get", {"order_id": "nope"}),
        Action("answer", {"text": "done"}),
    ]
    again = reenact(member.task, member.domain, actions, seed=1)
    codes = [e.data.get("code") for e in again.trace.events if e.kind == "tool_error"]
    assert codes == ["conflict", "not_found"]
    assert [e.kind for e in again.trace.events][-1] == "answer"
    assert again.outcome.final_state["orders"]["B-200"]["status"] == "shipped"
