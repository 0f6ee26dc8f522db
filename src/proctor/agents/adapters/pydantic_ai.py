"""pydantic-ai agents (`pip install 'proctor[pydantic-ai]'`).

    from pydantic_ai import Agent
    from proctor.agents.adapters.pydantic_ai import PydanticAIAgent

    agent = PydanticAIAgent(lambda tools: Agent("openai:gpt-4o-mini", tools=tools))
    # or a built agent: each run gets the task's tools as an extra toolset
    agent = PydanticAIAgent(Agent("openai:gpt-4o-mini", instructions="..."))

The run is walked node by node (`Agent.iter`), so each model response is recorded as a
`model_call` when it arrives, before the tools it asks for run.
"""

from __future__ import annotations

import time
from typing import Any

from proctor.agents.adapters.shared import FrameworkAdapter, reported_counts
from proctor.agents.agent import AgentInput, AgentResult
from proctor.agents.bridge import BridgedTool, bridge_tools
from proctor.agents.outages import outages_as_infrastructure
from proctor.agents.pricing import record_call
from proctor.core.results import Usage
from proctor.env.toolbox import Toolbox


class PydanticAIAgent(FrameworkAdapter):
    """`PydanticAIAgent(agent)` or `PydanticAIAgent(factory)`, `factory(tools) -> Agent`."""

    framework = "pydantic-ai"
    distribution = "pydantic-ai-slim"

    async def run(self, input: AgentInput, toolbox: Toolbox) -> AgentResult:
        from pydantic_ai import Agent, Tool
        from pydantic_ai.messages import TextPart
        from pydantic_ai.toolsets import FunctionToolset

        tools = [
            Tool.from_schema(
                _caller(t, toolbox),
                name=t.api_name,
                description=t.description,
                json_schema=t.parameters,
            )
            for t in bridge_tools(input.tools)
        ]
        if isinstance(self.target, Agent):
            agent, toolsets = self.target, [FunctionToolset(tools)]
        else:
            agent, toolsets = self.target(tools), None
        usage, started = Usage(), time.perf_counter()
        with outages_as_infrastructure():
            async with agent.iter(input.prompt, toolsets=toolsets) as run:
                async for node in run:
                    if Agent.is_model_request_node(node):
                        started = time.perf_counter()
                    elif Agent.is_call_tools_node(node):
                        response = node.model_response
                        tokens_in, tokens_out = reported_counts(response.usage)
                        usage += record_call(
                            toolbox,
                            self.prices,
                            model=response.model_name or self.model or "unknown",
                            input_tokens=tokens_in,
                            output_tokens=tokens_out,
                            latency_s=time.perf_counter() - started,
                        )
                        text = "".join(p.content for p in response.parts if isinstance(p, TextPart))
                        if text:
                            toolbox.message("assistant", text)
        output = run.result.output if run.result is not None else ""
        return AgentResult(output if isinstance(output, str) else str(output), usage)


def _caller(tool: BridgedTool, toolbox: Toolbox) -> Any:
    async def call(**kwargs: Any) -> str:
        return await tool.invoke(toolbox, kwargs)

    return call
