"""OpenAI Agents SDK agents (`pip install 'proctor[openai-agents]'`).

    from agents import Agent
    from proctor.agents.adapters.openai_agents import OpenAIAgentsAgent

    agent = OpenAIAgentsAgent(Agent(name="support", instructions="...", model="gpt-4o-mini"))
    # or a factory: OpenAIAgentsAgent(lambda tools: Agent(name="support", tools=tools))

A built agent is cloned per trial with the task's tools added. The SDK's own tracing is
switched off for every run (`RunConfig(tracing_disabled=True)`): nothing is exported to
OpenAI, and proctor's trace (exportable as OpenTelemetry) records the run instead.
"""

from __future__ import annotations

import time
from typing import Any

from proctor.agents.adapters.shared import FrameworkAdapter, reported_counts
from proctor.agents.agent import AgentInput, AgentResult
from proctor.agents.bridge import BridgedTool, bridge_tools
from proctor.agents.outages import outages_as_infrastructure
from proctor.agents.pricing import PriceTable, record_call
from proctor.core.results import Usage
from proctor.env.toolbox import Toolbox


class OpenAIAgentsAgent(FrameworkAdapter):
    """`OpenAIAgentsAgent(agent)` or `OpenAIAgentsAgent(factory)`, `factory(tools) -> Agent`."""

    framework = "openai-agents"
    distribution = "openai-agents"

    def __init__(self, target: Any, *, max_turns: int = 20, **kwargs: Any) -> None:
        super().__init__(target, **kwargs)
        self.max_turns = max_turns

    async def run(self, input: AgentInput, toolbox: Toolbox) -> AgentResult:
        from agents import Agent, FunctionTool, RunConfig, Runner

        tools = [
            FunctionTool(
                name=t.api_name,
                description=t.description,
                params_json_schema=t.parameters,
                on_invoke_tool=_invoker(t, toolbox),
                strict_json_schema=False,
            )
            for t in bridge_tools(input.tools)
        ]
        if isinstance(self.target, Agent):
            agent = self.target.clone(tools=[*self.target.tools, *tools])
        else:
            agent = self.target(tools)
        hooks = _hooks(toolbox, self.prices, self.model)
        with outages_as_infrastructure():
            result = await Runner.run(
                agent,
                input.prompt,
                hooks=hooks,
                max_turns=self.max_turns,
                run_config=RunConfig(tracing_disabled=True),
            )
        output = result.final_output
        return AgentResult("" if output is None else str(output), hooks.usage)


def _invoker(tool: BridgedTool, toolbox: Toolbox) -> Any:
    async def invoke(context: Any, arguments: str) -> str:
        return await tool.invoke(toolbox, arguments)

    return invoke


def _model_name(agent: Any, fallback: str | None) -> str:
    model = getattr(agent, "model", None)
    if isinstance(model, str):
        return model
    return str(getattr(model, "model", None) or fallback or type(model).__name__)


def _text(output: list[Any]) -> str:
    return "".join(
        part.text
        for item in output
        if getattr(item, "type", None) == "message"
        for part in item.content
        if getattr(part, "type", None) == "output_text"
    )


def _hooks(toolbox: Toolbox, prices: PriceTable, model_label: str | None) -> Any:
    """Run hooks recording each model call (defined here: the SDK is imported lazily)."""
    from agents import RunHooks

    class ModelCallRecorder(RunHooks):
        def __init__(self) -> None:
            self.usage = Usage()
            self.started = time.perf_counter()

        async def on_llm_start(self, context: Any, agent: Any, *args: Any) -> None:
            self.started = time.perf_counter()

        async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
            tokens_in, tokens_out = reported_counts(response.usage)
            self.usage += record_call(
                toolbox,
                prices,
                model=_model_name(agent, model_label),
                input_tokens=tokens_in,
                output_tokens=tokens_out,
                latency_s=time.perf_counter() - self.started,
            )
            text = _text(response.output)
            if text:
                toolbox.message("assistant", text)

    return ModelCallRecorder()
