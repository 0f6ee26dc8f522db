"""ChatAgent: a tool-calling loop over any OpenAI-compatible chat-completions endpoint.

The model sees the task's tools as functions; every call it makes goes through the
ToolGateway and every completion is recorded as a priced `model_call`. Who broke decides
the status (docs/architecture.md, Verdicts): the provider failing after the client's own
retries (429, 5xx, network, a key or model it refuses) is an InfrastructureError, so the
trial is an `error`; a model sending malformed tool arguments is the agent's mistake,
answered to the model as the tool's result (and recorded by the gateway as
`invalid_arguments`). Requests go through the endpoint's rate-limit-aware scheduler
(proctor.agents.endpoint), which judges of the same endpoint share.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from proctor.agents.agent import AgentInput, AgentResult
from proctor.agents.bridge import bridge_tools, find_tool
from proctor.agents.endpoint import MODEL_OPTIONS, ChatEndpoint, parse_options, reported_tokens
from proctor.agents.pricing import PriceTable, record_call
from proctor.core.results import Usage
from proctor.env.toolbox import Toolbox

#: Settings a task may set under `metadata.agent`.
TASK_SETTINGS = ("system_prompt", "temperature", "max_steps")
#: What of the model's message goes back into the conversation.
_MESSAGE_FIELDS = {"role", "content", "tool_calls"}


#: Sampling options passed to the provider as given (`?top_p=0.9&max_tokens=256`).
SAMPLING: dict[str, Any] = {
    "max_tokens": int,
    "top_p": float,
    "frequency_penalty": float,
    "presence_penalty": float,
    "stop": str,
}
#: The limit a trial names when the model used every step without answering.
MAX_STEPS_REACHED = "max_steps_reached"


def _json_object(value: str) -> dict[str, Any]:
    """`extra_body`: a JSON object of provider-specific options (`{"top_k": 40}`), or
    `@file` holding one."""
    data = json.loads(_text_or_file(value))
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    return data


class ChatAgent:
    """`ChatAgent("gpt-4o-mini")`; the base URL and key come from the environment
    (`PROCTOR_CHAT_BASE_URL`/`OPENAI_BASE_URL`, `PROCTOR_CHAT_API_KEY`/`OPENAI_API_KEY`)
    unless given. A task's `metadata.agent` may set `system_prompt`, `temperature` and
    `max_steps` for that task. `seed` None sends each trial's own seed. `sampling`
    (SAMPLING's options) and `extra_body` (a provider's own, as `top_k` for llama.cpp)
    go into every request as given. A model that uses every step without answering
    stops the trial as `max_steps_reached`, a failure whatever the world looks like."""

    version = "1"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        temperature: float | None = None,
        seed: int | None = None,
        max_steps: int = 20,
        system_prompt: str | None = None,
        prices: PriceTable | None = None,
        max_retries: int = 2,
        timeout_s: float = 60.0,
        name: str | None = None,
        rpm: float | None = None,
        tpm: float | None = None,
        max_concurrency: int = 16,
        max_wait_s: float = 600.0,
        extra_body: dict[str, Any] | None = None,
        **sampling: Any,
    ) -> None:
        unknown = sorted(set(sampling) - set(SAMPLING))
        if unknown:
            raise ValueError(f"unknown option(s) {', '.join(unknown)}")
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        self.endpoint = ChatEndpoint(
            model,
            base_url=base_url,
            api_key=api_key,
            timeout_s=timeout_s,
            max_retries=max_retries,
            rpm=rpm,
            tpm=tpm,
            max_concurrency=max_concurrency,
            max_wait_s=max_wait_s,
        )
        self.model = model
        self.base_url = self.endpoint.base_url
        self.temperature = temperature
        self.seed = seed
        self.max_steps = max_steps
        self.system_prompt = system_prompt
        self.prices = prices or PriceTable.from_env()
        self.max_retries = max_retries
        self.name = name or f"chat:{model}"
        self.sampling = {k: v for k, v in sampling.items() if v is not None}
        self.extra_body = extra_body

    @classmethod
    def from_options(cls, model: str, options: dict[str, str]) -> ChatAgent:
        """From `--agent 'chat:MODEL?temperature=0&max_steps=8&system_prompt=@sys.txt'`."""
        converters: dict[str, Any] = {
            **MODEL_OPTIONS,
            "seed": int,
            "max_steps": int,
            "system_prompt": _text_or_file,
            "extra_body": _json_object,
            **SAMPLING,
        }
        return cls(model, **parse_options(options, converters))

    @property
    def settings(self) -> dict[str, Any]:
        """What the run manifest records (never the key)."""
        return {
            "model": self.model,
            "endpoint": self.endpoint.public_url,
            "temperature": self.temperature,
            "seed": self.seed,
            "max_steps": self.max_steps,
            "max_retries": self.max_retries,
            **self.sampling,
            **({"extra_body": self.extra_body} if self.extra_body else {}),
        }

    async def run(self, input: AgentInput, toolbox: Toolbox) -> AgentResult:
        task = {k: v for k, v in input.settings.items() if k in TASK_SETTINGS}
        system = task.get("system_prompt", self.system_prompt)
        temperature = task.get("temperature", self.temperature)
        max_steps = int(task.get("max_steps", self.max_steps))
        tools = bridge_tools(input.tools)
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": input.prompt})
        request: dict[str, Any] = {
            "seed": self.seed if self.seed is not None else input.seed,
            "tools": [t.openai_schema() for t in tools],
        }
        if temperature is not None:
            request["temperature"] = float(temperature)
        request.update(self.sampling)
        if self.extra_body:
            request["extra_body"] = self.extra_body
        usage, answer = Usage(), ""
        for _ in range(max_steps):
            started = time.perf_counter()
            completion = await self.endpoint.complete(messages, **request)
            usage += self._record(toolbox, completion, time.perf_counter() - started)
            message = completion.choices[0].message
            if message.content:
                toolbox.message("assistant", message.content)
            messages.append(message.model_dump(exclude_none=True, include=_MESSAGE_FIELDS))
            if not message.tool_calls:
                answer = message.content or ""
                break
            for call in message.tool_calls:
                tool = find_tool(tools, call.function.name)
                text = await tool.invoke(toolbox, call.function.arguments)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
        else:
            toolbox.stopped(
                MAX_STEPS_REACHED,
                f"stopped after max_steps={max_steps} model calls without an answer",
            )
        return AgentResult(answer=answer, usage=usage, messages=messages)

    def _record(self, toolbox: Toolbox, completion: Any, latency_s: float) -> Usage:
        prompt, output = reported_tokens(completion)
        model = completion.model or self.model
        if self.prices.price(model) is None:
            model = self.model  # a server's own model label; price what was asked for
        return record_call(
            toolbox,
            self.prices,
            model=model,
            input_tokens=prompt,
            output_tokens=output,
            latency_s=latency_s,
            finish_reason=completion.choices[0].finish_reason,
        )


def _text_or_file(value: str) -> str:
    """`@path` reads a file; anything else is the text itself."""
    return Path(value[1:]).read_text(encoding="utf-8") if value.startswith("@") else value
