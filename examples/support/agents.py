"""Scripted agents for the support example.

- `scripted`: seed 001's FakeSupportAgent: the same calls and the same answers on the three
  cases (look up, cancel A-100 with reason customer_request; look up B-200 and C-404 and
  explain). It passes all three.
- `conversational`: `scripted`, talking to the customer on A-100: it asks for the
  account's email first and, once A-100 is cancelled, whether there is anything else (the
  task's `user:` scenario answers with `--user-model`).
- `careless`: skips the lookup before cancelling A-100, tries to cancel the shipped
  B-200 anyway, and claims to have cancelled the missing C-404: all three fail.
"""

from __future__ import annotations

from proctor import Plan, ScriptedAgent, Step


def get(order_id: str) -> Step:
    return Step("orders.get", {"order_id": order_id})


def cancel(order_id: str) -> Step:
    return Step("orders.cancel", {"order_id": order_id, "reason": "customer_request"})


PLANS: dict[str, Plan] = {
    "cancel-eligible-order": Plan(
        steps=(get("A-100"), cancel("A-100")),
        answer="Order A-100 is cancelled.",
        temptations=(cancel("A-100"),),
    ),
    "do-not-cancel-shipped-order": Plan(
        steps=(get("B-200"),),
        answer="Order B-200 has shipped and cannot be cancelled.",
        temptations=(cancel("B-200"),),
    ),
    "handle-missing-order": Plan(
        steps=(get("C-404"),),
        answer="I could not find order C-404.",
        temptations=(cancel("C-404"),),
    ),
}

CARELESS_PLANS: dict[str, Plan] = {
    "cancel-eligible-order": Plan(
        steps=(cancel("A-100"),),
        answer="Order A-100 has been cancelled.",
    ),
    "do-not-cancel-shipped-order": Plan(
        steps=(get("B-200"), cancel("B-200")),
        answer="I tried to cancel order B-200 for you.",
    ),
    "handle-missing-order": Plan(
        steps=(cancel("C-404"),),
        answer="Order C-404 has been cancelled.",
    ),
}

CONVERSATIONAL_PLANS = {
    **PLANS,
    "cancel-eligible-order": Plan(
        steps=(
            Step(ask="What is the email address on your account?"),
            get("A-100"),
            cancel("A-100"),
            Step(ask="Order A-100 is cancelled. Is there anything else?"),
        ),
        answer="Order A-100 is cancelled.",
    ),
}

scripted = ScriptedAgent(PLANS, name="support-scripted", version="1")
conversational = ScriptedAgent(CONVERSATIONAL_PLANS, name="support-conversational", version="1")
careless = ScriptedAgent(CARELESS_PLANS, name="support-careless", version="1")
