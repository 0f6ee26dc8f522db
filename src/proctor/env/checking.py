"""A task checked against its domain: call arguments against the tools' schemas, state
against the domain's state model (docs/architecture.md, Packages: env).

A task names calls in many places (`required`, `forbidden`, reference trajectories,
faults, effect assertions, injection actions); an argument name the tool does not have,
or a literal of the wrong type, would only show as every trial failing. A domain that
declares its state model (a pydantic model, as tau2's domains do) also has every task's
`initial_state` and every outcome `path` checked: an unknown key, or a path that can never
exist, is an error. Each problem is (location in the task, message), with a "did you mean"
when a known name is close.
"""

from __future__ import annotations

import difflib
import functools
import types
from collections.abc import Iterator
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, TypeAdapter, ValidationError

from proctor.env.domain import Domain, Tool
from proctor.tasks.models import (
    AnyOf,
    CallPattern,
    EffectAssertion,
    ForbiddenCall,
    PathAssertion,
    Task,
)
from proctor.tasks.predicates import Equal, Fields, Items, Predicate

Loc = tuple[str | int, ...]
Problem = tuple[Loc, str]


def hint(name: str, known: Iterator[str] | list[str]) -> str:
    """`; did you mean 'title'?` when a known name is close, else the names known."""
    names = sorted(known)
    close = difflib.get_close_matches(name, names, n=1)
    if close:
        return f"; did you mean {close[0]!r}?"
    return f" (known: {', '.join(names)})" if names else ""


def task_calls(task: Task) -> Iterator[tuple[Loc, str, dict[str, Predicate]]]:
    """Every call with arguments a task names: (location of its args, tool, args)."""
    traj = task.expect.trajectory
    if traj is not None:
        base: Loc = ("expect", "trajectory")
        for i, req in enumerate(traj.required):
            if isinstance(req, AnyOf):
                for j, p in enumerate(req.any_of):
                    if isinstance(p, CallPattern) and p.args:
                        yield (*base, "required", i, "any_of", j, "args"), p.tool, p.args
            elif isinstance(req, CallPattern) and req.args:
                yield (*base, "required", i, "args"), req.tool, req.args
        for i, f in enumerate(traj.forbidden):
            if isinstance(f, ForbiddenCall) and f.args:
                yield (*base, "forbidden", i, "args"), f.tool, f.args
        if traj.reference is not None:
            for i, c in enumerate(traj.reference.calls):
                if isinstance(c, CallPattern) and c.args:
                    yield (*base, "reference", "calls", i, "args"), c.tool, c.args
    for i, fault in enumerate(task.faults):
        if fault.args:
            yield ("faults", i, "args"), fault.tool, fault.args
    for i, item in enumerate(task.expect.outcome):
        if isinstance(item, EffectAssertion) and item.where:
            yield ("expect", "outcome", i, "where"), item.effect, item.where
    safety = task.expect.safety
    if safety is not None and safety.injection is not None:
        for i, p in enumerate(safety.injection.actions):
            if p.args:
                yield ("expect", "safety", "injection", "actions", i, "args"), p.tool, p.args


class _NotLiteral(Exception):
    """A predicate with an operator: its type is the operator's business, not checked."""


def _literal(predicate: Predicate) -> Any:
    """The value a literal predicate stands for (raises _NotLiteral for operators)."""
    if isinstance(predicate, Equal):
        return predicate.source
    if isinstance(predicate, Items):
        return [_literal(p) for p in predicate.items]
    if isinstance(predicate, Fields):
        return {k: _literal(p) for k, p in predicate.fields.items()}
    raise _NotLiteral


@functools.cache
def _adapter(model: type[BaseModel], name: str) -> TypeAdapter[Any]:
    """The validator of one argument of a tool, built once (a suite checks each tool's
    arguments in every task that names them)."""
    annotation = model.model_fields[name].annotation
    assert annotation is not None  # argument_problems skips fields without one
    return TypeAdapter(annotation)


def argument_problems(tool: Tool, loc: Loc, args: dict[str, Predicate]) -> list[Problem]:
    """Unknown argument names, and literals the argument's type cannot hold."""
    fields = tool.args_model.model_fields
    problems: list[Problem] = []
    for name, predicate in args.items():
        if name not in fields:
            message = f"tool {tool.name!r} has no argument {name!r}" + hint(name, list(fields))
            problems.append(((*loc, name), message))
            continue
        try:
            value = _literal(predicate)
        except _NotLiteral:
            continue
        if value is None or fields[name].annotation is None:
            continue
        try:
            _adapter(tool.args_model, name).validate_python(value)
        except ValidationError as exc:
            why = exc.errors(include_url=False)[0]["msg"]
            problems.append(
                ((*loc, name), f"argument {name!r} of tool {tool.name!r}: {value!r}: {why}")
            )
    return problems


def _arms(annotation: Any) -> list[Any]:
    """The annotation's alternatives (a union's arms without None), else itself."""
    if get_origin(annotation) in (Union, types.UnionType):
        return [a for a in get_args(annotation) if a is not type(None)]
    return [annotation]


def _step(annotation: Any, key: str) -> tuple[bool, list[Any], list[str]]:
    """Whether `key` can exist under a value of `annotation`, the annotations under it,
    and the names known there (for "did you mean")."""
    found: list[Any] = []
    known: list[str] = []
    ok = False
    for arm in _arms(annotation):
        origin = get_origin(arm)
        if isinstance(arm, type) and issubclass(arm, BaseModel):
            names = {f.alias or n: f.annotation for n, f in arm.model_fields.items()}
            known += list(names)
            if key in names:
                ok = True
                found.append(names[key])
        elif origin is dict or arm is dict:
            ok = True
            found.append(get_args(arm)[1] if get_args(arm) else Any)
        elif origin is list or arm is list:
            if key.lstrip("-").isdigit():
                ok = True
                found.append(get_args(arm)[0] if get_args(arm) else Any)
        elif arm is Any:
            ok = True
            found.append(Any)
    return ok, found, known


def path_problem(model: type[BaseModel], parts: list[str]) -> str | None:
    """Why the path can never exist in a state of `model`; None when it can."""
    annotations: list[Any] = [model]
    for depth, key in enumerate(parts):
        steps = [_step(a, key) for a in annotations]
        if not any(ok for ok, _, _ in steps):
            where = ".".join(parts[:depth]) or "the state"
            known = sorted({n for _, _, names in steps for n in names})
            return f"{where} has no {key!r}" + hint(key, known)
        annotations = [a for ok, found, _ in steps if ok for a in found]
    return None


def _key_problems(model: type[BaseModel], state: Any, prefix: list[str]) -> Iterator[Problem]:
    """Unknown keys anywhere in a task's `initial_state` (mappings are walked key by key)."""
    if not isinstance(state, dict):
        return
    for key, value in state.items():
        parts = [*prefix, str(key)]
        why = path_problem(model, parts)
        if why is not None:
            yield ("initial_state", *parts), f"not in the domain's state model: {why}"
        else:
            yield from _key_problems(model, value, parts)


def state_problems(domain: Domain, task: Task) -> list[Problem]:
    """With a declared state model: unknown keys and wrong types in the state a trial
    starts from, and outcome paths that can never exist."""
    model = domain.state_model
    if model is None:
        return []
    problems = list(_key_problems(model, task.initial_state, []))
    if not problems:  # types only once every key is known (one problem, one line)
        try:
            model.model_validate(domain.initial_state(task))
        except ValidationError as exc:
            for err in exc.errors(include_url=False):
                where = [str(p) for p in err["loc"]]
                problems.append((("initial_state", *where), f"{err['msg']} (the state model)"))
    for i, item in enumerate(task.expect.outcome):
        if isinstance(item, PathAssertion):
            why = path_problem(model, item.path.split("."))
            if why is not None:
                loc: Loc = ("expect", "outcome", i, "path")
                problems.append((loc, f"path {item.path!r} can never exist: {why}"))
    return problems


def task_problems(domain: Domain, task: Task) -> list[Problem]:
    """Everything this module checks of one task (tools it does not know are the suite
    loader's problem, found before)."""
    problems: list[Problem] = []
    for loc, name, args in task_calls(task):
        tool = domain.tools.get(name)
        if tool is not None:
            problems += argument_problems(tool, loc, args)
    return problems + state_problems(domain, task)
