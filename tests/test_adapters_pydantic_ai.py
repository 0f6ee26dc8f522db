"""pydantic-ai agents on the support example, offline: FunctionModel and TestModel."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip(
    "pydantic_ai", reason="pydantic-ai is not installed (pip install '.[pydantic-ai]')"
)

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RequestUsage

from proctor.agents.adapters.pydantic_ai import PydanticAIAgent
from proctor.agents.pricing import PriceTable
from support_run import calls, failed, run_support

Turn = list[tuple[str, dict[str, Any]]] | str


def scripted(
    turns: list[Turn], seen: list[AgentInfo] | None = None, *, usage: bool = True
) -> FunctionModel:
    """A model answering turn n with the n-th scripted tool calls or final text; its usage
    estimated by pydantic-ai, or (`usage=False`) marked as omitted by the server."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if seen is not None:
            seen.append(info)
        turn = turns[sum(isinstance(m, ModelResponse) for m in messages)]
        omitted = {} if usage else {"usage": RequestUsage(unmeasured_requests=1)}
        if isinstance(turn, str):
            return ModelResponse(parts=[TextPart(turn)], **omitted)
        return ModelResponse(
            parts=[
                ToolCallPart(name, args, tool_call_id=f"p{i}")
                for i, (name, args) in enumerate(turn)
            ],
            **omitted,
        )

    return FunctionModel(respond, model_name="scripted-pydantic")


CANCEL = [
    [("orders_get", {"order_id": "A-100"})],
    [("ask_user", {"question": "Shall I cancel order A-100?"})],
    [("orders_cancel", {"order_id": "A-100", "reason": "customer_request"})],
    "Order A-100 has been cancelled.",
]


#: The scripted model's price: without one its cost is not measured (see the next test).
PRICES = PriceTable({"scripted-pydantic": (0.15, 0.60)})


def test_factory_agent_passes_with_native_tools_and_recorded_usage() -> None:
    seen: list[AgentInfo] = []
    agent = PydanticAIAgent(
        lambda tools: Agent(scripted(CANCEL, seen), tools=tools, name="support-pa"),
        prices=PRICES,
    )
    record = run_support("cancel-eligible-order", agent)
    assert record.result.status == "passed", failed(record)
    assert calls(record) == [
        ("orders.get", {"order_id": "A-100"}),
        ("orders.cancel", {"order_id": "A-100", "reason": "customer_request"}),
    ]
    offered = {t.name: t for t in seen[0].function_tools}
    assert set(offered) == {"orders_get", "orders_cancel", "ask_user"}
    assert offered["orders_cancel"].parameters_json_schema["required"] == ["order_id", "reason"]
    assert offered["orders_get"].description.startswith("Look up one order")
    model_calls = [e.data for e in record.trace.of_kind("model_call")]
    assert len(model_calls) == 4 and {m["model"] for m in model_calls} == {"scripted-pydantic"}
    assert record.result.usage.input_tokens == sum(m["input_tokens"] for m in model_calls) > 0
    # a model call is recorded before the tool call it asked for
    kinds = [e.kind for e in record.trace.events]
    assert kinds.index("model_call") < kinds.index("tool_proposal")
    assert agent.name == "pydantic-ai"  # a factory has no name of its own
    assert agent.settings["framework"] == "pydantic-ai" and agent.settings["framework_version"]


def test_an_unpriced_model_has_no_cost_so_a_cost_budget_cannot_pass() -> None:
    agent = PydanticAIAgent(lambda tools: Agent(scripted(CANCEL), tools=tools))
    record = run_support("cancel-eligible-order", agent)
    assert failed(record) == ["max_cost_usd"]
    budget = next(c for c in record.result.checks if c.name == "max_cost_usd")
    assert budget.evidence["actual"] == "not measured"
    usage = record.result.usage
    assert usage.cost_usd is None and usage.input_tokens and usage.model_calls == 4
    assert all(e.data["unpriced"] for e in record.trace.of_kind("model_call"))


def test_a_model_reporting_no_usage_is_not_measured_and_fails_the_budget() -> None:
    """A response that omitted usage: its tokens and cost are not measured (never 0 tokens
    or $0), so the task's cost and token limits cannot pass, priced model or not."""
    agent = PydanticAIAgent(
        lambda tools: Agent(scripted(CANCEL, usage=False), tools=tools), prices=PRICES
    )
    record = run_support("cancel-eligible-order", agent)
    usage = record.result.usage
    assert (usage.model_calls, usage.total_tokens, usage.cost_usd) == (4, None, None)
    assert failed(record) == ["max_cost_usd", "max_tokens"]


def test_built_agent_gets_the_tools_as_a_toolset_and_a_wrong_write_fails() -> None:
    turns: list[Turn] = [
        [("orders_get", {"order_id": "B-200"})],
        [("orders_cancel", {"order_id": "B-200", "reason": "customer_request"})],
        "I cancelled B-200.",
    ]
    record = run_support("do-not-cancel-shipped-order", PydanticAIAgent(Agent(scripted(turns))))
    assert record.result.status == "failed"
    assert "forbidden:orders.cancel" in failed(record)
    errors = [e.data["code"] for e in record.trace.of_kind("tool_error")]
    assert errors == ["conflict"]  # the gateway's answer reached the model, not an exception


def test_test_model_calls_every_tool_with_schema_valid_arguments() -> None:
    record = run_support(
        "handle-missing-order", PydanticAIAgent(lambda tools: Agent(TestModel(), tools=tools))
    )
    made = {tool for tool, _ in calls(record)}
    assert made == {"orders.get", "orders.cancel"}
    assert not [
        e for e in record.trace.of_kind("tool_error") if e.data["code"] == "invalid_arguments"
    ]
    assert record.result.status == "failed"  # it cancelled (tried to) and never looked up C-404


def test_provider_outage_is_infrastructure_and_a_model_bug_is_the_agents() -> None:
    from pydantic_ai.exceptions import ModelRateLimitError

    def limited(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise ModelRateLimitError("scripted", "rate limit reached")

    def broken(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise ValueError("the agent's own bug")

    outage = run_support("handle-missing-order", PydanticAIAgent(Agent(FunctionModel(limited))))
    assert outage.result.status == "error" and "InfrastructureError" in (outage.result.error or "")
    crash = run_support("handle-missing-order", PydanticAIAgent(Agent(FunctionModel(broken))))
    assert crash.result.status == "failed" and "agent_crashed" in failed(crash)
