"""OpenAI Agents SDK agents on the support example, offline: a custom scripted `Model`;
the SDK's trace export is off, which a trace processor proves by receiving nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip(
    "agents", reason="openai-agents is not installed (pip install '.[openai-agents]')"
)

from agents import Agent, add_trace_processor
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.tracing import TracingProcessor
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from proctor.agents.adapters.openai_agents import OpenAIAgentsAgent
from support_run import calls, failed, run_support

CANCEL: list[Any] = [
    [("orders_get", {"order_id": "A-100"})],
    [("ask_user", {"question": "Shall I cancel order A-100?"})],
    [("orders_cancel", {"order_id": "A-100", "reason": "customer_request"})],
    "Order A-100 has been cancelled.",
]


class ScriptedModel(Model):
    """Answers each request with the next scripted turn: tool calls or a final message."""

    def __init__(self, turns: list[Any], *, usage: bool = True) -> None:
        self.turns = list(turns)
        self.usage = usage  # False: the server reports none (the SDK writes zeros)
        self.offered: list[Any] = []

    async def get_response(
        self,
        system_instructions: Any,
        input: Any,
        model_settings: Any,
        tools: list[Any],
        *args: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        self.offered = tools
        turn = self.turns.pop(0)
        if isinstance(turn, str):
            output: list[Any] = [
                ResponseOutputMessage(
                    id="m",
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[ResponseOutputText(type="output_text", text=turn, annotations=[])],
                )
            ]
        else:
            output = [
                ResponseFunctionToolCall(
                    type="function_call",
                    call_id=f"o{len(self.turns)}.{i}",
                    name=name,
                    id=f"f{i}",
                    arguments=args if isinstance(args, str) else json.dumps(args),
                )
                for i, (name, args) in enumerate(turn)
            ]
        usage = (
            Usage(requests=1, input_tokens=200, output_tokens=10, total_tokens=210)
            if self.usage
            else Usage(requests=1)
        )
        return ModelResponse(output=output, usage=usage, response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


class Collector(TracingProcessor):
    def __init__(self) -> None:
        self.seen: list[Any] = []

    def on_trace_start(self, trace: Any) -> None:
        self.seen.append(trace)

    def on_trace_end(self, trace: Any) -> None:
        self.seen.append(trace)

    def on_span_start(self, span: Any) -> None:
        self.seen.append(span)

    def on_span_end(self, span: Any) -> None:
        self.seen.append(span)

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass


def test_built_agent_is_cloned_with_the_tools_and_passes_without_tracing() -> None:
    collector = Collector()
    add_trace_processor(collector)
    model = ScriptedModel(CANCEL)
    user_agent = Agent(name="support-oa", instructions="Help the customer.", model=model)
    adapter = OpenAIAgentsAgent(user_agent, model="gpt-4o")
    record = run_support("cancel-eligible-order", adapter)
    assert record.result.status == "passed", failed(record)
    assert calls(record)[-1] == (
        "orders.cancel",
        {"order_id": "A-100", "reason": "customer_request"},
    )
    assert {t.name for t in model.offered} == {"orders_get", "orders_cancel", "ask_user"}
    assert user_agent.tools == []  # the user's agent is left as it was
    model_calls = [e.data for e in record.trace.of_kind("model_call")]
    assert [m["model"] for m in model_calls] == ["gpt-4o"] * 4
    assert record.result.usage.cost_usd == pytest.approx(4 * (200 * 2.5 + 10 * 10) / 1e6)
    assert adapter.name == "support-oa"
    assert collector.seen == []  # no trace or span was produced, so none can be exported


def test_a_model_reporting_no_usage_is_not_measured_and_fails_the_budget() -> None:
    """The SDK writes a usage the server left out as zeros: not measured, never 0 tokens or
    $0, so the task's cost and token limits cannot pass."""
    model = ScriptedModel(CANCEL, usage=False)
    agent = Agent(name="support-oa", instructions="Help the customer.", model=model)
    record = run_support("cancel-eligible-order", OpenAIAgentsAgent(agent, model="gpt-4o"))
    usage = record.result.usage
    assert (usage.model_calls, usage.total_tokens, usage.cost_usd) == (4, None, None)
    assert failed(record) == ["max_cost_usd", "max_tokens"]


def test_factory_agent_with_malformed_arguments_then_a_wrong_answer_fails() -> None:
    model = ScriptedModel(
        [[("orders_get", '{"order_id": ')], [("orders_get", {"order_id": "B-200"})], "Done!"]
    )
    record = run_support(
        "do-not-cancel-shipped-order",
        OpenAIAgentsAgent(lambda tools: Agent(name="f", model=model, tools=tools)),
    )
    codes = [e.data["code"] for e in record.trace.of_kind("tool_error")]
    assert codes == ["invalid_arguments"]
    assert record.result.status == "partial"  # the lookup was made; the answer is wrong
    assert "mentions:cannot be cancelled" in failed(record)
