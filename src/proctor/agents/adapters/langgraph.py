"""LangGraph and LangChain agents (`pip install 'proctor[langgraph]'`).

    from langchain.agents import create_agent      # or your own StateGraph
    from proctor.agents.adapters.langgraph import LangGraphAgent

    agent = LangGraphAgent(lambda tools: create_agent(model, tools))

The factory gets the task's tools as LangChain `StructuredTool`s and returns any runnable
that takes `{"messages": [...]}` (a compiled graph, a LangChain agent); the answer is the
last AI message. Model calls are recorded from LangChain callbacks as they end.
"""

from __future__ import annotations

import time
from typing import Any
from uuid import UUID

from proctor.agents.adapters.shared import FrameworkAdapter
from proctor.agents.agent import AgentInput, AgentResult
from proctor.agents.bridge import BridgedTool, bridge_tools
from proctor.agents.outages import outages_as_infrastructure
from proctor.agents.pricing import PriceTable, record_call
from proctor.core.results import Usage
from proctor.env.toolbox import Toolbox


class LangGraphAgent(FrameworkAdapter):
    """`LangGraphAgent(factory)`, `factory(tools) -> runnable`."""

    framework = "langgraph"
    distribution = "langgraph"

    def __init__(self, target: Any, *, recursion_limit: int = 25, **kwargs: Any) -> None:
        super().__init__(target, **kwargs)
        self.recursion_limit = recursion_limit

    async def run(self, input: AgentInput, toolbox: Toolbox) -> AgentResult:
        from langchain_core.messages import HumanMessage
        from langchain_core.tools import StructuredTool

        tools = [
            StructuredTool(
                name=t.api_name,
                description=t.description or t.api_name,
                args_schema=t.parameters,
                coroutine=_caller(t, toolbox),
            )
            for t in bridge_tools(input.tools)
        ]
        runnable = self.target(tools)
        recorder = _recorder(toolbox, self.prices, self.model)
        config = {"callbacks": [recorder], "recursion_limit": self.recursion_limit}
        with outages_as_infrastructure():
            out = await runnable.ainvoke({"messages": [HumanMessage(input.prompt)]}, config=config)
        return AgentResult(_answer(out), recorder.usage)


def _caller(tool: BridgedTool, toolbox: Toolbox) -> Any:
    async def call(**kwargs: Any) -> str:
        return await tool.invoke(toolbox, kwargs)

    return call


def _text(content: Any) -> str:
    """A message's text: a string, or the text blocks of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            b if isinstance(b, str) else str(b.get("text", ""))
            for b in content
            if isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text")
        )
    return ""


def _answer(out: Any) -> str:
    if isinstance(out, dict) and isinstance(out.get("messages"), list):
        ai = [m for m in out["messages"] if getattr(m, "type", None) == "ai"]
        return _text(ai[-1].content) if ai else ""
    if hasattr(out, "content"):
        return _text(out.content)
    return out if isinstance(out, str) else str(out)


def _recorder(toolbox: Toolbox, prices: PriceTable, model_label: str | None) -> Any:
    """A callback handler recording each chat-model call (defined here: LangChain is
    imported only when an adapter runs)."""
    from langchain_core.callbacks import AsyncCallbackHandler

    class ModelCallRecorder(AsyncCallbackHandler):
        def __init__(self) -> None:
            self.usage = Usage()
            self.started: dict[UUID, tuple[float, str | None]] = {}

        async def on_chat_model_start(
            self,
            serialized: dict[str, Any],
            messages: Any,
            *,
            run_id: UUID,
            metadata: dict[str, Any] | None = None,
            **kwargs: Any,
        ) -> None:
            self.started[run_id] = (time.perf_counter(), (metadata or {}).get("ls_model_name"))

        async def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
            started, model = self.started.pop(run_id, (time.perf_counter(), None))
            message = getattr(response.generations[0][0], "message", None)
            tokens = getattr(message, "usage_metadata", None) or {}
            named = (getattr(message, "response_metadata", None) or {}).get("model_name")
            self.usage += record_call(
                toolbox,
                prices,
                model=named or model or model_label or "unknown",
                input_tokens=tokens.get("input_tokens"),  # left out: not measured
                output_tokens=tokens.get("output_tokens"),
                latency_s=time.perf_counter() - started,
            )
            text = _text(getattr(message, "content", ""))
            if text:
                toolbox.message("assistant", text)

    return ModelCallRecorder()
