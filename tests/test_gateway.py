"""The ToolGateway: validation, policy, execution, recording; bad calls answered, not raised."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import AfterValidator

from proctor import Domain, SyncToolbox, Task, Toolbox, ToolResult
from proctor.env import Environment, EnvironmentFault
from proctor.env.domain import ToolContext
from proctor.env.domain_finder import resolve_domain
from proctor.env.gateway import GatewayClosed
from proctor.env.toolbox import _WORLDS

MINI = Path(__file__).parent / "fixtures" / "mini"
DOMAIN = resolve_domain("mini", MINI / "domain.py")

STATE = {
    "items": {
        "a": {"colour": "red", "tags": ["x"]},
        "z": {"colour": "grey", "locked": True},
    }
}


def make_env(**task_fields: Any) -> Environment:
    data: dict[str, Any] = {
        "id": "t1",
        "domain": "mini",
        "prompt": "hi",
        "initial_state": STATE,
        **task_fields,
    }
    return Environment.fresh(Task.model_validate(data), DOMAIN, seed=1)


def kinds(env: Environment) -> list[str]:
    return [e.kind for e in env.recorder.events]


def events(env: Environment, kind: str) -> list[dict[str, Any]]:
    return [e.data for e in env.recorder.events if e.kind == kind]


# -- errors the agent reads ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "args", "fragment"),
    [
        ("items.bump", {"item_id": "a", "by": "lots"}, "by:"),
        ("items.get", {}, "item_id:"),
        ("items.get", {"item_id": "a", "extra": 1}, "extra: unexpected argument"),
        ("items.get", ["a"], "arguments must be an object"),
        ("items.get", None, "arguments must be an object"),
    ],
)
def test_schema_error_is_a_tool_error_not_an_exception(tool: str, args: Any, fragment: str) -> None:
    env = make_env()
    result = env.gateway.call(tool, args)
    assert isinstance(result, ToolResult)
    assert (result.ok, result.code) == (False, "invalid_arguments")
    assert fragment in (result.error or "")
    assert result.to_dict() == {"ok": False, "error": result.error, "code": "invalid_arguments"}
    # Recorded: the proposal and the error; never reaching policy or the tool.
    assert kinds(env) == ["tool_proposal", "tool_error"]
    [err] = events(env, "tool_error")
    assert err == {
        "call_id": result.call_id,
        "tool": tool,
        "code": "invalid_arguments",
        "error": result.error,
    }
    assert env.gateway.state == STATE
    assert env.gateway.ledger == []
    assert env.gateway.fault is None


def test_unknown_tool_is_recorded() -> None:
    env = make_env()
    result = env.gateway.call("items.purge", {"item_id": "a"})
    assert (result.ok, result.code) == (False, "unknown_tool")
    assert "items.purge" in (result.error or "")
    assert kinds(env) == ["tool_proposal", "tool_error"]
    assert events(env, "tool_proposal")[0]["tool"] == "items.purge"
    assert events(env, "tool_error")[0]["code"] == "unknown_tool"


def test_tools_not_listed_in_the_task_are_unknown() -> None:
    env = make_env(tools=["items.get"])
    assert [s["name"] for s in env.gateway.schemas()] == ["items.get"]
    hidden = env.gateway.call("items.set", {"item_id": "a", "field": "colour", "value": "blue"})
    assert hidden.code == "unknown_tool"
    assert env.gateway.state == STATE
    assert env.gateway.call("items.get", {"item_id": "a"}).ok


def test_authorizer_denial_is_a_policy_decision_and_a_denied_error() -> None:
    env = make_env()
    result = env.gateway.call("items.set", {"item_id": "z", "field": "colour", "value": "pink"})
    assert (result.ok, result.code) == (False, "denied")
    assert "item is locked" in (result.error or "")
    assert kinds(env) == ["tool_proposal", "policy_decision", "tool_error"]
    [decision] = events(env, "policy_decision")
    assert decision == {
        "call_id": result.call_id,
        "tool": "items.set",
        "allowed": False,
        "reason": "item is locked",
        "rule": "locked",
    }
    assert env.gateway.state == STATE
    assert env.gateway.ledger == []


def test_allowed_call_records_an_allowed_policy_decision() -> None:
    env = make_env()
    result = env.gateway.call("items.get", {"item_id": "a"})
    assert result.ok and result.value == STATE["items"]["a"]
    assert kinds(env) == ["tool_proposal", "policy_decision", "tool_result"]
    assert events(env, "policy_decision")[0]["allowed"] is True
    assert events(env, "tool_result")[0]["result"] == STATE["items"]["a"]


def test_tool_error_keeps_the_tools_code() -> None:
    env = make_env()
    result = env.gateway.call("items.get", {"item_id": "nope"})
    assert (result.ok, result.code) == (False, "not_found")
    assert "nope" in (result.error or "")
    assert events(env, "tool_error")[0]["code"] == "not_found"
    assert env.gateway.fault is None


def test_tool_bug_raises_environment_fault_and_is_kept() -> None:
    env = make_env()
    with pytest.raises(EnvironmentFault, match="disk on fire"):
        env.gateway.call("items.crash", {})
    assert isinstance(env.gateway.fault, EnvironmentFault)
    assert "RuntimeError" in str(env.gateway.fault)
    assert "environment_fault" in events(env, "note")[0]


# -- writes --------------------------------------------------------------------------------


def test_write_emits_state_change_and_ledger_entry() -> None:
    env = make_env()
    result = env.gateway.call(
        "items.set", {"item_id": "a", "field": "colour", "value": "blue", "idempotency_key": "k1"}
    )
    assert result.ok, result
    assert env.gateway.state["items"]["a"]["colour"] == "blue"
    [change] = [e for e in env.recorder.events if e.kind == "state_change"]
    assert change.data["tool"] == "items.set"
    assert change.data["call_id"] == result.call_id
    assert change.data["changes"] == [
        {"path": "items.a.colour", "before": "red", "after": "blue", "op": "replace"}
    ]
    [entry] = env.gateway.ledger
    assert entry.tool == "items.set"
    assert entry.entity == "a"
    assert entry.idempotency_key == "k1"
    assert entry.seq == change.seq
    assert entry.args == {
        "item_id": "a",
        "field": "colour",
        "value": "blue",
        "idempotency_key": "k1",
    }
    outcome = env.outcome()
    assert outcome.final_state["items"]["a"]["colour"] == "blue"
    assert [e.to_dict() for e in outcome.effects("items.set")] == [entry.to_dict()]


def test_write_adding_a_key_is_an_add_and_reads_leave_no_ledger() -> None:
    env = make_env()
    env.gateway.call("items.get", {"item_id": "a"})
    assert env.gateway.ledger == []
    assert events(env, "state_change") == []
    env.gateway.call("items.bump", {"item_id": "new", "by": 3})
    [change] = events(env, "state_change")
    assert change["changes"] == [
        {"path": "items.new", "before": None, "after": {"count": 3}, "op": "add"}
    ]
    [entry] = env.gateway.ledger
    assert (entry.entity, entry.idempotency_key) == ("new", None)


# -- copies ----------------------------------------------------------------------------------


def test_results_handed_to_the_agent_are_copies() -> None:
    env = make_env()
    got = env.gateway.call("items.get", {"item_id": "a"})
    got.value["colour"] = "hacked"
    got.value["tags"].append("evil")
    listing = env.gateway.call("items.list", {})
    listing.value.clear()
    assert env.gateway.state == STATE
    # The trace keeps what the tool returned, not what the agent did with it.
    results = events(env, "tool_result")
    assert results[0]["result"] == {"colour": "red", "tags": ["x"]}
    assert results[1]["result"] == STATE["items"]


def test_arguments_are_copied_into_the_trace_and_state() -> None:
    env = make_env()
    value = {"shade": "dark", "rgb": [1, 2, 3]}
    args = {"item_id": "a", "field": "paint", "value": value}
    env.gateway.call("items.set", args)
    value["rgb"].append(99)
    args["item_id"] = "z"
    assert env.gateway.state["items"]["a"]["paint"] == {"shade": "dark", "rgb": [1, 2, 3]}
    assert events(env, "tool_proposal")[0]["args"]["item_id"] == "a"
    assert env.gateway.ledger[0].args["value"]["rgb"] == [1, 2, 3]


def test_arguments_the_toolbox_gives_away_still_reach_the_trace_unchanged() -> None:
    """The toolbox hands the gateway its own copy of an agent's arguments, which the
    trace keeps without another: where a tool gets containers from them (`value: Any`),
    the trace must still get a copy the tool and later writes cannot change."""
    env = make_env()
    toolbox = SyncToolbox(env)
    args = {"item_id": "a", "field": "paint", "value": {"rgb": [1, 2]}}
    toolbox.call("items.set", args)
    toolbox.call("items.bump", {"item_id": "a", "by": 2})
    args["item_id"] = "z"
    env.gateway.state["items"]["a"]["paint"]["rgb"].append(99)  # as a later write might
    proposals = events(env, "tool_proposal")
    assert proposals[0]["args"] == {"item_id": "a", "field": "paint", "value": {"rgb": [1, 2]}}
    assert proposals[1]["args"] == {"item_id": "a", "by": 2}
    assert env.gateway.ledger[0].args["value"] == {"rgb": [1, 2]}
    assert env.gateway.ledger[1].args == {"item_id": "a", "by": 2}


KEPT: list[Any] = []
KEEPER = Domain("keeper")


def _keep(value: Any) -> Any:
    KEPT.append(value)
    return value


@KEEPER.tool("notes.add", kind="write")
def _add_note(state: dict[str, Any], tags: Annotated[Any, AfterValidator(_keep)]) -> None:
    state.setdefault("notes", []).append(len(tags))


def test_arguments_a_tool_keeps_a_hold_of_are_copied_into_the_trace() -> None:
    """Validation may hand a tool the very containers of its arguments (a validator that
    keeps its value, here): the trace's copy is then its own, toolbox or not."""
    task = Task.model_validate({"id": "k", "domain": "keeper", "prompt": "hi"})
    env = Environment.fresh(task, KEEPER, seed=1)
    SyncToolbox(env).call("notes.add", {"tags": ["a"]})
    KEPT[-1].append("later")
    assert events(env, "tool_proposal")[0]["args"] == {"tags": ["a"]}


def test_the_trace_and_the_agent_get_results_that_share_nothing() -> None:
    env = make_env()
    got = SyncToolbox(env).call("items.get", {"item_id": "a"})
    got.value["tags"].append("evil")
    assert events(env, "tool_result")[0]["result"] == {"colour": "red", "tags": ["x"]}


def test_initial_state_is_private_to_each_environment() -> None:
    task = Task.model_validate(
        {"id": "t1", "domain": "mini", "prompt": "hi", "initial_state": STATE}
    )
    first = Environment.fresh(task, DOMAIN, seed=1)
    first.gateway.call("items.set", {"item_id": "a", "field": "colour", "value": "blue"})
    second = Environment.fresh(task, DOMAIN, seed=1)
    assert second.gateway.state == STATE
    assert task.initial_state == STATE


def test_schemas_are_copies() -> None:
    env = make_env()
    schemas = env.gateway.schemas()
    schemas[0]["parameters"]["properties"].clear()
    schemas.clear()
    again = env.gateway.schemas()
    assert {s["name"] for s in again} == set(DOMAIN.tools)
    get = next(s for s in again if s["name"] == "items.get")
    assert get["parameters"]["properties"] == {"item_id": {"type": "string"}}
    assert get["kind"] == "read"


# -- identity scopes -------------------------------------------------------------------------

SET_A = {"item_id": "a", "field": "colour", "value": "blue"}


def test_scoped_tool_is_denied_when_identity_lacks_the_scope() -> None:
    env = make_env(identity={"user": "u1", "scopes": ["items:read"]})
    result = env.gateway.call("items.set", SET_A)
    assert result.code == "denied"
    assert "items:write" in (result.error or "")
    [decision] = events(env, "policy_decision")
    assert (decision["allowed"], decision["rule"]) == (False, "scopes")
    assert env.gateway.state == STATE


def test_scoped_tool_is_allowed_with_the_scope() -> None:
    env = make_env(identity={"user": "u1", "scopes": ["items:read", "items:write"]})
    assert env.gateway.call("items.set", SET_A).ok
    assert env.gateway.state["items"]["a"]["colour"] == "blue"


def test_identity_without_declared_scopes_is_not_scope_checked() -> None:
    env = make_env(identity={"user": "u1"})
    assert env.gateway.call("items.set", SET_A).ok


def test_unscoped_tool_is_allowed_for_a_scoped_identity() -> None:
    env = make_env(identity={"user": "u1", "scopes": ["items:read"]})
    assert env.gateway.call("items.bump", {"item_id": "a"}).ok


# -- the closed gateway, the seeded context --------------------------------------------------


def test_closed_gateway_refuses_and_records_nothing() -> None:
    env = make_env()
    env.gateway.call("items.get", {"item_id": "a"})
    before = len(env.recorder.events)
    env.close()
    with pytest.raises(GatewayClosed):
        env.gateway.call("items.set", SET_A)
    assert len(env.recorder.events) == before
    assert env.gateway.state == STATE


def test_tool_context_rng_is_seeded_per_environment() -> None:
    task = Task.model_validate({"id": "t1", "domain": "mini", "prompt": "hi"})

    def rolls(seed: int) -> list[int]:
        env = Environment.fresh(task, DOMAIN, seed)
        return [env.gateway.call("dice.roll", {}).value for _ in range(12)]

    assert rolls(5) == rolls(5)
    assert rolls(5) != rolls(6)


# -- the simulated user and the toolboxes ----------------------------------------------------

USER = {
    "replies": [
        {"when": "confirm", "say": "Yes, go ahead."},
        {"when": "colour", "say": "Green, please."},
        {"when": "*", "say": "I don't know."},
    ]
}


def test_confirm_reply_records_a_confirmation() -> None:
    env = make_env(user=USER)
    box = SyncToolbox(env)
    assert box.ask_user("Shall I paint item a green?") == "Yes, go ahead."
    [confirmation] = events(env, "confirmation")
    assert confirmation == {"question": "Shall I paint item a green?", "reply": "Yes, go ahead."}
    messages = events(env, "message")
    assert [m["role"] for m in messages] == ["assistant", "user"]


def test_non_confirming_replies_record_no_confirmation() -> None:
    env = make_env(user=USER)
    box = SyncToolbox(env)
    assert box.ask_user("What colour is best for item a?") == "Green, please."
    assert box.ask_user("Tell me about the weather.") == "I don't know."
    assert events(env, "confirmation") == []


def test_no_user_script_answers_empty_and_never_confirms() -> None:
    env = make_env()
    assert SyncToolbox(env).ask_user("Shall I proceed?") == ""
    assert events(env, "confirmation") == []


def test_async_toolbox_goes_through_the_same_gateway() -> None:
    env = make_env(user=USER)
    box = Toolbox(env)

    async def agent() -> tuple[ToolResult, ToolResult, str]:
        denied = await box.call("items.set", {"item_id": "z", "field": "x", "value": 1})
        reply = await box.ask_user("Should I go ahead with the change?")
        ok = await box.call("items.set", SET_A)
        return denied, ok, reply

    denied, ok, reply = asyncio.run(agent())
    assert (denied.code, ok.ok, reply) == ("denied", True, "Yes, go ahead.")
    assert kinds(env).count("confirmation") == 1
    assert [e.tool for e in env.gateway.ledger] == ["items.set"]
    confirm_seq = next(e.seq for e in env.recorder.events if e.kind == "confirmation")
    assert confirm_seq < env.gateway.ledger[0].seq


# -- seeded randomness: the RNGs are made when first asked for, seeded as before ----------


def test_tools_and_faults_draw_from_the_trials_seeded_rngs() -> None:
    """A tool's `ctx.rng` is `Random(seed)` and a probable fault's draws come from the
    fault plan's own `Random(seed ^ 0x5EED_FA17)`, however late either is first used."""
    dice = Domain("dice")

    @dice.tool("dice.roll")
    def roll(state: dict, ctx: ToolContext) -> float:
        return ctx.rng.random()

    @dice.tool("dice.peek")
    def peek(state: dict) -> int:
        return 1

    task = Task.model_validate(
        {
            "id": "t",
            "domain": "dice",
            "prompt": "roll",
            "faults": [{"tool": "dice.peek", "error": "unavailable", "probability": 0.5}],
        }
    )
    env = Environment.fresh(task, dice, seed=7)
    peeks = [env.gateway.call("dice.peek", {}).ok for _ in range(12)]
    rolls = [env.gateway.call("dice.roll", {}).value for _ in range(3)]
    tools, faults = random.Random(7), random.Random(7 ^ 0x5EED_FA17)
    assert rolls == [tools.random() for _ in range(3)]
    assert peeks == [faults.random() >= 0.5 for _ in range(12)]
    assert True in peeks and False in peeks  # the case where a constant would pass


def test_a_toolbox_that_goes_takes_its_world_with_it() -> None:
    """The toolbox's private table holds each world only while its toolbox lives: a long
    run must not keep every trial's state, and a new toolbox at the same address must
    reach its own world, not a dead one's."""
    first, second = make_env(), make_env()
    toolbox = SyncToolbox(first)
    key = id(toolbox)
    assert _WORLDS[key][0] is first
    del toolbox
    assert key not in _WORLDS
    others = [SyncToolbox(second) for _ in range(50)]  # some may reuse the address
    assert all(_WORLDS[id(t)][0] is second for t in others)
    assert others[0].call("items.get", {"item_id": "a"}).ok
