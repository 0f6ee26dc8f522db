"""One model on an OpenAI-compatible endpoint: the client ChatAgent and chat judges share.

Where the endpoint is and which key it takes come from the arguments or the environment
(never the manifest); every completion goes through the endpoint's Scheduler, so an agent
and a judge calling one provider spend one budget. The openai client's own retries are
off: the scheduler retries (it honours `Retry-After` and backs the whole run off, where
the client would retry each request blindly). A provider failure that outlasts the
scheduler is an InfrastructureError: the harness's, never the agent's or the judge's
verdict (docs/architecture.md, Verdicts).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from proctor.agents.agent import InfrastructureError
from proctor.agents.outages import outages_as_infrastructure
from proctor.agents.pricing import PriceTable, call_cost, live_counts
from proctor.agents.scheduler import Limits, endpoint_key, estimate_tokens, scheduler_for
from proctor.core.credentials import public_url
from proctor.core.results import Usage

BASE_URL_ENVS = ("PROCTOR_CHAT_BASE_URL", "OPENAI_BASE_URL")
API_KEY_ENVS = ("PROCTOR_CHAT_API_KEY", "OPENAI_API_KEY")
DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: `chat:MODEL?...` options every endpoint takes, with their converters.
ENDPOINT_OPTIONS: dict[str, Callable[[str], Any]] = {
    "base_url": str,
    "timeout_s": float,
    "max_retries": int,
    "rpm": float,
    "tpm": float,
    "max_concurrency": int,
    "max_wait_s": float,
}
#: Options every `chat:` model takes (agent, judge, simulated user), beside its own.
MODEL_OPTIONS: dict[str, Callable[[str], Any]] = {
    **ENDPOINT_OPTIONS,
    "temperature": float,
    "prices": PriceTable.load,
    "name": str,
}


#: Clients by event loop (a client's connections belong to the loop that opened them).
_CLIENTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[Any, ...], Any]] = (
    weakref.WeakKeyDictionary()
)


def _env(names: tuple[str, ...]) -> str | None:
    return next((os.environ[n] for n in names if os.environ.get(n)), None)


def parse_options(
    options: Mapping[str, str], converters: Mapping[str, Callable[[str], Any]]
) -> dict[str, Any]:
    """`?key=value` options converted; an unknown or malformed one is a one-line ValueError."""
    out: dict[str, Any] = {}
    for key, raw in options.items():
        if key not in converters:
            raise ValueError(f"unknown option {key!r} (known: {', '.join(converters)})")
        try:
            out[key] = converters[key](raw)
        except (TypeError, ValueError, OSError) as exc:
            raise ValueError(f"option {key}={raw!r}: {exc}") from None
    return out


class ChatEndpoint:
    """`model` served at `base_url`, called under `Limits`."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        rpm: float | None = None,
        tpm: float | None = None,
        max_concurrency: int = 16,
        max_wait_s: float = 600.0,
    ) -> None:
        if importlib.util.find_spec("openai") is None:
            raise ValueError(
                f"chat model {model!r} needs the openai client: pip install 'proctor[openai]'"
            )
        self.model = model
        self.base_url = base_url or _env(BASE_URL_ENVS)
        key = api_key or _env(API_KEY_ENVS)
        if key is None and self.base_url is None:
            raise ValueError(
                f"chat model {model!r} needs OPENAI_API_KEY (or PROCTOR_CHAT_API_KEY), "
                "or PROCTOR_CHAT_BASE_URL pointing at a local server"
            )
        self._api_key = key or "not-needed"  # local servers take any key
        self.timeout_s = timeout_s
        self.limits = Limits(rpm, tpm, max_concurrency, max_wait_s, max_retries)

    @property
    def public_url(self) -> str:
        """What a manifest and a judge's identity record of the endpoint: the base URL
        with its path, never its key or a `user:password@`."""
        return public_url(self.base_url or DEFAULT_BASE_URL)

    def client(self) -> Any:
        """The AsyncOpenAI client of this endpoint on the running event loop, made once
        (building one costs ~0.1 s of CPU: an SSL context); retries are the scheduler's."""
        import openai

        clients = _CLIENTS.setdefault(asyncio.get_running_loop(), {})
        key = (self.base_url, self._api_key, self.timeout_s)
        if key not in clients:
            clients[key] = openai.AsyncOpenAI(
                api_key=self._api_key, base_url=self.base_url, max_retries=0, timeout=self.timeout_s
            )
        return clients[key]

    async def complete(self, messages: list[dict[str, Any]], **request: Any) -> Any:
        """One completion through the endpoint's scheduler; provider failures that outlast
        it are InfrastructureError."""
        client = self.client()
        scheduler = scheduler_for(endpoint_key(self.base_url), self.limits)
        budget = estimate_tokens(messages) + int(request.get("max_tokens") or 256)

        def used(completion: Any) -> int | None:
            return getattr(getattr(completion, "usage", None), "total_tokens", None)

        with outages_as_infrastructure():
            completion = await scheduler.submit(
                lambda: client.chat.completions.create(
                    model=self.model, messages=messages, **request
                ),
                tokens=budget,
                used_tokens=used,
            )
        if not completion.choices:
            raise InfrastructureError("chat endpoint returned a completion without choices")
        return completion


def reported_tokens(completion: Any) -> tuple[int | None, int | None]:
    """(prompt, completion) tokens as the provider reported them in the completion's
    `usage` (`pricing.live_counts`: a count left out is None, "not measured", never 0).
    The one reader of a chat completion's usage: agent, judges and simulated user."""
    usage = getattr(completion, "usage", None)
    return live_counts(
        getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None)
    )


def completion_usage(completion: Any, prices: PriceTable, model: str) -> Usage:
    """One completion as one model call: its reported tokens, priced as `model` where both
    counts are reported and the table knows it (else "not measured", never $0)."""
    prompt, output = reported_tokens(completion)
    return Usage(prompt, output, call_cost(prices, model, prompt, output)[0], 1)
