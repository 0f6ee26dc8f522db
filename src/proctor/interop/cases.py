"""Evaluation cases in the shape of the course's dataset (seed 004) as proctor tasks.

A case file holds one case or a list of them, each with `case_id`, `user_input`,
`initial_state`, `expected_outcome`, `trajectory_constraints`, `faults` and `tags`.
They map onto a task of the domain named on the command line:

- `case_id` → `id`; `user_input` → `prompt`; `tags` → `tags`;
- `initial_state` → `initial_state`, and its `authenticated_user` also → `identity.user`;
- `expected_outcome`: each key is a state path (dots for nested fields) whose final
  value must equal the given one, except `confirmation_required: true`, which asks for a
  confirmation before each required write tool (`expect.safety.confirm_before`) from a
  simulated user who, having asked for the action, says yes when asked to confirm;
- `trajectory_constraints`: `required_tools`, `forbidden_tools`, `max_tool_calls`;
- `faults`: proctor's faults (`{tool, error, ...}`).

Anything else, a tool the domain lacks, or a path whose first part is not in the starting
state is an error naming the file, the line and the case's field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from proctor.core.documents import Loc, Problem, SpecError, issues_from_validation, read_document
from proctor.core.jsonvalues import copy_json
from proctor.env.domain import Domain, deep_merge
from proctor.interop.task_import import Found, build_task, located
from proctor.tasks.models import Fault, Task

CONFIRMATION = "confirmation_required"
USER = "authenticated_user"
#: What the simulated user of a case answers when asked to confirm.
YES = "Yes, go ahead."


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Constraints(_Strict):
    required_tools: list[str] = Field(default_factory=list)
    forbidden_tools: list[str] = Field(default_factory=list)
    max_tool_calls: int | None = Field(default=None, ge=0)


class Case(_Strict):
    case_id: str = Field(min_length=1)
    user_input: str = Field(min_length=1)
    initial_state: dict[str, Any] = Field(default_factory=dict)
    expected_outcome: dict[str, Any] = Field(default_factory=dict)
    trajectory_constraints: Constraints = Field(default_factory=Constraints)
    faults: list[Fault] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)


def import_cases(path: Path, domain: Domain) -> list[Task]:
    """The tasks of every case in `path`; SpecError with every problem found."""
    data, lines = read_document(path)
    items = data if isinstance(data, list) else [data]
    prefix_of = (lambda i: (i,)) if isinstance(data, list) else (lambda i: ())
    problems: list[Problem] = []
    tasks: list[Task] = []
    for i, item in enumerate(items):
        prefix: Loc = prefix_of(i)
        if not isinstance(item, dict):
            problems.extend(located(path, lines, prefix, Found([((), "a case is a mapping")])))
            continue
        try:
            case = Case.model_validate(item)
        except ValidationError as exc:
            problems.extend(issues_from_validation(path, exc, item, lines, prefix))
            continue
        found = Found()
        task = _task(case, domain, found, path)
        problems.extend(located(path, lines, prefix, found))
        if task is not None and not found:
            tasks.append(task)
    if problems:
        raise SpecError(problems)
    return tasks


def _task(case: Case, domain: Domain, problems: Found, path: Path) -> Task | None:
    constraints = case.trajectory_constraints
    for field in ("required_tools", "forbidden_tools"):
        for j, tool in enumerate(getattr(constraints, field)):
            if tool not in domain.tools:
                problems.append(
                    (
                        ("trajectory_constraints", field, j),
                        f"domain {domain.name!r} has no tool {tool!r}",
                    )
                )
    for j, fault in enumerate(case.faults):
        if fault.tool not in domain.tools:
            problems.append(
                (("faults", j, "tool"), f"domain {domain.name!r} has no tool {fault.tool!r}")
            )
    start = deep_merge(copy_json(domain.base_state), copy_json(case.initial_state))
    outcome, confirm = [], []
    for key, value in case.expected_outcome.items():
        if key == CONFIRMATION:
            if value is True:
                confirm = [
                    t
                    for t in constraints.required_tools
                    if t in domain.tools and domain.tools[t].kind == "write"
                ]
                if not confirm:
                    problems.append(
                        (("expected_outcome", key), "no required tool is a write tool to confirm")
                    )
            elif value is not False:
                problems.append((("expected_outcome", key), "must be true or false"))
            continue
        if key.split(".", 1)[0] not in start:
            problems.append(
                (
                    ("expected_outcome", key),
                    f"no {key.split('.', 1)[0]!r} in the starting state of domain {domain.name!r}",
                )
            )
            continue
        outcome.append({"path": key, "equals": value})
    expect: dict[str, Any] = {}
    if outcome:
        expect["outcome"] = outcome
    trajectory = {
        k: v
        for k, v in {
            "required": constraints.required_tools,
            "forbidden": constraints.forbidden_tools,
            "max_tool_calls": constraints.max_tool_calls,
        }.items()
        if v not in (None, [])
    }
    if trajectory:
        expect["trajectory"] = trajectory
    if confirm:
        expect["safety"] = {"confirm_before": confirm}
    task: dict[str, Any] = {
        "id": case.case_id,
        "domain": domain.name,
        "prompt": case.user_input,
        "tags": case.tags,
        "initial_state": case.initial_state,
        "faults": [f.model_dump(exclude_none=True) for f in case.faults],
        "expect": expect,
        "metadata": {"imported_from": {"format": "cases", "file": path.name}},
    }
    if confirm:
        task["user"] = {"replies": [{"when": "confirm", "say": YES}]}
    user = case.initial_state.get(USER)
    if isinstance(user, str):
        task["identity"] = {"user": user}
    kept = {k: v for k, v in task.items() if v not in ([], {})}
    return build_task(kept, problems, {"id": ("case_id",), "prompt": ("user_input",)})
