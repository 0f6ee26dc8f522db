"""Resolve `--user-model`: `chat:MODEL[?option=value&...]` for a model on any
OpenAI-compatible endpoint (the client, credentials rules and scheduler judges use), or
`FILE.py:NAME` / `MODULE:NAME` for a user model written in Python (a ScriptedUserModel).

A trial asks its user from the agent's thread while the agent waits, so a chat user
model runs its requests on an event loop of its own, in a daemon thread: a synchronous
agent's thread blocks, an asynchronous agent's toolbox waits off its loop
(docs/architecture.md, Simulated users).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from proctor.agents.agent_refs import load_reference
from proctor.agents.endpoint import (
    MODEL_OPTIONS,
    ChatEndpoint,
    completion_usage,
    parse_options,
)
from proctor.agents.pricing import PriceTable
from proctor.core.jsonvalues import digest
from proctor.run.simulator import UserAnswer, UserModel, prompt_version
from proctor.run.threads import AgentLoop

RESPONSE_FORMATS = ("json_object", "json_schema", "none")
#: The answer's shape for `response_format=json_schema`: a server that constrains output
#: to it (llama.cpp, vLLM, OpenAI) cannot return a record of its own or a `disclosed`
#: list that repeats until the token limit, the two ways a small model broke
#: `json_object` in `make real-model`.
REPLY_SCHEMA = {
    "type": "object",
    "properties": {
        "message": {"type": "string"},
        "stop": {"type": "boolean"},
        "stop_reason": {"anyOf": [{"enum": ["done", "declined"]}, {"type": "null"}]},
        "disclosed": {"type": "array", "items": {"type": "string"}, "maxItems": 20},
    },
    "required": ["message", "stop", "stop_reason", "disclosed"],
    "additionalProperties": False,
}


class UserModelNotFound(LookupError):
    pass


class ChatUserModel:
    """A model user on a chat endpoint; `temperature` above 0 gives each trial's seed a
    different user, the seed makes it the same one again where the provider honours it."""

    def __init__(
        self,
        model: str,
        *,
        temperature: float = 0.7,
        max_tokens: int = 300,
        response_format: str = "json_object",
        prices: PriceTable | None = None,
        name: str | None = None,
        **endpoint: Any,
    ) -> None:
        if response_format not in RESPONSE_FORMATS:
            raise ValueError(f"response_format must be one of {', '.join(RESPONSE_FORMATS)}")
        self.endpoint = ChatEndpoint(model, **endpoint)
        self.model = model
        self.name = name or f"chat:{model}"
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.response_format = response_format
        self.prices = prices or PriceTable.from_env()
        self._loop = AgentLoop()  # its own: an agent that blocks the agents' cannot stall it

    @classmethod
    def from_options(cls, model: str, options: dict[str, str]) -> ChatUserModel:
        converters: dict[str, Callable[[str], Any]] = {
            **MODEL_OPTIONS,
            "max_tokens": int,
            "response_format": str,
        }
        return cls(model, **parse_options(options, converters))

    @property
    def fingerprint(self) -> str:
        return digest(
            {
                "kind": "chat",
                "model": self.model,
                "endpoint": self.endpoint.public_url,
                "temperature": self.temperature,
                "max_tokens": self.max_tokens,
                "response_format": self.response_format,
                "prompt": prompt_version(),
            }
        )

    def complete(self, messages: list[dict[str, str]], seed: int) -> UserAnswer:
        request: dict[str, Any] = {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": seed,
        }
        if self.response_format == "json_object":
            request["response_format"] = {"type": "json_object"}
        elif self.response_format == "json_schema":
            request["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "user_reply", "strict": True, "schema": REPLY_SCHEMA},
            }
        call = self.endpoint.complete(messages, **request)
        completion = asyncio.run_coroutine_threadsafe(call, self._loop.get()).result()
        spent = completion_usage(completion, self.prices, self.model)
        return UserAnswer(str(completion.choices[0].message.content or ""), spent)


def load_user_model(ref: str) -> UserModel:
    """The user model `ref` names; UserModelNotFound (one line) when it cannot be had."""
    model: UserModel = load_reference(
        ref,
        "--user-model",
        UserModelNotFound,
        ChatUserModel.from_options,
        UserModel,
        "a user model (it needs name, fingerprint and complete(messages, seed) -> str)",
    )
    return model
