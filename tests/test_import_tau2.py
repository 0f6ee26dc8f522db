"""`proctor import tau2`: tau2-bench's mock domain, imported and judged through the gateway.

Conformance: an agent replaying each task's gold actions passes every imported task, and
one that skips a gold action the task's reward basis counts fails it. The data lives in
../shared/data (not in the project); the tests that read it skip without it.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import proctor, shared_data
from proctor import Plan, ScriptedAgent, Step, load_suite
from proctor.env.suite import Suite
from proctor.run import Runner
from proctor.run.trial import TrialSpec, play_trial

DATA = shared_data("tau2-mock")
needs_data = pytest.mark.skipif(not DATA.exists(), reason="shared tau2 data absent")


def gold_tasks() -> list[dict[str, Any]]:
    return json.loads((DATA / "tasks.json").read_text())


def gold_steps(task: dict[str, Any]) -> list[Step]:
    actions = (task.get("evaluation_criteria") or {}).get("actions") or []
    return [Step(a["name"], a.get("arguments", {})) for a in actions]


def answer_of(task: dict[str, Any]) -> str:
    info = (task.get("evaluation_criteria") or {}).get("communicate_info") or []
    return " ".join(info) or "Done."


def verdicts(suite: Suite, plans: dict[str, Plan]) -> dict[str, Any]:
    agent = ScriptedAgent(plans, name="replay")
    results = Runner(suite, agent, timeout_s=None).run().results
    return {r.task_id: r for r in results}


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Suite:
    if not DATA.exists():
        pytest.skip("shared tau2 data absent")
    out = tmp_path_factory.mktemp("tau2") / "tasks"
    done = proctor("import", "tau2", str(DATA), "--out", str(out))
    assert done.returncode == 0, done.stderr
    return load_suite([out])


#: The one task without gold actions: its env assertion wants task_2 completed, so
#: replaying no actions fails it under tau2's rules as under proctor's.
NO_GOLD = "update_task_with_history_and_env_assertions"
COMPLETE_TASK_2 = Step("update_task_status", {"task_id": "task_2", "status": "completed"})


@needs_data
def test_gold_actions_pass_every_imported_task_that_has_them(imported: Suite) -> None:
    tasks = gold_tasks()
    assert len(imported.tasks) == len(tasks) == 10
    plans = {t["id"]: Plan(tuple(gold_steps(t)), answer_of(t)) for t in tasks}
    results = verdicts(imported, plans)
    failed = {
        i: [c.name for c in r.checks if not c.passed] for i, r in results.items() if not r.passed
    }
    assert failed == {NO_GOLD: ["state:db.tasks.task_2.status"]}
    graded = {c.name for r in results.values() for c in r.checks}
    assert {
        "tau2:db",
        "required:transfer_to_human_agents",
        "state:db.tasks.task_2.status",
    } <= graded
    only = imported.select(ids=[NO_GOLD])
    assert verdicts(only, {NO_GOLD: Plan((COMPLETE_TASK_2,), "Done.")})[NO_GOLD].passed


@needs_data
def test_skipping_any_counted_gold_action_fails_the_task(imported: Suite) -> None:
    plans: dict[str, Plan] = {}
    counted = 0
    for task in gold_tasks():
        steps = gold_steps(task)
        for skipped in range(len(steps)):
            kept = tuple(s for j, s in enumerate(steps) if j != skipped)
            plans[task["id"]] = Plan(kept, answer_of(task))
            results = verdicts(imported.select(ids=[task["id"]]), plans)
            assert not results[task["id"]].passed, (task["id"], steps[skipped])
            counted += 1
    assert counted == 8  # every gold action of the eight tasks that have one


@needs_data
def test_the_databases_compare_exactly_as_tau2_hashes_them(imported: Suite) -> None:
    """tau2's gold create_task sets no description: a described task is another database."""
    create = Step("create_task", {"user_id": "user_1", "title": "Important Meeting"})
    described = Step(
        "create_task",
        {"user_id": "user_1", "title": "Important Meeting", "description": "Q4 sync"},
    )
    only = imported.select(ids=["create_task_1"])
    exact = verdicts(only, {"create_task_1": Plan((create,), "Created.")})["create_task_1"]
    other = verdicts(only, {"create_task_1": Plan((described,), "Created.")})["create_task_1"]
    assert exact.passed
    assert not other.passed and [c.name for c in other.checks if not c.passed] == ["tau2:db"]


@needs_data
def test_the_mock_tools_follow_the_policy(imported: Suite) -> None:
    """Only existing users get tasks, a task needs a title, ids count the tasks."""
    member = imported.select(ids=["create_task_1"]).tasks[0]
    steps = (
        Step("create_task", {"user_id": "user_9", "title": "Important Meeting"}),
        Step("create_task", {"user_id": "user_1", "title": "  "}),
        Step("create_task", {"user_id": "user_1", "title": "Important Meeting"}),
    )
    spec = TrialSpec("t", member.task, member.domain, 0, 0, ())
    agent = ScriptedAgent({member.id: Plan(steps, "Done.")})
    played = asyncio.run(play_trial(spec, agent, None))
    assert [e.data["code"] for e in played.trace.of_kind("tool_error")] == ["not_found", "invalid"]
    assert played.outcome.final_state["db"]["users"]["user_1"]["tasks"] == ["task_1", "task_2"]


@needs_data
def test_a_malformed_task_is_named_and_nothing_is_written(tmp_path: Path) -> None:
    folder = tmp_path / "tau2"
    shutil.copytree(DATA, folder)
    tasks = gold_tasks()
    tasks[3]["evaluation_criteria"]["actions"][0]["argumentz"] = {}
    (folder / "tasks.json").write_text(json.dumps(tasks, indent=1))
    out = tmp_path / "out"
    done = proctor("import", "tau2", str(folder), "--out", str(out))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    path, line, message = done.stderr.strip().split(":", 2)
    assert path == str(folder / "tasks.json")
    assert message.strip() == "[3].evaluation_criteria.actions[0].argumentz: unknown field"
    assert '"argumentz"' in (folder / "tasks.json").read_text().splitlines()[int(line) - 1]
    assert not out.exists()


def test_a_folder_without_tau2_files_is_a_one_line_error(tmp_path: Path) -> None:
    done = proctor("import", "tau2", str(tmp_path), "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "db.json" in done.stderr and not (tmp_path / "out").exists()


@needs_data
def test_a_recorded_tool_result_nested_too_deep_is_named(tmp_path: Path) -> None:
    """JSON nested 100,000 deep in a history's tool result: a problem with its place,
    never a RecursionError."""
    folder = tmp_path / "tau2"
    shutil.copytree(DATA, folder)
    tasks = gold_tasks()
    history = next(
        t["initial_state"]["message_history"]
        for t in tasks
        if (t.get("initial_state") or {}).get("message_history")
    )
    tool = next(m for m in history if m["role"] == "tool")
    tool["content"] = "[" * 100_000 + "]" * 100_000
    (folder / "tasks.json").write_text(json.dumps(tasks, indent=1))
    done = proctor("import", "tau2", str(folder), "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(str(folder / "tasks.json"))
    assert "nests deeper than 64 levels" in done.stderr and done.stderr.count("\n") == 1
