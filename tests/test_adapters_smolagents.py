"""smolagents agents on the support example, offline: a scripted smolagents `Model`."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip(
    "smolagents", reason="smolagents is not installed (pip install '.[smolagents]')"
)

from smolagents import Model, ToolCallingAgent
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
)
from smolagents.monitoring import LogLevel, TokenUsage

from proctor.agents.adapters.smolagents import SmolAgent
from support_run import calls, failed, run_support

CANCEL = [
    [("orders_get", {"order_id": "A-100"})],
    [("ask_user", {"question": "Shall I cancel order A-100?"})],
    [("orders_cancel", {"order_id": "A-100", "reason": "customer_request"})],
    [("final_answer", {"answer": "Order A-100 has been cancelled."})],
]


class ScriptedModel(Model):
    def __init__(self, turns: list[list[tuple[str, dict[str, Any]]]], usage: bool = True) -> None:
        super().__init__(model_id="gpt-4.1-mini")
        self.turns = list(turns)
        self.usage = usage  # False: the server reports no token usage
        self.offered: list[Any] = []

    def generate(
        self,
        messages: Any,
        stop_sequences: Any = None,
        response_format: Any = None,
        tools_to_call_from: Any = None,
        **kwargs: Any,
    ) -> ChatMessage:
        self.offered = list(tools_to_call_from or [])
        turn = self.turns.pop(0)
        return ChatMessage(
            role=MessageRole.ASSISTANT,
            content="",
            tool_calls=[
                ChatMessageToolCall(
                    id=f"s{len(self.turns)}.{i}",
                    type="function",
                    function=ChatMessageToolCallFunction(name=name, arguments=args),
                )
                for i, (name, args) in enumerate(turn)
            ],
            token_usage=TokenUsage(input_tokens=300, output_tokens=30) if self.usage else None,
        )


def factory(model: ScriptedModel) -> Any:
    return lambda tools: ToolCallingAgent(
        tools=tools, model=model, verbosity_level=LogLevel.OFF, max_steps=6
    )


def test_tool_calling_agent_passes_with_native_tools() -> None:
    model = ScriptedModel(CANCEL)
    record = run_support("cancel-eligible-order", SmolAgent(factory(model)))
    assert record.result.status == "passed", failed(record)
    assert calls(record) == [
        ("orders.get", {"order_id": "A-100"}),
        ("orders.cancel", {"order_id": "A-100", "reason": "customer_request"}),
    ]
    offered = {t.name: t for t in model.offered}
    assert set(offered) == {"orders_get", "orders_cancel", "ask_user", "final_answer"}
    assert offered["orders_cancel"].inputs["reason"]["type"] == "string"
    model_calls = [e.data for e in record.trace.of_kind("model_call")]
    assert len(model_calls) == 4 and model_calls[0]["model"] == "gpt-4.1-mini"
    assert record.result.usage.cost_usd == pytest.approx(4 * (300 * 0.4 + 30 * 1.6) / 1e6)
    assert record.answer == "Order A-100 has been cancelled."


def test_a_model_reporting_no_usage_is_not_measured_and_fails_the_budget() -> None:
    """No token usage: the calls are counted, their tokens and cost not measured (never 0
    tokens or $0), so the task's cost and token limits cannot pass."""
    model = ScriptedModel(CANCEL, usage=False)
    record = run_support("cancel-eligible-order", SmolAgent(factory(model)))
    usage = record.result.usage
    assert (usage.model_calls, usage.total_tokens, usage.cost_usd) == (4, None, None)
    assert failed(record) == ["max_cost_usd", "max_tokens"]


def test_agent_that_cancels_a_shipped_order_fails() -> None:
    model = ScriptedModel(
        [
            [("orders_cancel", {"order_id": "B-200", "reason": "customer_request"})],
            [("final_answer", {"answer": "B-200 is cancelled."})],
        ]
    )
    record = run_support("do-not-cancel-shipped-order", SmolAgent(factory(model)))
    assert record.result.status == "failed"
    assert {"forbidden:orders.cancel", "required:orders.get"} <= set(failed(record))
    assert [e.data["code"] for e in record.trace.of_kind("tool_error")] == ["conflict"]
