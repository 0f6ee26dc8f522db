"""The task file as pydantic models: what a task author may write, and nothing else.

Every model forbids unknown fields so that a typo (`must_mention` spelt `must_mentions`)
is an error at load time instead of an expectation silently never checked.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache, cached_property
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    SerializerFunctionWrapHandler,
    Tag,
    model_serializer,
    model_validator,
)

from proctor.tasks.predicates import Equal, Predicate
from proctor.tasks.regex import check_pattern

#: Discriminator tags of the unions below; error messages leave them out.
UNION_TAGS = frozenset(
    {"path_assertion", "effect_assertion", "call_pattern", "any_of_group", "tool_name", "call"}
)

Severity = Literal["critical", "high", "medium", "low"]
Risk = Literal["low", "medium", "high"]
Split = Literal["dev", "holdout"]
Approval = Literal["allow", "deny", "require_approval"]
SuiteKind = Literal["capability", "regression", "adversarial", "replay"]
Difficulty = Literal["easy", "medium", "hard"]
#: The suite a task belongs to when it names none.
DEFAULT_SUITES: tuple[SuiteKind, ...] = ("capability",)
FaultKind = Literal[
    "timeout", "429", "400", "403", "404", "empty", "lost_response", "unavailable", "slow"
]


#: A regular expression from a task file: checked at load, matched with RE2.
Pattern = Annotated[str, AfterValidator(check_pattern)]
#: Argument predicates by argument name; arguments not named are free.
ArgPredicates = dict[str, Predicate]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Fields added after tasks were first stored: left out of the dump (and so of the
    #: task's digest) while they hold their default, so old tasks keep their digest.
    ADDED_LATER: ClassVar[frozenset[str]] = frozenset()

    @model_serializer(mode="wrap")
    def _omit_later_defaults(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        for name, default in _later_defaults(type(self)).items():
            if getattr(self, name) == default:
                data.pop(name, None)
        return data


@cache
def _later_defaults(model: type[_Spec]) -> dict[str, Any]:
    """The defaults of a model's ADDED_LATER fields, made once: pydantic inspects a
    default factory's signature on each `get_default`, which took half of `validate`."""
    fields = model.model_fields
    return {name: fields[name].get_default(call_default_factory=True) for name in model.ADDED_LATER}


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


Disclosure = Literal["on_request", "upfront"]


class UserFact(_Spec):
    """Something the simulated user knows: `value` is said when the agent asks for
    `name` (or one of `asked_by`), or in its first turn when `disclose: upfront`."""

    name: str = Field(min_length=1)
    value: str = Field(min_length=1)
    disclose: Disclosure = "on_request"
    #: Words in the agent's messages that count as asking for it (default: `name`).
    asked_by: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)


class SubGoal(_Spec):
    """One thing the user wants; `done_when`: what the agent must have told the user
    before the user may call it done (a pattern; without it, any answer of the agent)."""

    goal: str = Field(min_length=1)
    done_when: Pattern | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, data: Any) -> Any:
        return {"goal": data} if isinstance(data, str) else data


class UserSpec(_Spec):
    """`turns`: what the user says next, in order, one per question (a multi-turn
    conversation); once they are said, `replies` answer. The scenario fields (`persona`,
    `goals`, `facts`, `unknown`, `helpful`, `max_turns`) are for a model playing the user
    (`proctor run --user-model`): it answers what the scripted lines do not
    (docs/architecture.md, Simulated users)."""

    ADDED_LATER = frozenset({"persona", "goals", "facts", "unknown", "helpful", "max_turns"})

    replies: list[UserReply] = Field(default_factory=list)
    turns: list[str] = Field(default_factory=list)
    persona: str | None = None
    goals: list[SubGoal] = Field(default_factory=list)
    facts: list[UserFact] = Field(default_factory=list)
    #: What the user does not know: asked for it, they say so.
    unknown: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    #: False (the default): the user never corrects or rescues the agent.
    helpful: bool = False
    #: The most turns the model user takes; then it ends the conversation.
    max_turns: int = Field(default=8, ge=1, le=100)

    @model_validator(mode="after")
    def _scenario_needs_goals(self) -> UserSpec:
        if (self.persona or self.facts or self.unknown) and not self.goals:
            raise ValueError("a simulated-user scenario needs `goals` (what the user wants)")
        names = [f.name for f in self.facts]
        if len(set(names)) != len(names):
            raise ValueError("`facts` names must differ")
        return self

    @property
    def scenario(self) -> bool:
        """A model may play this user (it has goals to pursue)."""
        return bool(self.goals)


class Fault(_Spec):
    """A fault the ToolGateway injects; stored with the task, injected by the gateway."""

    tool: str
    error: FaultKind
    call: int | None = Field(default=None, ge=1)
    calls: list[Annotated[int, Field(ge=1)]] | None = None
    args: ArgPredicates | None = None
    probability: float | None = Field(default=None, ge=0.0, le=1.0)
    retry_after_s: float | None = Field(default=None, ge=0.0)
    latency_s: float | None = Field(default=None, ge=0.0)


class PathAssertion(_Spec):
    """An assertion on the final state at a dotted path (`orders.A-100.status`)."""

    path: str
    equals: Predicate = Equal(None)
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
    where: ArgPredicates = Field(default_factory=dict)
    count: Predicate = Equal(1)

    @model_validator(mode="after")
    def _count_is_a_count(self) -> EffectAssertion:
        value = self.count.source
        if isinstance(self.count, Equal) and not (
            isinstance(value, int) and not isinstance(value, bool) and value >= 0
        ):
            raise ValueError(
                f"`count` is a whole number >= 0 or an operator mapping, not {value!r}"
            )
        return self

    @property
    def forbids(self) -> bool:
        """The effect must not happen (`count: 0`, `{$lt: 1}`)."""
        return self.count.test(0) and not self.count.test(1)


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
    args: ArgPredicates | None = None


def _name_or_call(value: Any) -> str:
    return "tool_name" if isinstance(value, str) else "call"


#: A bare tool name (any arguments) or a `{tool, args}` call; errors name only the field.
ToolOrCall = Annotated[
    Annotated[str, Tag("tool_name")] | Annotated[CallPattern, Tag("call")],
    Discriminator(_name_or_call),
]


class AnyOf(_Spec):
    """At least one of these calls must be made."""

    any_of: list[ToolOrCall] = Field(min_length=1)

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
    args: ArgPredicates | None = None
    severity: Severity = "high"


#: How a reference trajectory's calls line up with the agent's (proctor.grade.match).
OrderMode = Literal["exact", "in_order", "any_order", "unordered", "subset", "superset"]
#: How much of one call's arguments must agree with the reference's (proctor.grade.match).
ArgsMode = Literal["exact", "ignore", "subset", "superset"]


class ReferenceTrajectory(_Spec):
    """The calls a reference solution makes, matched under `order` and `args` modes
    against the calls that reached the tool (proctor.grade.match). As everywhere in a
    task, arguments the reference does not name are free unless `args: exact`."""

    calls: list[ToolOrCall]
    order: OrderMode = "in_order"
    args: ArgsMode = "superset"

    @property
    def patterns(self) -> list[CallPattern]:
        return [CallPattern(tool=c) if isinstance(c, str) else c for c in self.calls]


ToolOrForbidden = Annotated[
    Annotated[str, Tag("tool_name")] | Annotated[ForbiddenCall, Tag("call")],
    Discriminator(_name_or_call),
]


class TrajectoryExpect(_Spec):
    ADDED_LATER = frozenset({"reference"})

    required: list[RequiredCall] = Field(default_factory=list)
    forbidden: list[ToolOrForbidden] = Field(default_factory=list)
    allowed: list[str] | None = None
    before: list[Annotated[list[str], Field(min_length=2, max_length=2)]] = Field(
        default_factory=list
    )
    #: Severity of the `allowed_tools` safety check (a call outside `allowed`).
    allowed_severity: Severity = "high"
    max_tool_calls: int | None = Field(default=None, ge=0)
    max_retries_per_tool: int | None = Field(default=None, ge=0)
    no_duplicate_calls: bool = False
    reference: ReferenceTrajectory | None = None

    @property
    def required_calls(self) -> list[CallPattern | AnyOf]:
        """`required` with bare tool names read as calls with any arguments."""
        return [CallPattern(tool=r) if isinstance(r, str) else r for r in self.required]

    @property
    def forbidden_calls(self) -> list[ForbiddenCall]:
        return [ForbiddenCall(tool=f) if isinstance(f, str) else f for f in self.forbidden]


class AnswerExpect(_Spec):
    """Expectations on the final answer; a list item in `must_mention` is a set of synonyms.

    `safety_meaning` says that its `must_mention`/`must_not_mention` terms stand for a
    clinical or safety meaning ("avoid amoxicillin", "needs review"), not for a fact (a
    value, an id): a keyword passes a negating or listing answer, so `proctor health`
    calls such a task `weak` unless an `expect.judge` rubric settles its `mentions` /
    `not_mentions` checks (health.meaning; docs/architecture.md, Reading).
    """

    ADDED_LATER = frozenset({"safety_meaning"})

    must_mention: list[str | list[str]] = Field(default_factory=list)
    must_not_mention: list[str] = Field(default_factory=list)
    matches: list[Pattern] = Field(default_factory=list)
    not_matches: list[Pattern] = Field(default_factory=list)
    grounded: bool = False
    safety_meaning: bool = False

    @model_validator(mode="after")
    def _meaning_needs_keywords(self) -> AnswerExpect:
        if self.safety_meaning and not (self.must_mention or self.must_not_mention):
            raise ValueError("`safety_meaning` marks must_mention/must_not_mention; it has none")
        return self

    @property
    def keyword_checks(self) -> list[str]:
        """The reader checks its keyword terms make (`mentions`, `not_mentions`)."""
        return [
            name
            for name, terms in (
                ("mentions", self.must_mention),
                ("not_mentions", self.must_not_mention),
            )
            if terms
        ]


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

    tools: list[ToolOrCall] = Field(default_factory=list)
    ask_user: bool = False
    severity: Severity = "high"

    @property
    def patterns(self) -> list[CallPattern]:
        return [CallPattern(tool=t) if isinstance(t, str) else t for t in self.tools]


class Decline(_Spec):
    """An out-of-scope request to refuse without giving what was asked: `must_not_mention`
    (terms, in any inflection) and `not_matches` (regular expressions) name that content."""

    must_not_mention: list[str] = Field(default_factory=list)
    not_matches: list[Pattern] = Field(default_factory=list)
    severity: Severity = "high"


class SafetyExpect(_Spec):
    """Safety expectations; graded by proctor.grade.safety (docs/architecture.md, Verdicts).

    `no_cross_tenant` unset means: checked whenever the task's identity names a tenant
    (`Task.checks_tenancy`): a search or read that returns another tenant's record is a
    violation in every such task, not only where the task thought to ask; `false` says
    this task's agent may see other tenants' records.
    """

    ADDED_LATER = frozenset({"no_cross_tenant"})

    confirm_before: list[str] = Field(default_factory=list)
    no_cross_tenant: bool | None = None
    no_secrets_in_output: bool = False
    secrets: list[str] = Field(default_factory=list)
    injection: Injection | None = None
    decline: bool | Decline = False
    escalate: Escalation | None = None

    @property
    def decline_spec(self) -> Decline | None:
        """`decline: true` is a Decline naming no content."""
        if isinstance(self.decline, Decline):
            return self.decline
        return Decline() if self.decline else None


RobustnessCheck = Literal[
    "transient_retries",
    "no_retry_after_refusal",
    "safe_retry_after_lost_response",
    "no_failing_loop",
    "tool_errors_handled",
    "no_invented_data",
    "bad_request_corrected",
    "unavailable_handled",
    "timeout_backoff",
]
#: Robustness checks that fail a trial unless the task lists them under `advisory`:
#: inventing data after a miss is a false answer.
DECIDING_BY_DEFAULT: frozenset[RobustnessCheck] = frozenset({"no_invented_data"})


class RobustnessExpect(_Spec):
    """How the agent should cope with a failing world; defaults apply to every trial.

    `claims` maps a success phrase of the answer to the write tool whose effect it
    asserts (`cancelled: orders.cancel`), on top of the claims of the domain's write tools
    (declared, or their verb's past forms); a phrase mapped to null is not read at all.
    `required` robustness checks fail the trial (docs/architecture.md, Verdicts); those
    in DECIDING_BY_DEFAULT do unless listed in `advisory`.
    """

    ADDED_LATER = frozenset({"required", "advisory"})

    max_transient_retries: int = Field(default=3, ge=0)
    no_duplicate_effects: bool = False
    max_repeats: int = Field(default=3, ge=1)
    claims: dict[str, str | None] = Field(default_factory=dict)
    required: list[RobustnessCheck] = Field(default_factory=list)
    advisory: list[RobustnessCheck] = Field(default_factory=list)

    @model_validator(mode="after")
    def _advisory_is_a_default(self) -> RobustnessExpect:
        for name in self.advisory:
            if name in self.required:
                raise ValueError(f"`{name}` is both required and advisory")
            if name not in DECIDING_BY_DEFAULT:
                raise ValueError(
                    f"`{name}` is advisory already; only "
                    f"{', '.join(sorted(DECIDING_BY_DEFAULT))} decide by default"
                )
        return self

    def decides(self, check: str) -> bool:
        """Does the robustness check named `check` (`name` or `name:TOOL`) fail the trial?"""
        name = check.split(":", 1)[0]
        if name in self.advisory:
            return False
        return name in self.required or name in DECIDING_BY_DEFAULT


class Budget(_Spec):
    max_cost_usd: float | None = Field(default=None, ge=0)
    max_latency_s: float | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, ge=0)
    max_model_calls: int | None = Field(default=None, ge=0)


class JudgeExpect(_Spec):
    """A model judge scores the trial on a rubric file (a path relative to the task file);
    see proctor.tasks.rubrics and docs/architecture.md, Judges.

    `reference` is this task's own text for a rubric that shows `reference` (a reference
    answer to compare with, the task's assertions), so one rubric serves many tasks.
    `advisory` keeps the check from failing the trial even once its judge is calibrated:
    for what the task's source does not count (tau2's assertions outside its reward basis).

    `settles` names reader checks (`false_success`, `declined_out_of_scope`) whose
    `undecided` readings this rubric decides once its judge is calibrated; without one
    such a trial is `needs_review` (docs/architecture.md, Reading).
    """

    ADDED_LATER = frozenset({"reference", "advisory", "settles"})

    rubric: str = Field(min_length=1)
    reference: str | None = Field(default=None, min_length=1)
    advisory: bool = False
    settles: list[str] = Field(default_factory=list)


class Expectations(_Spec):
    ADDED_LATER = frozenset({"judge"})

    outcome: list[OutcomeAssertion] = Field(default_factory=list)
    trajectory: TrajectoryExpect | None = None
    answer: AnswerExpect | None = None
    safety: SafetyExpect | None = None
    robustness: RobustnessExpect = Field(default_factory=RobustnessExpect)
    budget: Budget | None = None
    judge: list[JudgeExpect] = Field(default_factory=list)


#: A BCP 47 language tag as tasks and suite settings write it (`en`, `es`, `es-MX`).
LANGUAGE_TAG = r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$"
#: Task fields left out of `Task.digest` while unset (see there).
_LATER_OPTIONAL = ("difficulty", "optimal_steps", "language")


class Task(_Spec):
    """One scenario. Immutable once loaded; `digest` identifies its content in manifests."""

    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.:/-]+$")
    version: int | str = 1
    domain: str
    description: str | None = None
    suites: list[SuiteKind] = Field(default_factory=lambda: list(DEFAULT_SUITES))
    split: Split = "dev"
    risk: Risk = "medium"
    difficulty: Difficulty | None = None
    optimal_steps: int | None = Field(default=None, ge=0)
    tags: list[str] = Field(default_factory=list)
    identity: Identity = Field(default_factory=Identity)
    prompt: str = Field(min_length=1)
    #: The language the agent is asked to answer in (BCP 47: `en`, `es`, `es-MX`); the
    #: text readers read it with its lexicons, `en` when unset (grade.lexicon).
    language: str | None = Field(default=None, pattern=LANGUAGE_TAG)
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

    @property
    def checks_tenancy(self) -> bool:
        """Is `no_cross_tenant` graded: as the task says, else whenever its identity names
        a tenant (SafetyExpect)."""
        safety = self.expect.safety
        if safety is not None and safety.no_cross_tenant is not None:
            return safety.no_cross_tenant
        return bool(self.identity.tenant)

    @cached_property
    def digest(self) -> str:
        """Content hash of the task as parsed (key order and formatting do not matter).

        Optional fields added after tasks were first hashed count only when set, so a task
        file that does not use them keeps its digest (and its pairing with old baselines).
        """
        unset = {name for name in _LATER_OPTIONAL if getattr(self, name) is None}
        data = self.model_dump(mode="json", exclude=unset)
        blob = json.dumps(data, sort_keys=True, separators=(",", ":"))
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
            if traj.reference is not None:
                for i, p in enumerate(traj.reference.patterns):
                    refs.append(((*base, "reference", "calls", i), p.tool))
        for name in self.policy:
            refs.append((("policy", name), name))
        for phrase, claimed in self.expect.robustness.claims.items():
            if claimed is not None:
                refs.append((("expect", "robustness", "claims", phrase), claimed))
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
