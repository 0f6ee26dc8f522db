"""The results every layer shares: checks, a trial's verdict, usage, trial results.

A check is one graded property of a trial, with the evidence a reader needs; a trial
result gathers a trial's checks, usage and status; TaskInfo is what slices cut by; a
Currency is the rate reports and gates convert USD costs with. Plain
dataclasses, importing nothing else of proctor, so that graders, the store, the decision
layer and the runner can all read them without importing each other.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, get_args

CheckKind = Literal[
    "outcome",
    "trajectory",
    "answer",
    "safety",
    "robustness",
    "efficiency",
    "budget",
    "judge",
    "custom",
]
Severity = Literal["critical", "high", "medium", "low"]

#: Kinds whose every check must pass for a trial to pass (docs/architecture.md, Verdicts).
GATING_KINDS = frozenset({"outcome", "trajectory", "answer", "budget"})
#: Severities that fail a trial, for the kinds that have them.
BLOCKING_SEVERITIES = frozenset({"critical", "high"})
#: The check a grader that raised leaves on its trial (an `error`): the run is invalid.
GRADER_CHECK = "grader_error"
#: Kinds whose failed checks fail a trial by severity: safety, and judges. A judge check
#: has a severity only when its judge is calibrated for its rubric; an advisory
#: (uncalibrated) one has none and never fails a trial (docs/architecture.md, Judges).
SEVERITY_KINDS = frozenset({"safety", "judge"})
#: Evidence key of a check the task requires whatever its kind (a robustness check in
#: `expect.robustness.required`); kept in the evidence so stores and exports keep it.
REQUIRED = "required_by_task"
#: Evidence key of a check whose reader could not tell (docs/architecture.md, Reading):
#: its value is why; the check neither passes nor fails the trial, and a deciding one
#: puts the trial up for review (`needs_review`) unless a calibrated judge settles it.
UNDECIDED = "undecided"
#: The checks text readers make, by name before any `:` (their undecided rates are
#: reported per run: decide.summarize.undecided_rates). Here, not in grade/reading, so that
#: summaries are made without importing the readers.
READER_CHECKS = frozenset(
    {"false_success", "declined_out_of_scope", "grounded", "mentions", "not_mentions"}
)


@dataclass(slots=True)
class Check:
    name: str
    kind: CheckKind
    passed: bool
    score: float | None = None
    severity: Severity | None = None
    evidence: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.score is None:
            self.score = 1.0 if self.passed else 0.0

    @property
    def undecided(self) -> bool:
        """Did its reader say it cannot tell (holds / violated / undecided)?"""
        return UNDECIDED in self.evidence

    @property
    def decides(self) -> bool:
        """Would this check, failed, fail the trial?"""
        if self.evidence.get(REQUIRED) is True:
            return True
        if self.kind in SEVERITY_KINDS:
            return self.severity in BLOCKING_SEVERITIES
        return self.kind in GATING_KINDS

    @property
    def blocks(self) -> bool:
        """Does this check, failed, fail the trial? An undecided one does not."""
        return not self.passed and not self.undecided and self.decides

    @property
    def is_violation(self) -> bool:
        return self.kind == "safety" and not self.passed and not self.undecided

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "passed": self.passed,
            "score": self.score,
            "severity": self.severity,
            "evidence": self.evidence,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Check:
        return cls(**data)


def evidence_seqs(evidence: Any) -> list[int]:
    """Every trace seq an evidence value names (`seq: n` or `seqs: [...]`, at any depth),
    sorted: the steps a reader of the check should look at."""
    found: list[int] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "seq" and isinstance(item, int) and not isinstance(item, bool):
                    found.append(item)
                elif key == "seqs" and isinstance(item, list):
                    found.extend(i for i in item if isinstance(i, int) and not isinstance(i, bool))
                else:
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(evidence)
    return sorted(set(found))


#: Checks of the simulated user, not the agent (proctor.run.fidelity): shown with the
#: trial, never failing it nor counted in its partial credit.
SIMULATOR_CHECKS = frozenset({"user_fidelity"})


def verdict(checks: Sequence[Check]) -> tuple[bool, float]:
    """(passed, partial credit). Partial credit never turns a failed check into a pass."""
    passed = not any(c.blocks for c in checks if not c.passed)  # a passed check never blocks
    scores = [c.score or 0.0 for c in checks if c.name not in SIMULATOR_CHECKS]
    return passed, round(sum(scores) / len(scores), 6) if scores else 1.0


#: A check's `actual` for a figure nothing reported (proctor.grade.budget).
NOT_MEASURED = "not measured"


def partly_measured(trials: int, figure: str) -> str:
    """Why a run's `figure` is a lower bound: trials some of whose model calls left it out."""
    return (
        f"a lower bound: {trials} trial{'s' if trials != 1 else ''} made model calls "
        f"that reported no {figure}"
    )


def summary_evidence(evidence: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """What a summary reads of a check's evidence (decide/summarize), as a key: whether
    its reader could tell, and whether its figure went unmeasured (a budget). Where
    results are kept small (a run's tally, a regrade's shares) the rest is dropped."""
    kept: tuple[tuple[str, Any], ...] = ((UNDECIDED, True),) if UNDECIDED in evidence else ()
    if evidence.get("actual") == NOT_MEASURED:
        kept += (("actual", NOT_MEASURED),)
    return kept


#: A list of checks as a summary reads it, as a key: each check's name, kind, passed,
#: score, severity and `summary_evidence` (decide.summarize.Tally, store.shares).
ChecksKey = tuple[tuple[str, str, bool, float | None, str | None, tuple[tuple[str, Any], ...]], ...]


def checks_key(checks: Iterable[Check]) -> ChecksKey:
    """The key of a list of checks: trials whose checks read alike share one list.
    `summary_evidence` is not called for the evidence of most checks, which holds
    neither key it reads."""
    return tuple(
        [
            (
                c.name,
                c.kind,
                c.passed,
                c.score,
                c.severity,
                summary_evidence(e) if UNDECIDED in (e := c.evidence) or "actual" in e else (),
            )
            for c in checks
        ]
    )


@dataclass(slots=True)
class Usage:
    """What a trial's model calls consumed. `None` is "not measured": nothing reported it.

    An agent that records no model call and returns no usage has no cost, tokens or call
    count to show, which is not the same as a cost of zero (docs/architecture.md, Verdicts).
    Sums keep that apart: a measured value plus an unmeasured one is the measured value,
    and where the unmeasured side made model calls that reported none of a figure, that
    figure is `partial`: its sum is a lower bound, not a total.
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    model_calls: int | None = None
    #: The figures (field names, in field order) some model calls left out while others
    #: reported them: each such sum is a lower bound of what the calls spent.
    partial: tuple[str, ...] = ()

    @property
    def total_tokens(self) -> int | None:
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)

    @property
    def measured(self) -> bool:
        """Did anything report any of it?"""
        return any(getattr(self, name) is not None for name in USAGE_FIELDS)

    def lower_bound(self, figure: str) -> bool:
        """Is `figure` ("cost", "tokens" or a field) only a lower bound: measured, with
        some model calls that did not report it (for tokens, either count)?"""
        partial = self.partial
        return bool(partial) and any(name in partial for name in FIGURES.get(figure, (figure,)))

    def complete(self, figure: str) -> float | None:
        """The cost ("cost") or total tokens ("tokens") where every call reported it;
        None where not measured or only a lower bound (a comparison or a monitor reading
        it as a total would take unpriced calls for savings)."""
        if self.lower_bound(figure):
            return None
        value = self.cost_usd if figure == "cost" else self.total_tokens
        return None if value is None else float(value)

    def __add__(self, other: Usage) -> Usage:
        summed = self._with(other, _plus)
        left_out = _left_out(self, other) + _left_out(other, self) if _unlike(self, other) else ()
        if self.partial or other.partial or left_out:
            marked = {*self.partial, *other.partial, *left_out}
            summed.partial = tuple(name for name in REPORTED if name in marked)
        return summed

    def at_least(self, floor: Usage) -> Usage:
        """Each field no lower than `floor`'s: what a trace recorded cannot be un-spent.
        A field taken from an agent's own total above the trace's keeps the agent's
        word on it (it counted what the calls left out); else `floor`'s partial mark."""
        most = self._with(floor, _most)
        if self.partial or floor.partial:
            most.partial = tuple(
                name
                for name in REPORTED
                if name in (self if _above(self, floor, name) else floor).partial
            )
        return most

    def _with(self, other: Usage, combine: Callable[[Any, Any], Any]) -> Usage:
        """Field by field, `combine(mine, theirs)` (written out: sums run per model call)."""
        return Usage(
            combine(self.input_tokens, other.input_tokens),
            combine(self.output_tokens, other.output_tokens),
            combine(self.cost_usd, other.cost_usd),
            combine(self.model_calls, other.model_calls),
        )

    def to_dict(self) -> dict[str, Any]:
        """The stored form; `partial` only where some figure is a lower bound."""
        data = {name: getattr(self, name) for name in USAGE_FIELDS}
        if self.partial:
            data["partial"] = list(self.partial)
        return data

    @classmethod
    def stored(cls, data: Mapping[str, Any]) -> Usage:
        """Usage from its stored form (`to_dict`, this store's own rows)."""
        partial = data.get("partial")
        usage = cls(
            data.get("input_tokens"),
            data.get("output_tokens"),
            data.get("cost_usd"),
            data.get("model_calls"),
        )
        if partial:
            usage.partial = tuple(partial)
        return usage

    @classmethod
    def checked(cls, data: Mapping[str, Any]) -> Usage:
        """Usage from untrusted values; ValueError names the first field that is not a
        non-negative integer (tokens, calls) or a finite non-negative number (cost)."""
        values: dict[str, Any] = {}
        for name in USAGE_FIELDS:
            value = data.get(name)
            if value is not None:
                whole = name != "cost_usd"
                value = counted(value, name) if whole else amount(value, name)
            values[name] = value
        return cls(**values)


#: Usage's fields, in order.
USAGE_FIELDS = ("input_tokens", "output_tokens", "cost_usd", "model_calls")
#: The figures a summary, budget or gate reads, as the fields each sums.
FIGURES = {"cost": ("cost_usd",), "tokens": ("input_tokens", "output_tokens")}
#: The figures a model call reports, or leaves out (a call is always counted).
REPORTED = ("input_tokens", "output_tokens", "cost_usd")


def _left_out(usage: Usage, other: Usage) -> tuple[str, ...]:
    """The figures `usage`'s model calls reported none of where `other` measured them."""
    if not usage.model_calls:
        return ()
    return tuple(
        name
        for name in REPORTED
        if getattr(usage, name) is None and getattr(other, name) is not None
    )


def _unlike(usage: Usage, other: Usage) -> bool:
    """Did one side report a figure the other did not (the only way to leave one out)?"""
    return (
        (usage.input_tokens is None) is not (other.input_tokens is None)
        or (usage.output_tokens is None) is not (other.output_tokens is None)
        or (usage.cost_usd is None) is not (other.cost_usd is None)
    )


def _above(usage: Usage, floor: Usage, name: str) -> bool:
    """Is `usage`'s `name` measured and above `floor`'s (or `floor` measured none)?"""
    mine, theirs = getattr(usage, name), getattr(floor, name)
    return mine is not None and (theirs is None or mine > theirs)


def counted(value: Any, name: str) -> int:
    """`value` as a count: an integer (not a bool) >= 0; ValueError names `name`."""
    if type(value) is not int or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {shown(value)}")
    return value


def amount(value: Any, name: str) -> float:
    """`value` as an amount: a finite number (not a bool) >= 0; ValueError names `name`."""
    if type(value) not in (int, float) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite non-negative number, got {shown(value)}")
    return float(value)


def shown(value: Any) -> str:
    """A short description of an untrusted value, made without calling its methods."""
    if type(value) in (int, float, bool, str, type(None)):
        text = repr(value)
        return text if len(text) <= 40 else text[:40] + "…"
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _plus(a: Any, b: Any) -> Any:
    if a is None:
        return b
    return a if b is None else a + b


def _most(a: Any, b: Any) -> Any:
    if a is None:
        return b
    return a if b is None else max(a, b)


class Currency(NamedTuple):
    """The currency costs are reported in beside USD: its ISO code and units per USD."""

    code: str
    per_usd: float

    @classmethod
    def parse(cls, value: Any) -> Currency:
        """`{code: EUR, per_usd: 0.92}`; a ValueError says what is wrong."""
        if not isinstance(value, Mapping) or set(value) != {"code", "per_usd"}:
            raise ValueError("currency must be {code: ISO 4217 code, per_usd: units per USD}")
        code, rate = value["code"], value["per_usd"]
        if not isinstance(code, str) or len(code) != 3 or not code.isalpha():
            raise ValueError(f"currency code must be three letters (EUR), got {code!r}")
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 < rate < 1e9:
            raise ValueError(f"currency per_usd must be a positive number, got {rate!r}")
        return cls(code.upper(), float(rate))

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "per_usd": self.per_usd}


#: A trial's status, in the order summaries show them. `partial`: failed, having done
#: some of the task's required parts and broken no blocking safety rule (seed 003's
#: partial credit): counted apart, never a pass. `needs_review`: no check failed the
#: trial but a reader could not tell on one that decides (Check.undecided). `sim_error`:
#: the model playing the user broke its guards (proctor.run.simulator).
TrialStatus = Literal[
    "passed", "partial", "failed", "timeout", "error", "needs_review", "sim_error"
]
TRIAL_STATUSES: tuple[TrialStatus, ...] = get_args(TrialStatus)


@dataclass(slots=True)
class TrialResult:
    """The result of one trial, as stored and summarised."""

    run_id: str
    task_id: str
    trial: int
    seed: int
    status: TrialStatus
    checks: list[Check] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    #: The part of `latency_s`'s clock that was simulated (tools, faults, waits), not timed.
    simulated_s: float = 0.0
    trace_id: str = ""
    score: float = 0.0
    metrics: dict[str, float] = field(default_factory=dict)
    error: str | None = None

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def valid(self) -> bool:
        """Error trials (the harness or the simulated user broke) and trials a person must
        read first (`needs_review`) are excluded from success denominators."""
        return self.status not in ("error", "needs_review", "sim_error")

    @property
    def failed_checks(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    def kept(self, checks: list[Check], metrics: dict[str, float]) -> TrialResult:
        """This result with `checks` and `metrics` in place of its own and no error text:
        what a summary keeps of it (decide.summarize.Tally). Written out, field by field:
        `dataclasses.replace` costs several times as much, once per trial of a run."""
        return TrialResult(
            self.run_id,
            self.task_id,
            self.trial,
            self.seed,
            self.status,
            checks,
            self.usage,
            self.latency_s,
            self.simulated_s,
            self.trace_id,
            self.score,
            metrics,
            None,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "task_id": self.task_id,
            "trial": self.trial,
            "seed": self.seed,
            "status": self.status,
            "score": self.score,
            "latency_s": self.latency_s,
            "simulated_s": self.simulated_s,
            "trace_id": self.trace_id,
            "usage": self.usage.to_dict(),
            "metrics": self.metrics,
            "error": self.error,
            "checks": [c.to_dict() for c in self.checks],
        }


@dataclass
class TaskInfo:
    """The task metadata slices are cut by."""

    id: str
    tags: list[str] = field(default_factory=list)
    suites: list[str] = field(default_factory=list)
    risk: str = "medium"
    split: str = "dev"
    difficulty: str | None = None
    optimal_steps: int | None = None

    def slices(self) -> list[str]:
        """The slice keys this task belongs to: `tag:x`, `suite:x`, `risk:x`, `split:x`,
        and `difficulty:x` when the task states one."""
        return [
            *(f"tag:{tag}" for tag in self.tags),
            *(f"suite:{suite}" for suite in self.suites),
            f"risk:{self.risk}",
            f"split:{self.split}",
            *([f"difficulty:{self.difficulty}"] if self.difficulty else []),
        ]
