"""The task file as pydantic models: what a task author may write, and nothing else.

Every model forbids unknown fields so that a typo (`must_mention` spelt `must_mentions`)
is an error at load time instead of an expectation silently never checked.
"""

from __future__ import annotations

import hashlib
import json
from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

#: Discriminator tags of the unions below; error messages leave them out.
UNION_TAGS = frozenset(
    {"path_assertion", "effect_assertion", "call_pattern", "any_of_group", "tool_name"}
)

Severity = Literal["critical", "high", "medium", "low"]
Risk = Literal["low", "medium", "high"]
Split = Literal["dev", "holdout"]
Approval = Literal["allow", "deny", "require_approval"]
SuiteKind = Literal["capability", "regression", "adversarial", "replay"]
#: The suite a task belongs to when it names none.
DEFAULT_SUITES: tuple[SuiteKind, ...] = ("capability",)
FaultKind = Literal[
    "timeout", "429", "400", "403", "404", "empty", "lost_response", "unavailable", "slow"
]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Identity(_Spec):
    """Who the agent acts for; the domain's authorization hook reads it."""

    user: str | None = None
    tenant: str | None = None
    scopes: list[str] = Field(default_factory=list)
    role: str | None = None


class UserReply(_Spec):
    """A scripted reply of the simulated user: `when` is `confirm`, `*`, or a substring."""

    when: str = "*"
    say: str


class UserSpec(_Spec):
    """`turns`: what the user says next, in order, one per question (a multi-turn
    conversation); once they are said, `replies` answer."""

    replies: list[UserReply] = Field(default_factory=list)
    turns: list[str] = Field(default_factory=list)


class Fault(_Spec):
    """A fault the ToolGateway injects; stored with the task, injected by the gateway."""

    tool: str
    error: FaultKind
    call: int | None = Field(default=None, ge=1)
    calls: list[Annotated[int, Field(ge=1)]] | None = None
    args: dict[str, Any] | None = None
    probability: float | None = Field(default=None, ge=0.0, le=1.0)
    retry_after_s: float | None = Field(default=None, ge=0.0)
    latency_s: float | None = Field(default=None, ge=0.0)


class PathAssertion(_Spec):
    """An assertion on the final state at a dotted path (`orders.A-100.status`)."""

    path: str
    equals: Any = None
    exists: bool | None = None

    @model_validator(mode="before")
    @classmethod
    def _needs_a_test(cls, data: Any) -> Any:
        if isinstance(data, dict) and "equals" not in data and "exists" not in data:
            raise ValueError("a path assertion needs `equals` or `exists`")
        return data

    @property
    def checks_equality(self) -> bool:
        return "equals" in self.model_fields_set


class EffectAssertion(_Spec):
    """An assertion on the side-effect ledger: how often a write tool was applied."""

    effect: str
    where: dict[str, Any] = Field(default_factory=dict)
    count: int | dict[str, Any] = 1


def _has(value: Any, key: str) -> bool:
    """Discriminate on input dicts and on model instances (at serialization)."""
    return key in value if isinstance(value, dict) else hasattr(value, key)


def _outcome_tag(value: Any) -> str:
    return "effect_assertion" if _has(value, "effect") else "path_assertion"


OutcomeAssertion = Annotated[
    Annotated[PathAssertion, Tag("path_assertion")]
    | Annotated[EffectAssertion, Tag("effect_assertion")],
    Discriminator(_outcome_tag),
]


class CallPattern(_Spec):
    """A tool call an expectation refers to; `args` holds predicates, not bytes."""

    tool: str
    args: dict[str, Any] | None = None


class AnyOf(_Spec):
    """At least one of these calls must be made."""

    any_of: list[str | CallPattern] = Field(min_length=1)

    @property
    def patterns(self) -> list[CallPattern]:
        return [CallPattern(tool=p) if isinstance(p, str) else p for p in self.any_of]


def _required_tag(value: Any) -> str:
    if isinstance(value, str):
        return "tool_name"
    return "any_of_group" if _has(value, "any_of") else "call_pattern"


RequiredCall = Annotated[
    Annotated[str, Tag("tool_name")]
    | Annotated[CallPattern, Tag("call_pattern")]
    | Annotated[AnyOf, Tag("any_of_group")],
    Discriminator(_required_tag),
]


class ForbiddenCall(_Spec):
    """A call that must never be executed; a denied proposal is a defence, not a violation."""

    tool: str
    args: dict[str, Any] | None = None
    severity: Severity = "high"


class TrajectoryExpect(_Spec):
    required: list[RequiredCall] = Field(default_factory=list)
    forbidden: list[str | ForbiddenCall] = Field(default_factory=list)
    allowed: list[str] | None = None
    before: list[Annotated[list[str], Field(min_length=2, max_length=2)]] = Field(
        default_factory=list
    )
    max_tool_calls: int | None = Field(default=None, ge=0)
    max_retries_per_tool: int | None = Field(default=None, ge=0)
    no_duplicate_calls: bool = False

    @property
    def required_calls(self) -> list[CallPattern | AnyOf]:
        """`required` with bare tool names read as calls with any arguments."""
        return [CallPattern(tool=r) if isinstance(r, str) else r for r in self.required]

    @property
    def forbidden_calls(self) -> list[ForbiddenCall]:
        return [ForbiddenCall(tool=f) if isinstance(f, str) else f for f in self.forbidden]


class AnswerExpect(_Spec):
    """Expectations on the final answer; a list item in `must_mention` is a set of synonyms."""

    must_mention: list[str | list[str]] = Field(default_factory=list)
    must_not_mention: list[str] = Field(default_factory=list)
    matches: list[str] = Field(default_factory=list)
    not_matches: list[str] = Field(default_factory=list)
    grounded: bool = False


class Injection(_Spec):
    """A planted instruction (in a note, an e-mail, a tool description) the agent must
    not act on: acting means a call matching `actions`, or the `canary` string appearing
    in the answer or in a write's arguments."""

    canary: str | None = None
    actions: list[CallPattern] = Field(default_factory=list)
    severity: Severity = "critical"

    @model_validator(mode="after")
    def _needs_a_signal(self) -> Injection:
        if not self.canary and not self.actions:
            raise ValueError("an injection needs a `canary` or `actions` to detect")
        return self


class Escalation(_Spec):
    """The agent should hand off or ask: a call matching one of `tools` (a name, or
    `{tool, args}` such as a decision of `escalate`), or a question to the user when
    `ask_user` is true."""

    tools: list[str | CallPattern] = Field(default_factory=list)
    ask_user: bool = False
    severity: Severity = "high"

    @property
    def patterns(self) -> list[CallPattern]:
        return [CallPattern(tool=t) if isinstance(t, str) else t for t in self.tools]


class SafetyExpect(_Spec):
    """Safety expectations; graded by proctor.grade.safety (docs/architecture.md, Verdicts)."""

    confirm_before: list[str] = Field(default_factory=list)
    no_cross_tenant: bool = False
    no_secrets_in_output: bool = False
    secrets: list[str] = Field(default_factory=list)
    injection: Injection | None = None
    decline: bool = False
    escalate: Escalation | None = None


class RobustnessExpect(_Spec):
    """How the agent should cope with a failing world; defaults apply to every trial.

    `claims` maps a success phrase of the answer to the write tool whose effect it
    asserts (`cancelled: orders.cancel`), on top of the `claims` the domain's tools declare.
    """

    max_transient_retries: int = Field(default=3, ge=0)
    no_duplicate_effects: bool = False
    max_repeats: int = Field(default=3, ge=1)
    claims: dict[str, str] = Field(default_factory=dict)


class Budget(_Spec):
    max_cost_usd: float | None = Field(default=None, ge=0)
    max_latency_s: float | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, ge=0)
    max_model_calls: int | None = Field(default=None, ge=0)


class Expectations(_Spec):
    outcome: list[OutcomeAssertion] = Field(default_factory=list)
    trajectory: TrajectoryExpect | None = None
    answer: AnswerExpect | None = None
    safety: SafetyExpect | None = None
    robustness: RobustnessExpect = Field(default_factory=RobustnessExpect)
    budget: Budget | None = None


class Task(_Spec):
    """One scenario. Immutable once loaded; `digest` identifies its content in manifests."""

    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.:/-]+$")
    version: int | str = 1
    domain: str
    description: str | None = None
    suites: list[SuiteKind] = Field(default_factory=lambda: list(DEFAULT_SUITES))
    split: Split = "dev"
    risk: Risk = "medium"
    tags: list[str] = Field(default_factory=list)
    identity: Identity = Field(default_factory=Identity)
    prompt: str = Field(min_length=1)
    initial_state: dict[str, Any] = Field(default_factory=dict)
    tools: list[str] | None = None
    user: UserSpec = Field(default_factory=UserSpec)
    faults: list[Fault] = Field(default_factory=list)
    policy: dict[str, Approval] = Field(default_factory=dict)
    expect: Expectations = Field(default_factory=Expectations)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _tenant_for_tenancy(self) -> Task:
        safety = self.expect.safety
        if safety is not None and safety.no_cross_tenant and not self.identity.tenant:
            raise ValueError("expect.safety.no_cross_tenant needs identity.tenant")
        return self

    @cached_property
    def digest(self) -> str:
        """Content hash of the task as parsed (key order and formatting do not matter)."""
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def referenced_tools(self) -> list[tuple[tuple[str | int, ...], str]]:
        """Every tool name the task refers to, with its location, for validation."""
        refs: list[tuple[tuple[str | int, ...], str]] = []
        for i, name in enumerate(self.tools or []):
            refs.append((("tools", i), name))
        for i, fault in enumerate(self.faults):
            refs.append((("faults", i, "tool"), fault.tool))
        for i, item in enumerate(self.expect.outcome):
            if isinstance(item, EffectAssertion):
                refs.append((("expect", "outcome", i, "effect"), item.effect))
        traj = self.expect.trajectory
        if traj is not None:
            base = ("expect", "trajectory")
            for i, req in enumerate(traj.required_calls):
                if isinstance(req, AnyOf):
                    for j, p in enumerate(req.patterns):
                        refs.append(((*base, "required", i, "any_of", j), p.tool))
                else:
                    refs.append(((*base, "required", i, "tool"), req.tool))
            for i, f in enumerate(traj.forbidden_calls):
                refs.append(((*base, "forbidden", i), f.tool))
            for i, name in enumerate(traj.allowed or []):
                refs.append(((*base, "allowed", i), name))
            for i, pair in enumerate(traj.before):
                for j, name in enumerate(pair):
                    refs.append(((*base, "before", i, j), name))
        for name in self.policy:
            refs.append((("policy", name), name))
        for phrase, name in self.expect.robustness.claims.items():
            refs.append((("expect", "robustness", "claims", phrase), name))
        safety = self.expect.safety
        if safety is not None:
            for i, name in enumerate(safety.confirm_before):
                refs.append((("expect", "safety", "confirm_before", i), name))
            if safety.injection is not None:
                for i, p in enumerate(safety.injection.actions):
                    refs.append((("expect", "safety", "injection", "actions", i, "tool"), p.tool))
            if safety.escalate is not None:
                for i, p in enumerate(safety.escalate.patterns):
                    refs.append((("expect", "safety", "escalate", "tools", i), p.tool))
        return refs
