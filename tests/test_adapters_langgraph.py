"""LangGraph / LangChain agents on the support example, offline: a fake chat model with
scripted tool calls inside a real StateGraph with LangGraph's ToolNode."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langgraph", reason="langgraph is not installed (pip install '.[langgraph]')")

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import Field

from proctor.agents.adapters.langgraph import LangGraphAgent
from support_run import calls, failed, run_support


class ToolCallingFake(GenericFakeChatModel):
    """GenericFakeChatModel that accepts tools (and remembers what it was offered)."""

    offered: list[dict[str, Any]] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        self.offered.extend(convert_to_openai_tool(t)["function"] for t in tools)
        return self


def ai(content: str = "", *calls: tuple[str, dict[str, Any]], usage: bool = True) -> AIMessage:
    """A scripted reply; `usage=False`: one whose server reported no token usage."""
    return AIMessage(
        content=content,
        tool_calls=[{"name": n, "args": a, "id": f"l{i}"} for i, (n, a) in enumerate(calls)],
        usage_metadata={"input_tokens": 120, "output_tokens": 15, "total_tokens": 135}
        if usage
        else None,
        response_metadata={"model_name": "gpt-4o-mini"},
    )


def graph_factory(model: ToolCallingFake) -> Any:
    def build(tools: list[Any]) -> Any:
        bound = model.bind_tools(tools)

        async def call_model(state: MessagesState) -> dict[str, Any]:
            return {"messages": [await bound.ainvoke(state["messages"])]}

        graph = StateGraph(MessagesState)
        graph.add_node("model", call_model)
        graph.add_node("tools", ToolNode(tools))
        graph.add_edge(START, "model")
        graph.add_conditional_edges("model", tools_condition)
        graph.add_edge("tools", "model")
        return graph.compile()

    return build


def test_graph_agent_passes_with_native_tools_and_priced_model_calls() -> None:
    model = ToolCallingFake(
        messages=iter(
            [
                ai("", ("orders_get", {"order_id": "A-100"})),
                ai("", ("ask_user", {"question": "Shall I cancel order A-100?"})),
                ai("", ("orders_cancel", {"order_id": "A-100", "reason": "customer_request"})),
                ai("Order A-100 has been cancelled."),
            ]
        )
    )
    record = run_support("cancel-eligible-order", LangGraphAgent(graph_factory(model)))
    assert record.result.status == "passed", failed(record)
    assert calls(record) == [
        ("orders.get", {"order_id": "A-100"}),
        ("orders.cancel", {"order_id": "A-100", "reason": "customer_request"}),
    ]
    offered = {f["name"]: f for f in model.offered}
    assert set(offered) == {"orders_get", "orders_cancel", "ask_user"}
    assert offered["orders_cancel"]["parameters"]["required"] == ["order_id", "reason"]
    model_calls = [e.data for e in record.trace.of_kind("model_call")]
    assert len(model_calls) == 4
    assert record.result.usage.cost_usd == pytest.approx(4 * (120 * 0.15 + 15 * 0.6) / 1e6)
    assert record.answer == "Order A-100 has been cancelled."
    said = [
        e.data["content"] for e in record.trace.of_kind("message") if e.data["role"] == "assistant"
    ]
    assert said[-1] == "Order A-100 has been cancelled."


def test_a_model_reporting_no_usage_is_not_measured_and_fails_the_budget() -> None:
    """No usage metadata: the calls are counted, their tokens and cost not measured (never 0
    tokens or $0), so the task's cost and token limits cannot pass."""
    turns = [
        ai("", ("orders_get", {"order_id": "A-100"}), usage=False),
        ai("", ("ask_user", {"question": "Shall I cancel order A-100?"}), usage=False),
        ai("", ("orders_cancel", {"order_id": "A-100", "reason": "customer_request"}), usage=False),
        ai("Order A-100 has been cancelled.", usage=False),
    ]
    model = ToolCallingFake(messages=iter(turns))
    record = run_support("cancel-eligible-order", LangGraphAgent(graph_factory(model)))
    usage = record.result.usage
    assert (usage.model_calls, usage.total_tokens, usage.cost_usd) == (4, None, None)
    assert failed(record) == ["max_cost_usd", "max_tokens"]


def test_graph_agent_that_skips_the_lookup_fails() -> None:
    model = ToolCallingFake(
        messages=iter(
            [
                ai("", ("orders_cancel", {"order_id": "C-404", "reason": "customer_request"})),
                ai("Order C-404 has been cancelled."),
            ]
        )
    )
    record = run_support("handle-missing-order", LangGraphAgent(graph_factory(model)))
    assert record.result.status == "failed"
    assert {"required:orders.get", "mentions:could not find"} <= set(failed(record))
    assert calls(record) == [("orders.cancel", {"order_id": "C-404", "reason": "customer_request"})]
