"""A domain: a simulated world's tools (typed functions), its state and its authorization.

Tools are declared with a decorator on typed functions, as in tau2-bench: the signature
becomes the argument schema (via pydantic) and the docstring the description the agent
sees. The first parameter receives the trial's private state; a parameter named `ctx`
receives the ToolContext (identity, clock, seeded RNG).
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import marshal
import random
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Union, get_args, get_origin, get_type_hints

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from proctor.core.jsonvalues import copy_json, frozen
from proctor.core.memo import per_object

if TYPE_CHECKING:
    from proctor.core.outcome import Outcome
    from proctor.core.results import Check
    from proctor.core.trace import SimClock, Trace
    from proctor.tasks.models import Identity, Task

State = dict[str, Any]
ToolKind = Literal["read", "write"]
Approval = Literal["allow", "deny", "require_approval"]


class ToolError(Exception):
    """Raised by a tool for an expected failure the agent should see (not found, refused).

    `code` is a short machine-readable reason such as `not_found` or `conflict`.
    """

    def __init__(self, message: str, code: str = "tool_error") -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class Decision:
    """An authorization decision, recorded as a `policy_decision` event."""

    allowed: bool
    reason: str = ""
    rule: str = ""


ALLOW = Decision(True, "allowed", "default")


@dataclass(slots=True)
class ToolContext:
    """What a tool may know besides its arguments."""

    identity: Identity
    clock: SimClock
    rng: random.Random
    task_id: str
    call_id: str


class _ArgsBase(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False)


@dataclass
class Tool:
    name: str
    description: str
    kind: ToolKind
    scopes: tuple[str, ...]
    fn: Callable[..., Any]
    args_model: type[BaseModel]
    entity_arg: str | None
    wants_ctx: bool
    latency_s: float
    returns: Any = None
    approval: Approval = "allow"
    confirms: bool = False
    claims: tuple[str, ...] | None = None
    args_schema: dict[str, Any] = field(init=False)
    #: Its arguments model dumps to its own fields unchanged (see `_flat`).
    flat: bool = field(init=False, repr=False)
    #: For a read tool, what the gateway has seen it do to the state: None before a call
    #: of it ran, True once one changed the state (a read that keeps bookkeeping), False
    #: when one left it as it was. A read not False is watched (env/gateway.py).
    writes_state: bool | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        schema = self.args_model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        self.args_schema = schema
        self.flat = _flat(self.args_model)

    def validate(self, args: Any) -> dict[str, Any]:
        """Validated, defaults-filled arguments; raises pydantic's ValidationError."""
        if not isinstance(args, dict):
            raise TypeError(f"arguments must be an object, got {type(args).__name__}")
        # the model's own validator, as `model_validate` calls it (without its checks of
        # options this call does not pass); `model_dump` is most of a call's validation,
        # and a flat model's fields are its dump
        model = self.args_model.__pydantic_validator__.validate_python(args)
        return dict(model.__dict__) if self.flat else model.model_dump()

    def schema(self) -> dict[str, Any]:
        """The tool as an agent sees it (OpenAI-style function schema)."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": copy_json(self.args_schema),
            "kind": self.kind,
        }


_SCALARS = (str, int, float, bool, type(None))


def _flat(model: type[BaseModel]) -> bool:
    """Does `model_dump()` give the validated fields as they are? Yes when every field
    holds a JSON scalar (its default too) and nothing customises validation or dumping."""
    decorators = model.__pydantic_decorators__
    if (
        model.model_dump is not BaseModel.model_dump
        or model.model_config.get("extra") == "allow"  # extras dump from elsewhere
        or any(getattr(decorators, f.name) for f in dataclasses.fields(decorators))
    ):
        return False
    return all(
        _scalar(info.annotation)
        and info.default_factory is None
        and (info.is_required() or type(info.default) in _SCALARS)
        for info in model.model_fields.values()
    )


def _scalar(annotation: Any) -> bool:
    """A type whose validated values are JSON scalars: str, int, float, bool, None, a
    Literal of those, or a union of them."""
    if annotation in _SCALARS:
        return True
    origin = get_origin(annotation)
    if origin is Literal:
        return all(type(value) in _SCALARS for value in get_args(annotation))
    if origin is Union or origin is types.UnionType:
        return all(_scalar(arg) for arg in get_args(annotation))
    return False


def format_validation_error(exc: ValidationError | TypeError) -> str:
    if isinstance(exc, TypeError):
        return str(exc)
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        msg = "unexpected argument" if err["type"] == "extra_forbidden" else err["msg"]
        parts.append(f"{where}: {msg}")
    return "; ".join(parts)


Authorizer = Callable[["Identity", Tool, dict[str, Any], State], Decision]
TenantOf = Callable[[State, Tool, dict[str, Any]], "str | None"]
DomainCheck = Callable[["Task", "Trace", "Outcome"], "list[Check]"]


class Domain:
    """A simulated world. Create one per module and declare tools with `@domain.tool`;
    `state_model` declares the shape of its state (proctor.env.checking reads it)."""

    def __init__(
        self,
        name: str,
        description: str = "",
        *,
        base_state: State | None = None,
        version: str = "1",
        state_model: type[BaseModel] | None = None,
    ) -> None:
        self.name = name
        self.description = description
        self.version = version
        self.base_state: State = base_state or {}
        #: The state's shape (a pydantic model, as tau2's domains declare): when given,
        #: `proctor validate` checks every task's initial_state and outcome paths by it.
        self.state_model = state_model
        self.tools: dict[str, Tool] = {}
        self.checks: list[DomainCheck] = []
        self._authorizers: list[Authorizer] = []
        self._tenant_of: TenantOf | None = None

    def tool(
        self,
        name: str | None = None,
        *,
        kind: ToolKind = "read",
        scopes: tuple[str, ...] | list[str] = (),
        entity: str | None = None,
        latency_s: float = 0.05,
        approval: Approval = "allow",
        confirms: bool = False,
        claims: tuple[str, ...] | list[str] | None = None,
        description: str | None = None,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Declare a tool.

        `entity` names the argument identifying what a write changes; `approval` is the
        default policy (a task's `policy:` overrides it); a successful call of a tool with
        `confirms` counts as a confirmation (an approval tool); `claims` are the phrases
        with which an answer asserts this write happened (for false-success checks; left
        out, a write is claimed by its verb's past forms, `orders.cancel` by "cancelled";
        `[]` turns them off); `description` replaces the docstring as what the agent sees.
        """

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            tool_name = name or fn.__name__
            if tool_name in self.tools:
                raise ValueError(f"domain {self.name!r}: tool {tool_name!r} declared twice")
            model, wants_ctx = _args_model(fn, tool_name)
            returns = get_type_hints(fn).get("return")
            if entity is not None and entity not in model.model_fields:
                raise ValueError(f"tool {tool_name!r}: entity {entity!r} is not an argument")
            self.tools[tool_name] = Tool(
                name=tool_name,
                description=description or inspect.cleandoc(fn.__doc__ or "").strip(),
                kind=kind,
                scopes=tuple(scopes),
                fn=fn,
                args_model=model,
                entity_arg=entity,
                wants_ctx=wants_ctx,
                latency_s=latency_s,
                returns=returns,
                approval=approval,
                confirms=confirms,
                claims=None if claims is None else tuple(claims),
            )
            return fn

        return register

    def tenancy(self, fn: TenantOf) -> TenantOf:
        """Register how to find the tenant owning what a call touches (None: no owner).

        When the identity has a tenant, a call touching another tenant's record is denied.
        """
        self._tenant_of = fn
        return fn

    def authorizer(self, fn: Authorizer) -> Authorizer:
        """Register an authorization rule; every rule must allow a call for it to run."""
        self._authorizers.append(fn)
        return fn

    def check(self, fn: DomainCheck) -> DomainCheck:
        """Register a domain-specific outcome check, run on every trial of this domain."""
        self.checks.append(fn)
        return fn

    def snapshot(self) -> Domain:
        """A copy whose state and tables no one else holds (tools, checks, rules), for a
        run's trials: the module's Domain object can change without changing them."""
        twin = copy.copy(self)
        twin.base_state = copy_json(self.base_state)
        twin.tools = {name: copy.copy(tool) for name, tool in self.tools.items()}
        twin.checks = list(self.checks)
        twin._authorizers = list(self._authorizers)
        return twin

    def initial_state(self, task: Task) -> State:
        """A private deep copy: the domain's base state overlaid with the task's state.

        Mappings merge key by key, so a task can change one patient's notes without
        erasing everyone else's; any other value replaces the base value.
        """
        return deep_merge(copy_json(self.base_state), copy_json(task.initial_state))

    def starting_state(self, task: Task) -> tuple[State, bytes | None]:
        """A trial's private copy of `initial_state(task)` and its fingerprint (None: not
        taken). The merged state is made once per task and kept as bytes, each trial
        loading its own copy in one call; a subclass that builds states its own way
        (`initial_state` overridden), or a state marshal cannot write, is built anew."""
        if type(self).initial_state is Domain.initial_state:
            kept = _kept_start(self, task)
            if kept is not None:
                data, settled = kept
                return marshal.loads(data), settled
        return self.initial_state(task), None

    def starting_point(self, task: Task) -> Any:
        """What identifies the state a trial of `task` starts from (duplicate detection):
        the task's own `initial_state`, unless a subclass builds states another way."""
        return task.initial_state

    def authorize(
        self, identity: Identity, tool: Tool, args: dict[str, Any], state: State
    ) -> Decision:
        """Scopes (when the identity declares any), tenancy, then the domain's own rules."""
        if tool.scopes and identity.scopes:
            missing = [s for s in tool.scopes if s not in identity.scopes]
            if missing:
                return Decision(False, f"missing scope {', '.join(missing)}", "scopes")
        if self._tenant_of is not None and identity.tenant:
            owner = self._tenant_of(state, tool, args)
            if owner is not None and owner != identity.tenant:
                return Decision(
                    False, f"belongs to tenant {owner}, not {identity.tenant}", "tenancy"
                )
        for rule in self._authorizers:
            decision = rule(identity, tool, args, state)
            if not decision.allowed:
                return decision
        return ALLOW

    @property
    def digest_source(self) -> dict[str, Any]:
        """What identifies this domain's tool surface in a run manifest."""
        return {name: t.schema() | {"scopes": list(t.scopes)} for name, t in self.tools.items()}


@per_object
def _kept_start(domain: Domain, task: Task) -> tuple[bytes, bytes] | None:
    """`domain.initial_state(task)` as bytes to copy from and its fingerprint
    (jsonvalues.frozen), made at the task's first trial: an agent that reaches the domain
    after that cannot change what its trials start from."""
    return frozen(domain.initial_state(task))


def deep_merge(base: State, overlay: State) -> State:
    """`overlay` merged into `base` (both owned by the caller): mappings recursively."""
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            deep_merge(base[key], value)
        else:
            base[key] = value
    return base


def _args_model(fn: Callable[..., Any], tool_name: str) -> tuple[type[BaseModel], bool]:
    params = list(inspect.signature(fn).parameters.values())
    if not params:
        raise TypeError(f"tool {tool_name!r}: the first parameter must receive the state")
    hints = get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    wants_ctx = False
    for param in params[1:]:
        if param.name == "ctx":
            wants_ctx = True
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {tool_name!r}: *args/**kwargs cannot form a schema")
        annotation = hints.get(param.name, Any)
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (annotation, default)
    model_name = "".join(p.capitalize() for p in tool_name.replace(".", "_").split("_")) + "Args"
    return create_model(model_name, __base__=_ArgsBase, **fields), wants_ctx
