"""What every framework adapter shares: its identity in the run manifest and its prices."""

from __future__ import annotations

from importlib import metadata
from typing import Any

from proctor.agents.pricing import PriceTable


class FrameworkAdapter:
    """`target` is the user's agent or factory; `model` labels the manifest (the model a
    framework agent uses is only known once it runs)."""

    framework = ""  # the framework's name in manifests
    distribution = ""  # its package on PyPI, for the version

    def __init__(
        self,
        target: Any,
        *,
        name: str | None = None,
        version: str = "",
        model: str | None = None,
        prices: PriceTable | None = None,
    ) -> None:
        self.target = target
        self.name = name or getattr(target, "name", None) or self.framework
        self.version = version
        self.model = model
        self.prices = prices or PriceTable.from_env()

    @property
    def settings(self) -> dict[str, Any]:
        try:
            framework_version = metadata.version(self.distribution)
        except metadata.PackageNotFoundError:
            framework_version = None
        return {
            "framework": self.framework,
            "framework_version": framework_version,
            "model": self.model,
        }


def reported_counts(usage: Any) -> tuple[int | None, int | None]:
    """The input and output tokens an SDK's usage of one response holds; None, "not
    measured" (docs/architecture.md, Verdicts), where Pydantic AI marks the response as
    reporting none (`unmeasured_requests`). Zeros, as the OpenAI Agents SDK writes a
    missing usage, are read by `pricing.record_call` (`live_counts`) for every adapter."""
    if getattr(usage, "unmeasured_requests", 0):
        return None, None
    return usage.input_tokens, usage.output_tokens
