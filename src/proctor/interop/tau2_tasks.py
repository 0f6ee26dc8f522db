"""tau2-bench tasks (the mock domain) as proctor tasks of `proctor.bench.tau2:mock`.

From a folder holding tau2's `tasks.json`, `db.json` and `user_db.json`:

- the initial state is both databases, with the task's `initialization_data` merged in,
  its `initialization_actions` applied, and the writes of its `message_history` replayed
  (each must return what the history recorded); the history is shown in the prompt;
- the prompt is the task's `ticket` (its one-message request), else the user scenario's
  instructions; the scenario itself is kept in `metadata.tau2` for a simulated user;
- what counts follows the task's `reward_basis` (tau2's default: DB and COMMUNICATE):
  DB → the databases the gold actions leave, compared exactly (`tau2:db`); ACTION → the
  gold actions as required calls (arguments limited to `compare_args`); ENV_ASSERTION →
  outcome checks on the agent's database; COMMUNICATE → `communicate_info` as
  must-mention. Natural-language assertions are kept in `metadata.tau2.nl_assertions`
  and, with a rubric folder, judged on the `assertions-hold` rubric with the task's
  assertions as the judge's reference (proctor.interop.rubric_import): advisory unless
  NL_ASSERTION is in the reward basis, so the judge never changes a verdict tau2 would
  not. Assertions on what the user does with the user's own tools (proctor's simulated
  user has none) are listed as `not_graded`.

Anything else is an error naming `tasks.json`, its line and the task's field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from proctor.bench.tau2 import DATABASES, ENV_FUNCTIONS, EXPECTED, mock
from proctor.core.documents import Loc, Problem, SpecError, issues_from_validation, read_document
from proctor.core.jsonvalues import copy_json, json_equal
from proctor.env.domain import ToolError, deep_merge
from proctor.interop.rubric_import import ASSERTIONS, RubricFolder, assertion_list
from proctor.interop.task_import import Found, build_task, located
from proctor.tasks.models import Task
from proctor.traces.imported import TraceInputError, parse_json

DOMAIN = "proctor.bench.tau2:mock"
Basis = Literal["DB", "ENV_ASSERTION", "NL_ASSERTION", "ACTION", "COMMUNICATE"]
#: What tau2 counts when a task names no reward basis.
DEFAULT_BASIS: tuple[Basis, ...] = ("DB", "COMMUNICATE")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EnvCall(_Model):
    env_type: Literal["user", "assistant"]
    func_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class EnvAssertion(EnvCall):
    assert_value: bool = True
    message: str | None = None


class Action(_Model):
    action_id: str
    requestor: Literal["user", "assistant"] = "assistant"
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    info: str | None = None
    compare_args: list[str] | None = None


class ToolCall(_Model):
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    requestor: Literal["user", "assistant"] = "assistant"


class Message(BaseModel):
    model_config = ConfigDict(extra="allow")  # timestamps, usage, cost, raw data...
    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    id: str | None = None


class InitialState(_Model):
    initialization_data: dict[Literal["agent_data", "user_data"], dict[str, Any] | None] | None = (
        None
    )
    initialization_actions: list[EnvCall] | None = None
    message_history: list[Message] | None = None


class Criteria(_Model):
    actions: list[Action] | None = None
    env_assertions: list[EnvAssertion] | None = None
    communicate_info: list[str] | None = None
    nl_assertions: list[str] | None = None
    reward_basis: list[Basis] = Field(default_factory=lambda: list(DEFAULT_BASIS))


class Scenario(_Model):
    persona: str | None = None
    instructions: str | dict[str, Any]


class Tau2Task(_Model):
    id: str
    description: dict[str, Any] | None = None
    user_scenario: Scenario
    ticket: str | None = None
    initial_state: InitialState | None = None
    evaluation_criteria: Criteria | None = None
    issues: Any = None
    required_documents: Any = None
    user_tools: list[str] | None = None


def import_tau2(folder: Path, rubrics: RubricFolder | None = None) -> list[Task]:
    """The tasks of a tau2 mock-domain folder (natural-language assertions judged on the
    `rubrics` folder's rubric when given); SpecError naming every problem."""
    tasks_path = folder / "tasks.json"
    base = {name: _database(folder / f"{name}.json") for name in DATABASES}
    data, lines = read_document(tasks_path)
    if not isinstance(data, list):
        raise SpecError.one(tasks_path, 1, "", "tasks.json holds a list of tasks")
    problems: list[Problem] = []
    out: list[Task] = []
    for i, item in enumerate(data):
        try:
            task = Tau2Task.model_validate(item)
        except ValidationError as exc:
            problems.extend(issues_from_validation(tasks_path, exc, item, lines, (i,)))
            continue
        found = Found()
        built = _task(task, copy_json(base), found, rubrics)
        problems.extend(located(tasks_path, lines, (i,), found))
        if built is not None and not found:
            out.append(built)
    if problems:
        raise SpecError(problems)
    return out


def _database(path: Path) -> dict[str, Any]:
    data, _ = read_document(path)
    if not isinstance(data, dict):
        raise SpecError.one(path, 1, "", "a tau2 database is a JSON object")
    return data


def _apply(state: dict[str, Any], env_type: str, name: str, args: dict[str, Any]) -> Any:
    """Run a tau2 environment function on the state; ValueError for one it cannot."""
    fn = ENV_FUNCTIONS.get((env_type, name))
    if fn is None:
        raise ValueError(f"no {env_type} function {name!r} in the mock domain")
    try:
        return fn(state, **args)
    except (ToolError, TypeError, KeyError) as exc:
        raise ValueError(f"{name}({json.dumps(args)}) failed: {exc}") from None


def _initial_state(task: Tau2Task, state: dict[str, Any], found: Found) -> list[str]:
    """Initialise `state` in place; the history's lines for the prompt."""
    init = task.initial_state or InitialState()
    for key, part in (init.initialization_data or {}).items():
        deep_merge(state["db" if key == "agent_data" else "user_db"], copy_json(part or {}))
    for j, call in enumerate(init.initialization_actions or []):
        try:
            _apply(state, call.env_type, call.func_name, call.arguments)
        except ValueError as exc:
            found.add(("initial_state", "initialization_actions", j), str(exc))
    history: list[str] = []
    recorded = {m.id: m.content for m in init.message_history or [] if m.role == "tool"}
    for j, message in enumerate(init.message_history or []):
        if message.content and message.role in ("user", "assistant"):
            history.append(f"{message.role}: {message.content}")
        for made in message.tool_calls or []:
            tool = mock.tools.get(made.name)
            if tool is None or tool.kind != "write":
                continue
            loc: Loc = ("initial_state", "message_history", j)
            try:
                result = _apply(state, made.requestor, made.name, made.arguments)
            except ValueError as exc:
                found.add(loc, str(exc))
                continue
            if made.id not in recorded:
                continue
            try:
                shown = parse_json(recorded[made.id])
            except TraceInputError as exc:
                found.add(loc, str(exc))
                continue
            if not json_equal(result, shown):
                found.add(loc, f"replaying {made.id} gives {result}, not what the history shows")
    return history


def _task(
    task: Tau2Task, state: dict[str, Any], found: Found, rubrics: RubricFolder | None
) -> Task | None:
    history = _initial_state(task, state, found)
    criteria = task.evaluation_criteria or Criteria()
    basis = set(criteria.reward_basis)
    expect: dict[str, Any] = {}
    meta: dict[str, Any] = {
        "id": task.id,
        "description": task.description,
        "user_scenario": task.user_scenario.model_dump(exclude_none=True),
        "reward_basis": sorted(basis),
    }
    if "DB" in basis and (criteria.actions or criteria.env_assertions):
        gold = copy_json(state)
        for j, action in enumerate(criteria.actions or []):
            try:
                _apply(gold, action.requestor, action.name, action.arguments)
            except ValueError as exc:
                found.add(("evaluation_criteria", "actions", j), str(exc))
        meta[EXPECTED] = {name: gold[name] for name in DATABASES}
    if "ACTION" in basis:
        required: list[Any] = []
        for action in criteria.actions or []:
            keys = action.arguments if action.compare_args is None else action.compare_args
            args = {k: action.arguments.get(k) for k in keys}
            required.append({"tool": action.name, "args": args} if args else action.name)
        expect["trajectory"] = {"required": required}
    if "ENV_ASSERTION" in basis:
        outcome, skipped = _assertions(criteria.env_assertions or [], found)
        if outcome:
            expect["outcome"] = outcome
        if skipped:
            meta["not_graded"] = skipped
    if "COMMUNICATE" in basis and criteria.communicate_info:
        expect["answer"] = {"must_mention": list(criteria.communicate_info)}
    if criteria.nl_assertions:
        meta["nl_assertions"] = list(criteria.nl_assertions)
        if rubrics is not None:
            reference = assertion_list(criteria.nl_assertions)
            advisory = "NL_ASSERTION" not in basis
            expect["judge"] = [rubrics.entry(ASSERTIONS, reference, advisory)]
    instructions = task.user_scenario.instructions
    request = task.ticket or (
        instructions if isinstance(instructions, str) else json.dumps(instructions)
    )
    prompt = (
        "\n".join(["Earlier in this conversation:", *history, "", request]) if history else request
    )
    data = {
        "id": task.id,
        "domain": DOMAIN,
        "description": (task.description or {}).get("purpose"),
        "tags": ["tau2", "mock"],
        "prompt": prompt,
        "initial_state": state,
        "expect": expect,
        "metadata": {"tau2": meta},
    }
    return build_task(data, found, {"id": ("id",)})


def _assertions(
    assertions: list[EnvAssertion], found: Found
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Agent-side status assertions as outcome checks; the user's side is not graded."""
    outcome, skipped = [], []
    for j, item in enumerate(assertions):
        args = item.arguments
        if item.env_type == "user":
            skipped.append(item.model_dump(exclude_none=True))
        elif item.func_name == "assert_task_status" and set(args) == {"task_id", "expected_status"}:
            status = args["expected_status"]
            path = f"db.tasks.{args['task_id']}.status"
            outcome.append(
                {"path": path, "equals": status if item.assert_value else {"$ne": status}}
            )
        else:
            found.add(
                ("evaluation_criteria", "env_assertions", j),
                f"cannot map {item.func_name}({json.dumps(args)})",
            )
    return outcome, skipped
