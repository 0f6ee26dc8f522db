"""smolagents agents (`pip install 'proctor[smolagents]'`).

    from smolagents import ToolCallingAgent, InferenceClientModel
    from proctor.agents.adapters.smolagents import SmolAgent

    agent = SmolAgent(lambda tools: ToolCallingAgent(tools=tools, model=InferenceClientModel()))

The factory gets the task's tools as smolagents `Tool`s (a `CodeAgent` calls them as
functions) and returns the agent. smolagents runs synchronously, so this is a sync agent
(run in a thread by the Runner). The agent's model is wrapped for the run, so each
generation is recorded as a `model_call` when it returns.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from proctor.agents.adapters.shared import FrameworkAdapter
from proctor.agents.agent import AgentInput, AgentResult
from proctor.agents.bridge import BridgedTool, bridge_tools
from proctor.agents.outages import outages_as_infrastructure
from proctor.agents.pricing import PriceTable, record_call
from proctor.core.results import Usage
from proctor.env.toolbox import SyncToolbox

#: JSON Schema types smolagents accepts as tool input types.
_TYPES = frozenset({"string", "boolean", "integer", "number", "array", "object"})


class SmolAgent(FrameworkAdapter):
    """`SmolAgent(factory)`, `factory(tools) -> MultiStepAgent`."""

    framework = "smolagents"
    distribution = "smolagents"

    def run(self, input: AgentInput, toolbox: SyncToolbox) -> AgentResult:
        tools = [_tool(t, toolbox) for t in bridge_tools(input.tools)]
        agent = self.target(tools)
        model = _RecordingModel(agent.model, toolbox, self.prices, self.model)
        agent.model = model
        with outages_as_infrastructure():
            output = agent.run(input.prompt)
        return AgentResult("" if output is None else str(output), model.usage)


def _inputs(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A JSON Schema's properties as smolagents `inputs` (type, description, nullable)."""
    required = set(schema.get("required", []))
    inputs = {}
    for name, prop in schema.get("properties", {}).items():
        types = [prop["type"]] if "type" in prop else [s.get("type") for s in prop.get("anyOf", [])]
        kinds = [t for t in types if t in _TYPES]
        entry: dict[str, Any] = {
            "type": kinds[0] if len(kinds) == 1 else "any",
            "description": prop.get("description") or name,
        }
        if name not in required or "null" in types:
            entry["nullable"] = True
        inputs[name] = entry
    return inputs


def _tool(bridged: BridgedTool, toolbox: SyncToolbox) -> Any:
    from smolagents import Tool

    def forward(self: Any, **kwargs: Any) -> str:
        return bridged.invoke_sync(toolbox, kwargs)

    attributes = {
        "name": bridged.api_name,
        "description": bridged.description or bridged.api_name,
        "inputs": _inputs(bridged.parameters),
        "output_type": "string",
        "skip_forward_signature_validation": True,
        "forward": forward,
    }
    return type(f"Proctor_{bridged.api_name}", (Tool,), attributes)()


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return content or ""


class _RecordingModel:
    """The agent's model, recording every generation (tokens, latency, text) it makes."""

    def __init__(
        self, inner: Any, toolbox: SyncToolbox, prices: PriceTable, label: str | None
    ) -> None:
        self._inner = inner
        self._toolbox = toolbox
        self._prices = prices
        self._name = getattr(inner, "model_id", None) or label or type(inner).__name__
        self.usage = Usage()

    def __getattr__(self, name: str) -> Any:
        if name == "_inner":  # not set yet (a copy being made): no recursion
            raise AttributeError(name)
        return getattr(self._inner, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.generate(*args, **kwargs)

    def generate(self, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        message = self._inner.generate(*args, **kwargs)
        tokens = message.token_usage
        self._record(
            getattr(tokens, "input_tokens", None),  # no token usage: not measured
            getattr(tokens, "output_tokens", None),
            time.perf_counter() - started,
            _text(message.content),
        )
        return message

    def generate_stream(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        started, text = time.perf_counter(), ""
        tokens_in: int | None = None  # no delta with token usage: not measured
        tokens_out: int | None = None
        for delta in self._inner.generate_stream(*args, **kwargs):
            if delta.token_usage is not None:
                tokens_in = (tokens_in or 0) + delta.token_usage.input_tokens
                tokens_out = (tokens_out or 0) + delta.token_usage.output_tokens
            text += delta.content or ""
            yield delta
        self._record(tokens_in, tokens_out, time.perf_counter() - started, text)

    def _record(
        self, tokens_in: int | None, tokens_out: int | None, latency_s: float, text: str
    ) -> None:
        self.usage += record_call(
            self._toolbox,
            self._prices,
            model=self._name,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            latency_s=latency_s,
        )
        if text.strip():
            self._toolbox.message("assistant", text)
