"""The hand-built traces of conftest.py are what the real ToolGateway records.

Older grader tests build traces by hand (conftest.build_trace). Here the same calls go
through a real gateway (validation, policy, faults, the tool, the simulated user) and the
two traces are compared event by event: kinds, seqs, every data key, and the values
graders read. If the gateway changes what it records, this fails before the hand-built
traces drift from it.
"""

from __future__ import annotations

from typing import Any

from conftest import build_trace
from trial_run import order_desk, run_task

WORLD = order_desk("world", {"A-100": {"status": "placed"}})


@WORLD.tool("orders.delete", kind="write", entity="order_id")
def delete(state: dict[str, Any], order_id: str) -> None:
    """Delete an order."""
    del state["orders"][order_id]


#: (tool, args, what conftest calls its status) for every status build_trace knows. The
#: real ledger holds the validated arguments, defaults filled in: a hand-built write must
#: name every argument to agree with it.
CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("orders.get", {"order_id": "A-100"}, "ok"),
    ("orders.cancel", {"order_id": "A-100", "reason": "asked"}, "ok"),
    ("orders.delete", {"order_id": "A-100"}, "denied"),
    ("orders.get", {"order_id": 7}, "invalid_arguments"),
    ("orders.nope", {}, "unknown_tool"),
    ("orders.get", {"order_id": "Z-9"}, "not_found"),
    ("orders.get", {"order_id": "A-100"}, "timeout"),
    ("orders.cancel", {"order_id": "A-100", "reason": "asked"}, "lost_response"),
]
TASK = {
    "prompt": "Cancel order A-100.",
    "policy": {"orders.delete": "deny"},
    "faults": [
        {"tool": "orders.get", "error": "timeout", "call": 3},
        {"tool": "orders.cancel", "error": "lost_response", "call": 2},
    ],
    "user": {"replies": [{"when": "*", "say": "Yes, go ahead."}]},
}
#: What graders read of an event's data; other keys must exist on both sides too.
READ = ("call_id", "tool", "args", "allowed", "code", "fault", "result", "changes", "reply")


def agent(input: Any, toolbox: Any) -> str:
    for tool, args, _ in CALLS:
        toolbox.call(tool, args)
    toolbox.ask_user("Shall I proceed?")
    return "Cancelled."


def test_hand_built_traces_match_the_gateway() -> None:
    record = run_task(TASK, WORLD, agent)
    real = [e for e in record.trace.events if e.kind != "message"]  # the user's dialogue
    results = {e.data["call_id"]: e.data["result"] for e in real if e.kind == "tool_result"}
    changes = {e.data["call_id"]: e.data["changes"] for e in real if e.kind == "state_change"}
    steps: list[Any] = []
    for n, (tool, args, status) in enumerate(CALLS, start=1):
        cid = f"c{n}"
        steps.append(
            (tool, args, status, results.get(cid), *([changes[cid]] if cid in changes else []))
        )
    steps.append("confirm")
    built, ledger = build_trace(steps, "Cancelled.", writes=["orders.cancel"])

    assert [e.kind for e in built.events] == [e.kind for e in real]
    offset = real[0].seq - built.events[0].seq  # the real trace opens with the prompt
    for hand, gateway in zip(built.events, real, strict=True):
        if hand.kind not in ("confirmation", "answer"):  # after the user's dialogue
            assert hand.seq + offset == gateway.seq
        assert set(hand.data) == set(gateway.data), (hand, gateway)
        for key in READ:
            assert hand.data.get(key) == gateway.data.get(key), (key, hand, gateway)
    assert record.outcome is not None
    assert [(e.seq + offset, e.tool, e.args) for e in ledger] == [
        (e.seq, e.tool, e.args) for e in record.outcome.ledger
    ]
