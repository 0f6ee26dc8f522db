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

A case's state is often flat (`incident_status: mitigated`) where the domain nests it
(`incidents.INC-004217.status`). A state map (`--state-map FILE`) says where each flat key
lives: `paths:` maps a case key to a dotted domain path (null: not state, as
`authenticated_user`, which is the identity), with `{name}` filled from the case's own
state values or from `ids:`, patterns found in `user_input` (RE2, checked at load:
tasks/regex.py):

    ids: {incident: 'INC-[0-9]{6}'}
    paths:
      incident_status: incidents.{incident}.status
      user_can_close: users.{authenticated_user}.can_close
      authenticated_user: null

Anything else, a tool the domain lacks, a path whose first part is not in the starting
state, or (for a domain that declares its state model) a key or path the model cannot
hold, is an error naming the file, the line and the case's field: never an unpassable
task.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from proctor.core.documents import Loc, Problem, SpecError, issues_from_validation, read_document
from proctor.core.jsonvalues import copy_json
from proctor.env.checking import path_problem, state_problems
from proctor.env.domain import Domain, deep_merge
from proctor.interop.task_import import Found, build_task, located
from proctor.tasks import regex
from proctor.tasks.models import Fault, Pattern, Task

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


class _Values(dict[str, str]):
    """Template values: a name with none is a KeyError, never an empty string."""

    def __missing__(self, key: str) -> str:
        raise KeyError(key)


class StateMap(_Strict):
    """Where a case's flat state keys live in the domain's state (module docstring)."""

    #: Patterns from the user's file, checked at load and matched on RE2 (tasks/regex.py).
    ids: dict[str, Pattern] = Field(default_factory=dict)
    paths: dict[str, str | None] = Field(default_factory=dict)

    def path(self, key: str, case: Case) -> str | None:
        """The domain path of the case key (None: not state); KeyError names a `{name}`
        neither the case's state nor `ids` gives."""
        if key not in self.paths:
            return key
        template = self.paths[key]
        if template is None:
            return None
        values = {k: str(v) for k, v in case.initial_state.items() if isinstance(v, str)}
        for name, pattern in self.ids.items():
            found = regex.search(pattern, case.user_input)
            if found is not None:
                values[name] = found
        return template.format_map(_Values(values))


def load_state_map(path: Path) -> StateMap:
    """A state map file; SpecError naming file, line and field."""
    data, lines = read_document(path)
    try:
        return StateMap.model_validate(data)
    except ValidationError as exc:
        raise SpecError(issues_from_validation(path, exc, data, lines, ())) from None


def _set(state: dict[str, Any], path: str, value: Any) -> None:
    """`value` at the dotted `path`, mappings made on the way."""
    *parents, last = path.split(".")
    for part in parents:
        state = state.setdefault(part, {})
    state[last] = value


def import_cases(path: Path, domain: Domain, state_map: StateMap | None = None) -> list[Task]:
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
        task = _task(case, domain, found, path, state_map or StateMap())
        problems.extend(located(path, lines, prefix, found))
        if task is not None and not found:
            tasks.append(task)
    if problems:
        raise SpecError(problems)
    return tasks


def _mapped(
    case: Case, field: str, keys: dict[str, Any], domain: Domain, smap: StateMap, found: Found
) -> dict[str, Any]:
    """The case's `field` (initial_state or expected_outcome) keyed by domain paths; a key
    the map cannot place, or (with a state model) a path the model cannot hold, is a
    problem at the case's own key."""
    out: dict[str, Any] = {}
    for key, value in keys.items():
        try:
            where = smap.path(key, case)
        except KeyError as exc:
            found.add((field, key), f"the state map's {{{exc.args[0]}}} has no value in this case")
            continue
        if where is None:
            continue
        model = domain.state_model
        why = None if model is None else path_problem(model, where.split("."))
        if why is not None:
            shown = key if where == key else f"{key} (mapped to {where})"
            found.add(
                (field, key),
                f"{shown} is not in the {domain.name} domain's state model: {why}"
                + ("; give a --state-map" if where == key else ""),
            )
            continue
        out[where] = value
    return out


def _task(case: Case, domain: Domain, problems: Found, path: Path, smap: StateMap) -> Task | None:
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
    initial: dict[str, Any] = {}
    for where, value in _mapped(
        case, "initial_state", case.initial_state, domain, smap, problems
    ).items():
        _set(initial, where, copy_json(value))
    start = deep_merge(copy_json(domain.base_state), copy_json(initial))
    wanted = {k: v for k, v in case.expected_outcome.items() if k == CONFIRMATION}
    rest = {k: v for k, v in case.expected_outcome.items() if k != CONFIRMATION}
    wanted |= _mapped(case, "expected_outcome", rest, domain, smap, problems)
    outcome, confirm = [], []
    for key, value in wanted.items():
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
        "initial_state": initial,
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
    built = build_task(kept, problems, {"id": ("case_id",), "prompt": ("user_input",)})
    if built is not None and not problems:  # the state's types, once every key fits
        for _, message in state_problems(domain, built):
            problems.add(("initial_state",), message)
    return built
