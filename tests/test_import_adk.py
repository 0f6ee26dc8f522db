"""`proctor import adk`: Google ADK eval sets (written here in ADK's documented schema) as
task files, judged through the gateway as ADK's tool-trajectory metric judges them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import proctor
from proctor import Plan, ScriptedAgent, Step, load_suite
from proctor.run import Runner

DOMAIN = '''
from proctor import Domain

shop = Domain("shop", base_state={"carts": {}})


@shop.tool("a", kind="write")
def a(state: dict, x: int) -> dict:
    """Put x in the cart."""
    state["carts"]["x"] = x
    return {"x": x, "order": "ORD-77"}


@shop.tool("b")
def b(state: dict) -> dict:
    """Look at the cart."""
    return dict(state["carts"])


@shop.tool("z")
def z(state: dict) -> str:
    """Anything else."""
    return "z"
'''


def invocation(text: str, calls: list[tuple[str, dict[str, Any]]], answer: str) -> dict[str, Any]:
    return {
        "invocation_id": f"inv-{text[:3]}",
        "user_content": {"role": "user", "parts": [{"text": text}]},
        "final_response": {"role": "model", "parts": [{"text": answer}]},
        "intermediate_data": {
            "tool_uses": [{"id": None, "name": n, "args": args} for n, args in calls],
            "tool_responses": [],
            "intermediate_responses": [],
        },
    }


EXPECTED = [("a", {"x": 1}), ("b", {})]
EVALSET: dict[str, Any] = {
    "eval_set_id": "shop_set",
    "name": "shop set",
    "eval_cases": [
        {
            "eval_id": "add_then_look",
            "conversation": [
                invocation("Add one x, then show me the cart.", EXPECTED, "Order ORD-77 holds x=1.")
            ],
            "session_input": {"app_name": "shop", "user_id": "u-5", "state": {"carts": {"y": 2}}},
            "final_session_state": {"carts": {"x": 1, "y": 2}},
            "creation_timestamp": 1700000000.0,
        },
        {
            "evalId": "two_turns",
            "conversation": [
                {
                    "invocationId": "t1",
                    "userContent": {"role": "user", "parts": [{"text": "Hello, can you help?"}]},
                    "finalResponse": {"role": "model", "parts": [{"text": "Which item?"}]},
                },
                {
                    "invocationId": "t2",
                    "userContent": {"role": "user", "parts": [{"text": "Add one x please."}]},
                    "intermediateData": {"toolUses": [{"name": "a", "args": {"x": 1}}]},
                },
            ],
        },
    ],
}


@pytest.fixture
def world(tmp_path: Path) -> Path:
    (tmp_path / "domain.py").write_text(DOMAIN)
    return tmp_path


def import_set(world: Path, data: Any, *options: str, name: str = "shop.evalset.json") -> Any:
    path = world / name
    path.write_text(json.dumps(data, indent=2))
    return proctor(
        "import", "adk", str(path), "--out", str(world / "tasks"), "--domain", "shop", *options
    )


def run(world: Path, plans: dict[str, Plan]) -> dict[str, Any]:
    suite = load_suite([world])
    results = Runner(suite, ScriptedAgent(plans), timeout_s=None).run().results
    return {r.task_id: r for r in results}


def test_an_eval_set_becomes_tasks(world: Path) -> None:
    done = import_set(world, EVALSET)
    assert done.returncode == 0, done.stderr
    first = yaml.safe_load((world / "tasks" / "add_then_look.yaml").read_text())
    assert first["prompt"] == "Add one x, then show me the cart."
    assert first["identity"] == {"user": "u-5"} and first["initial_state"] == {"carts": {"y": 2}}
    assert first["expect"]["trajectory"] == {
        "reference": {
            "calls": [{"tool": "a", "args": {"x": 1}}, {"tool": "b", "args": {}}],
            "order": "exact",
            "args": "exact",
        }
    }
    assert first["expect"]["answer"] == {"must_mention": ["1", "ORD-77"]}
    assert first["expect"]["outcome"] == [{"path": "carts", "equals": {"x": 1, "y": 2}}]
    second = yaml.safe_load((world / "tasks" / "two_turns.yaml").read_text())
    assert second["prompt"] == "Hello, can you help?"
    assert second["user"] == {"turns": ["Add one x please."]}
    assert proctor("validate", str(world)).returncode == 0


#: ADK's own tool-trajectory scores for expected [a(x=1), b()] (its trajectory evaluator).
ADK_SCORES = {
    "same": ([("a", {"x": 1}), ("b", {})], {"EXACT": 1, "IN_ORDER": 1, "ANY_ORDER": 1}),
    "extra": ([("a", {"x": 1}), ("z", {}), ("b", {})], {"EXACT": 0, "IN_ORDER": 1, "ANY_ORDER": 1}),
    "reordered": ([("b", {}), ("a", {"x": 1})], {"EXACT": 0, "IN_ORDER": 0, "ANY_ORDER": 1}),
    "wrong_arg": ([("a", {"x": 2}), ("b", {})], {"EXACT": 0, "IN_ORDER": 0, "ANY_ORDER": 0}),
}


@pytest.mark.parametrize("match_type", ["EXACT", "IN_ORDER", "ANY_ORDER"])
def test_match_types_judge_trajectories_as_adk_does(world: Path, match_type: str) -> None:
    cases = []
    for name, (_, _) in ADK_SCORES.items():
        case = {
            "eval_id": name,
            "conversation": [invocation("Add one x, then look.", EXPECTED, "Done.")],
        }
        cases.append(case)
    (world / "test_config.json").write_text(
        json.dumps(
            {
                "criteria": {
                    "tool_trajectory_avg_score": {"threshold": 1.0, "match_type": match_type}
                }
            }
        )
    )
    assert import_set(world, {"eval_set_id": "s", "eval_cases": cases}).returncode == 0
    plans = {
        name: Plan(tuple(Step(t, a) for t, a in calls), "Done.")
        for name, (calls, _) in ADK_SCORES.items()
    }
    results = run(world, plans)
    passed = {name: int(results[name].passed) for name in ADK_SCORES}
    assert passed == {name: scores[match_type] for name, (_, scores) in ADK_SCORES.items()}


def test_the_command_line_match_type_wins_over_the_config(world: Path) -> None:
    (world / "test_config.json").write_text(
        json.dumps({"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "matchType": 1}}})
    )
    data = {"eval_set_id": "s", "eval_cases": [EVALSET["eval_cases"][0]]}
    assert import_set(world, data, "--match-type", "any_order").returncode == 0
    task = yaml.safe_load((world / "tasks" / "add_then_look.yaml").read_text())
    assert task["expect"]["trajectory"]["reference"]["order"] == "any_order"
    assert task["metadata"]["adk"]["match_type"] == "ANY_ORDER"


def test_later_turns_are_what_the_simulated_user_says(world: Path) -> None:
    assert import_set(world, EVALSET).returncode == 0
    plan = Plan((Step(ask="Which item would you like?"), Step("a", {"x": 1})), "Added.")
    result = run(world, {"two_turns": plan})["two_turns"]
    assert result.passed, [c for c in result.checks if not c.passed]
    silent = run(world, {"two_turns": Plan((Step("a", {"x": 2}),), "Added.")})["two_turns"]
    assert not silent.passed


def test_both_older_test_json_layouts(world: Path) -> None:
    turns = [
        {
            "query": "hi",
            "expected_tool_use": [{"tool_name": "b", "tool_input": {}}],
            "reference": "Cart has 2 items.",
        },
        {
            "query": "add x",
            "expected_tool_use": [{"tool_name": "a", "tool_input": {"x": 3}}],
            "reference": "",
        },
    ]
    assert import_set(world, turns, name="legacy.test.json").returncode == 0
    task = yaml.safe_load((world / "tasks" / "legacy.yaml").read_text())
    assert task["prompt"] == "hi" and task["user"] == {"turns": ["add x"]}
    calls = task["expect"]["trajectory"]["reference"]["calls"]
    assert calls == [{"tool": "b", "args": {}}, {"tool": "a", "args": {"x": 3}}]
    assert "answer" not in task["expect"]  # the last turn's reference states no fact
    named = [
        {
            "name": "named case",
            "data": turns[:1],
            "initial_session": {"state": {"carts": {}}, "app_name": "shop", "user_id": "u-1"},
        }
    ]
    assert import_set(world, named, name="named.test.json").returncode == 0
    task = yaml.safe_load((world / "tasks" / "named-case.yaml").read_text())
    assert task["identity"] == {"user": "u-1"} and task["initial_state"] == {"carts": {}}


@pytest.mark.parametrize(
    ("path", "value", "message", "on_line"),
    [
        (
            ["eval_cases", 0, "conversation", 0, "final_responses"],
            [],
            "eval_cases[0].conversation[0].final_responses: unknown field",
            '"final_responses"',
        ),
        (
            ["eval_cases", 0, "conversation", 0, "intermediate_data", "tool_uses", 0, "name"],
            "pay",
            "eval_cases[0].conversation[0].intermediate_data.tool_uses[0].name: "
            "domain 'shop' has no tool 'pay'",
            '"pay"',
        ),
        (
            ["eval_cases", 1, "conversationScenario"],
            {"starting_prompt": "hi"},
            "eval_cases[1]: an eval case has a conversation or a conversation_scenario",
            "{",  # the line where that case opens
        ),
        (["evalSetId"], "x", "evalSetId: unknown field", '"evalSetId"'),
    ],
)
def test_malformed_eval_sets_are_named_and_nothing_is_written(
    world: Path, path: list[Any], value: Any, message: str, on_line: str
) -> None:
    data = json.loads(json.dumps(EVALSET))
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    done = import_set(world, data)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    named = [row for row in done.stderr.splitlines() if f": {message}" in row]
    assert named, done.stderr
    _, line, _ = named[0].split(":", 2)
    assert on_line in (world / "shop.evalset.json").read_text().splitlines()[int(line) - 1]
    assert not (world / "tasks").exists()


def test_a_bad_match_type_in_the_config_is_named(world: Path) -> None:
    (world / "test_config.json").write_text(
        json.dumps(
            {"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "match_type": "FUZZY"}}},
            indent=1,
        )
    )
    done = import_set(world, EVALSET)
    assert done.returncode == 2
    assert "test_config.json:" in done.stderr and "unknown match type 'FUZZY'" in done.stderr
    assert not (world / "tasks").exists()
