"""Session: a simulated agent's model calls, billed from the text it reads and writes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from proctor import Task, Toolbox
from proctor.agents.agent import AgentInput
from proctor.agents.session import Session
from proctor.core.results import Usage
from proctor.env import Environment
from proctor.env.domain_finder import resolve_domain
from proctor.run.trial import usage_of

MINI = Path(__file__).parent / "fixtures" / "mini"
DOMAIN = resolve_domain("mini", MINI / "domain.py")


def session() -> tuple[Session, Environment]:
    task = Task.model_validate(
        {"id": "t", "domain": "mini", "prompt": "Paint it", "initial_state": {"items": {}}}
    )
    env = Environment.fresh(task, DOMAIN, seed=1)
    given = AgentInput(task_id="t", prompt=task.prompt, identity={}, tools=[], seed=1)
    return Session(given, Toolbox(env)), env


def test_a_call_is_billed_on_its_json_text_and_the_usage_is_the_traces() -> None:
    """The call's text is `json.dumps`'s (ASCII escapes and spaced separators count in
    its tokens); the usage the session returns is what its trace's model calls sum to."""
    billed, env = session()
    args = {"item_id": "café", "field": "tags", "value": ["ünï", 1.5, None, True]}
    asyncio.run(billed.call("items.set", args))
    asyncio.run(billed.call("items.get", {"item_id": "café"}))
    result = billed.answer("Done: painted.")
    calls = [e.data for e in env.recorder.events if e.kind == "model_call"]
    text = json.dumps({"tool": "items.set", "args": args})
    assert calls[0]["output_tokens"] == max(1, len(text) // 4)
    assert result.usage == usage_of(env.recorder.events) == billed.usage
    assert result.usage.model_calls == 3
    assert result.usage.cost_usd == sum(c["cost_usd"] for c in calls)


def test_a_session_that_billed_nothing_measured_nothing() -> None:
    assert session()[0].usage == Usage()


def test_arguments_that_are_not_json_fail_in_the_agent_as_json_dumps_fails() -> None:
    billed, env = session()
    with pytest.raises(TypeError, match="not JSON serializable"):
        asyncio.run(billed.call("items.get", {"item_id": object()}))
    assert not [e for e in env.recorder.events if e.kind == "model_call"]
