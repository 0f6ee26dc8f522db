"""Fault injection: the world fails on purpose, reproducibly.

A fault is selected by tool name, by the call's number among that tool's calls in the
trial (`call: 1`, `calls: [1, 2]`), by argument predicates, and by a probability drawn
from the trial's own fault RNG, so a trial with the same seed meets the same faults.
An injected fault is part of the test, never an `error` trial.
"""

from __future__ import annotations

import random
from collections import Counter
from functools import cached_property
from typing import Any, get_origin

from proctor.tasks.models import Fault
from proctor.tasks.predicates import args_match

#: What the agent reads for each fault that stops the call (error code, message).
BLOCKING: dict[str, tuple[str, str]] = {
    "timeout": ("timeout", "the tool did not answer in time"),
    "429": ("rate_limited", "too many requests"),
    "400": ("bad_request", "the request was rejected"),
    "403": ("forbidden", "access to this resource is forbidden"),
    "404": ("not_found", "the resource was not found"),
    "unavailable": ("unavailable", "the tool is temporarily unavailable"),
}
DEFAULT_TIMEOUT_S = 10.0
DEFAULT_SLOW_S = 5.0
DEFAULT_RETRY_AFTER_S = 1.0


class FaultPlan:
    """The faults of one trial; remembers how often each tool was called."""

    def __init__(self, faults: list[Fault], seed: int) -> None:
        self.faults = faults
        self.seed = seed

    @cached_property
    def calls(self) -> Counter[str]:
        """Calls per tool, counted when there are faults to select (most trials have none)."""
        return Counter()

    @cached_property
    def rng(self) -> random.Random:
        """Seeded when a fault with a probability first asks (most trials never do)."""
        return random.Random(self.seed ^ 0x5EED_FA17)

    def select(self, tool: str, args: dict[str, Any]) -> Fault | None:
        """Count this call and return the first fault that applies to it, if any."""
        if not self.faults:  # the counts serve only to select faults
            return None
        self.calls[tool] += 1
        number = self.calls[tool]
        for fault in self.faults:
            if fault.tool != tool:
                continue
            if fault.call is not None and fault.call != number:
                continue
            if fault.calls is not None and number not in fault.calls:
                continue
            if fault.args is not None and not args_match(args, fault.args):
                continue
            if fault.probability is not None and self.rng.random() >= fault.probability:
                continue
            return fault
        return None


def empty_value(annotation: Any) -> Any:
    """The empty result a tool of this return type would give: [], {}, "" or None."""
    origin = get_origin(annotation) or annotation
    if origin in (list, tuple, set):
        return []
    if origin is dict:
        return {}
    if origin is str:
        return ""
    return None
