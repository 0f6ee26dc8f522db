"""ChatJudge: a judge on any OpenAI-compatible endpoint, through the client ChatAgent uses.

`--judge 'chat:gpt-4.1-mini?base_url=http://...&rpm=500'`. Requests go through the
endpoint's scheduler (shared with agents on the same endpoint); answers must be the strict
JSON of proctor.judge.prompt. A malformed answer is shown back to the model with what is
wrong, at most `max_attempts` times in all; then, or when the endpoint keeps failing, the
judgment is a JudgeError: the harness's, counted as such, never a pass. Tokens and cost
are the judge's own, apart from the agent's.

Its identity (the fingerprint calibration records, cache keys and manifests use) is the
model name, the endpoint's base URL with its path but without credentials, the decoding
settings that change answers (temperature, seed, max tokens, response format) and the
prompt's hash; with the rubric version beside it wherever it is used. Another deployment
on the same host is another judge; the same one behind another port is too, unless
`proctor calibrate --same-as` records that they serve the same model. The model id the
provider reports is kept (`reported_models`) for the record (docs/architecture.md,
Judges).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from proctor.agents.agent import InfrastructureError
from proctor.agents.endpoint import (
    MODEL_OPTIONS,
    ChatEndpoint,
    completion_usage,
    parse_options,
)
from proctor.agents.pricing import PriceTable
from proctor.core.jsonvalues import digest
from proctor.core.results import Usage
from proctor.judge.judgment import JudgeError, JudgeView, Judgment, Preference
from proctor.judge.prompt import (
    PROMPT_HASH,
    MalformedAnswer,
    pair_messages,
    pair_schema,
    parse_preference,
    parse_score,
    score_messages,
    score_schema,
)
from proctor.tasks.rubrics import Rubric

RESPONSE_FORMATS = ("json_schema", "json_object", "none")


class ChatJudge:
    """A model judge; `response_format` is what the endpoint is asked to enforce (the
    answer is validated here whatever it is)."""

    def __init__(
        self,
        model: str,
        *,
        temperature: float = 0.0,
        seed: int | None = None,
        max_attempts: int = 3,
        max_tokens: int = 400,
        response_format: str = "json_schema",
        prices: PriceTable | None = None,
        name: str | None = None,
        **endpoint: Any,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if response_format not in RESPONSE_FORMATS:
            raise ValueError(f"response_format must be one of {', '.join(RESPONSE_FORMATS)}")
        self.endpoint = ChatEndpoint(model, **endpoint)
        self.model = model
        self.name = name or f"chat:{model}"
        self.temperature = temperature
        self.seed = seed
        self.reported_models: set[str] = set()
        self.max_attempts = max_attempts
        self.max_tokens = max_tokens
        self.response_format = response_format
        self.prices = prices or PriceTable.from_env()

    @classmethod
    def from_options(cls, model: str, options: dict[str, str]) -> ChatJudge:
        converters: dict[str, Callable[[str], Any]] = {
            **MODEL_OPTIONS,
            "seed": int,
            "max_attempts": int,
            "max_tokens": int,
            "response_format": str,
        }
        return cls(model, **parse_options(options, converters))

    @property
    def identity(self) -> dict[str, Any]:
        """What the judge is: everything that changes its answers, no credential."""
        return {
            "kind": "chat",
            "model": self.model,
            "endpoint": self.endpoint.public_url,
            "temperature": self.temperature,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
            "response_format": self.response_format,
            "prompt": PROMPT_HASH,
        }

    @property
    def fingerprint(self) -> str:
        return digest(self.identity)

    def _format(self, schema: dict[str, Any]) -> dict[str, Any] | None:
        if self.response_format == "json_schema":
            return {
                "type": "json_schema",
                "json_schema": {"name": "judgment", "strict": True, "schema": schema},
            }
        return {"type": "json_object"} if self.response_format == "json_object" else None

    async def _ask(
        self, messages: list[dict[str, str]], schema: dict[str, Any], parse: Callable[[str], Any]
    ) -> tuple[Any, Usage, int]:
        """(parsed answer, usage of every attempt, attempts); JudgeError when none is valid."""
        request: dict[str, Any] = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        if self.seed is not None:
            request["seed"] = self.seed
        response_format = self._format(schema)
        if response_format is not None:
            request["response_format"] = response_format
        usage, problem = Usage(), ""
        try:
            for attempt in range(1, self.max_attempts + 1):
                completion = await self.endpoint.complete(messages, **request)
                if completion.model:
                    self.reported_models.add(str(completion.model))
                usage += completion_usage(completion, self.prices, self.model)
                text = completion.choices[0].message.content or ""
                try:
                    return parse(text), usage, attempt
                except MalformedAnswer as exc:
                    problem = str(exc)
                messages = [
                    *messages,
                    {"role": "assistant", "content": text},
                    {
                        "role": "user",
                        "content": f"That answer is not valid: {problem}. Answer again "
                        "with the JSON object only, justification first.",
                    },
                ]
        except InfrastructureError as exc:
            raise JudgeError(f"{self.name}: {exc}", usage) from exc
        raise JudgeError(
            f"{self.name}: no valid answer in {self.max_attempts} attempts (last: {problem})", usage
        )

    async def score(self, rubric: Rubric, view: JudgeView) -> Judgment:
        answer, usage, attempts = await self._ask(
            score_messages(rubric, view),
            score_schema(rubric),
            lambda text: parse_score(text, rubric),
        )
        a = answer
        return Judgment(a.verdict, a.justification, a.confidence, usage, attempts, a.note)

    async def prefer(self, rubric: Rubric, first: JudgeView, second: JudgeView) -> Preference:
        answer, usage, _ = await self._ask(
            pair_messages(rubric, first, second), pair_schema(), parse_preference
        )
        a = answer
        return Preference(a.verdict, a.justification, a.confidence, usage, a.note)
