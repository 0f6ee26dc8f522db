"""Session: a simulated agent's conversation, billed like a model's.

Hand-written agents that stand in for a language model (the ScriptedAgent, the examples'
reactive agents) share one cost model: the context grows with every result, each step is
one model call of about len(context)/4 + 200 input tokens and len(output)/4 output
tokens at fixed prices, with a simulated latency. One place, so their figures compare.
"""

from __future__ import annotations

import json
import random
from typing import Any

from proctor.agents.agent import AgentInput, AgentResult
from proctor.core.jsonvalues import json_encoder
from proctor.core.results import Usage
from proctor.env.gateway import ToolResult
from proctor.env.toolbox import Toolbox

#: `json.dumps(value, default=str)`, its encoder made once (a result is read every call).
_result_text = json_encoder()
#: `json.dumps(value)`, made once: a call's text (a TypeError for what is not JSON).
_call_text = json_encoder(default=json.JSONEncoder().default)


class Session:
    def __init__(
        self,
        input: AgentInput,
        toolbox: Toolbox,
        *,
        model: str = "simulated",
        usd_per_1k_input: float = 0.0025,
        usd_per_1k_output: float = 0.01,
        latency_s: float = 0.4,
        rng: random.Random | None = None,
    ) -> None:
        """`rng`, when given, jitters each call's latency by ±25% (seeded per trial)."""
        self.input = input
        self.toolbox = toolbox
        self.context = input.prompt
        # what the calls consumed, summed as plain numbers (`usage` makes the Usage)
        self._tokens_in, self._tokens_out, self._cost = 0, 0, 0.0
        self._calls = 0
        self._model = model
        self._prices = (usd_per_1k_input, usd_per_1k_output)
        self._latency_s = latency_s
        self._rng = rng

    def bill(self, output: str) -> None:
        """Record one model call that read the context and wrote `output`."""
        tokens_in, tokens_out = len(self.context) // 4 + 200, max(1, len(output) // 4)
        cost = (tokens_in * self._prices[0] + tokens_out * self._prices[1]) / 1000
        latency = self._latency_s
        if self._rng is not None:
            latency = round(latency * (0.75 + 0.5 * self._rng.random()), 4)
        self.toolbox.record_model_call(
            model=self._model,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            cost_usd=cost,
            latency_s=latency,
            simulated=True,
        )
        self._tokens_in += tokens_in
        self._tokens_out += tokens_out
        self._cost += cost
        self._calls += 1

    @property
    def usage(self) -> Usage:
        """What the session's model calls consumed so far (nothing measured before one)."""
        if not self._calls:
            return Usage()
        return Usage(self._tokens_in, self._tokens_out, self._cost, self._calls)

    async def call(self, tool: str, args: dict[str, Any]) -> ToolResult:
        self.bill(_call_text({"tool": tool, "args": args}))
        result = await self.toolbox.call(tool, args)
        self.context += "\n" + _result_text(result.to_dict())
        return result

    async def ask(self, question: str) -> str:
        self.bill(question)
        reply = await self.toolbox.ask_user(question)
        self.context += f"\n{question}\n{reply}"
        return reply

    def answer(self, text: str) -> AgentResult:
        """The final answer, billed as the last model call, with the session's usage."""
        self.bill(text)
        return AgentResult(answer=text, usage=self.usage)
