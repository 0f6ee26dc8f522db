"""Hostile agent behaviours, one per trial, and the verdict each must get.

An agent built by `agent_for(plan, sync)` plays `plan[trial]` on each trial of the mini
suite's `read-item` task: a correct answer, or an attack on the harness (raise, exit,
hang, swallow cancellation, block its loop, bad types, threads, forged usage, tampering).
`tests/test_hostile_property.py` draws plans with hypothesis; `benchmarks/hostile.py`
measures how long past the timeout the trials that must be abandoned take.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from proctor import AgentResult
from proctor.core.outcome import LedgerEntry
from proctor.core.results import Usage
from proctor.env.gateway import ToolGateway
from proctor.env.toolbox import _WORLDS

#: behaviour -> (status the trial must get, check it must carry or None)
EXPECTED: dict[str, tuple[str, str | None]] = {
    "answers": ("passed", None),
    "raises": ("failed", "agent_crashed"),
    "exits": ("failed", "agent_crashed"),
    "raises_cancelled": ("failed", "agent_crashed"),
    "interrupts": ("failed", "agent_crashed"),
    "hangs": ("timeout", None),
    "swallows_cancellation": ("timeout", None),
    "blocks": ("timeout", None),
    "returns_a_number": ("failed", "agent_protocol"),
    "recursive_arguments": ("failed", "agent_protocol"),
    "tokens_as_text": ("failed", "agent_protocol"),
    "forges_usage": ("passed", None),
    "threads": ("passed", None),
    "tampers": ("failed", "trace_integrity"),
}
#: Behaviours that hold the agent's turn until it is abandoned.
ABANDONED = frozenset(b for b, (status, _) in EXPECTED.items() if status == "timeout")
#: What a forged usage records (and the trial must count).
FORGED_COST = 50.0


def _gateway(toolbox: Any) -> ToolGateway:
    """What a determined agent does: read proctor's private table of environments."""
    return _WORLDS[id(toolbox)][0].gateway


def _recursive() -> dict[str, Any]:
    args: dict[str, Any] = {"item_id": "a"}
    args["again"] = args
    return args


def _hammer(call: Callable[[], Any]) -> None:
    threads = [threading.Thread(target=lambda: [call() for _ in range(5)]) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _before(behaviour: str, input: Any, toolbox: Any) -> Any:
    """What a behaviour does besides reading item a (sync part); a value to return early."""
    if behaviour == "raises":
        raise ValueError("boom")
    if behaviour == "exits":
        sys.exit(3)
    if behaviour == "raises_cancelled":
        raise asyncio.CancelledError
    if behaviour == "interrupts":
        raise KeyboardInterrupt
    if behaviour == "tokens_as_text":
        toolbox.record_model_call(model="m", input_tokens="lots")
    if behaviour == "forges_usage":
        toolbox.record_model_call(model="m", input_tokens=2_000_000, cost_usd=FORGED_COST)
    if behaviour == "tampers":
        gateway = _gateway(toolbox)
        gateway.ledger.append(LedgerEntry(seq=999, tool="items.set", args={"item_id": "a"}))
    return None


def _answer(behaviour: str, colour: str) -> Any:
    if behaviour == "returns_a_number":
        return 42
    if behaviour == "forges_usage":
        return AgentResult(f"Item a is {colour}.", Usage(input_tokens=1, cost_usd=0.0))
    return f"Item a is {colour}."


def agent_for(plan: list[str], sync: bool) -> Any:
    """An agent playing `plan[trial]` on each trial, sync or async."""

    def sync_agent(input: Any, toolbox: Any) -> Any:
        behaviour = plan[input.trial]
        _before(behaviour, input, toolbox)
        if behaviour in ABANDONED:
            threading.Event().wait()  # a thread never comes back; it cannot be cancelled
        if behaviour == "recursive_arguments":
            with contextlib.suppress(TypeError):  # caught, and still recorded
                toolbox.call("items.get", _recursive())
        if behaviour == "threads":
            _hammer(lambda: toolbox.call("items.get", {"item_id": "a"}))
        got = toolbox.call("items.get", {"item_id": "a"})
        return _answer(behaviour, got.value["colour"])

    async def async_agent(input: Any, toolbox: Any) -> Any:
        behaviour = plan[input.trial]
        _before(behaviour, input, toolbox)
        if behaviour == "hangs":
            await asyncio.sleep(3600)
        if behaviour == "swallows_cancellation":
            while True:
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.sleep(3600)
        if behaviour == "blocks":
            time.sleep(5)  # blocks the agent's event loop
        if behaviour == "recursive_arguments":
            with contextlib.suppress(TypeError):
                await toolbox.call("items.get", _recursive())
        if behaviour == "threads":  # each thread drives the toolbox with an event loop of its own
            read = lambda: asyncio.run(toolbox.call("items.get", {"item_id": "a"}))  # noqa: E731
            await asyncio.to_thread(_hammer, read)
        got = await toolbox.call("items.get", {"item_id": "a"})
        return _answer(behaviour, got.value["colour"])

    return sync_agent if sync else async_agent
