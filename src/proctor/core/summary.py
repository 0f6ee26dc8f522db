"""RunSummary: a run's figures as a typed, versioned record (docs/architecture.md, Metrics).

`decide/summarize.summarize` computes the figures as JSON; `RunSummary.new` types them,
`to_json` gives back exactly the keys it was given (the `--json` file, the store, the
export line), and `from_json` reads any stored summary, migrating older versions first.

Adding a figure: compute it in `decide/summarize.py` under a new key, and declare the key
here as a field with a default (so summaries stored before it still load). Until it is
declared it still rides along in the JSON (extra keys are kept), but only a declared field
is an attribute the type checker knows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict

from proctor.core.results import TaskInfo

#: The layout `new` writes. 1: summaries stored before versions were recorded.
SUMMARY_VERSION = 2


class Record(BaseModel):
    """A part of a run record: typed fields, other keys kept as they came."""

    model_config = ConfigDict(extra="allow", frozen=True)

    def to_json(self) -> dict[str, Any]:
        """The JSON form: the keys this record was made from, no more."""
        return self.model_dump(mode="json", exclude_unset=True, by_alias=True)


class Distribution(Record):
    """Mean, median, 95th percentile and total of a per-trial figure (None: no trial)."""

    mean: float | None = None
    p50: float | None = None
    p95: float | None = None
    total: float | None = None


class Tokens(Distribution):
    measured_trials: int | None = None
    #: Trials whose tokens are a lower bound: some of their model calls left them out.
    partial_trials: int = 0


class Cost(Record):
    """Costs in USD; `currency` converts them for reports and gates. With
    `partial_trials`, the figures are lower bounds (some model calls were not priced)."""

    total_usd: float | None = None
    per_passed_trial_usd: float | None = None
    per_trial_usd: Distribution = Distribution()
    measured_trials: int | None = None
    partial_trials: int = 0
    currency: dict[str, Any] | None = None


class Interval(Record):
    method: str
    effective_n: float | None = None


class PassK(Record):
    """pass@k and pass^k are reported up to the k every task reaches (`complete_up_to`);
    `incomplete`: how many tasks reach each larger k."""

    complete_up_to: int
    tasks: int
    incomplete: dict[str, int] = {}


class Violation(Record):
    task_id: str
    trial: int
    check: str
    severity: str | None = None


class Violations(Record):
    total: int = 0
    by_severity: dict[str, int] = {}
    by_check: dict[str, int] = {}
    trials: list[Violation] = []


class UndecidedRate(Record):
    """One text reader's checks and how many it could not tell."""

    checks: int
    undecided: int
    rate: float


class Undecided(Record):
    """Text readers that could not tell (docs/architecture.md, Reading): per reader check,
    and `deciding`, the undecided checks that decide their trial (a gate's `max_undecided`)."""

    deciding: int = 0
    checks: dict[str, UndecidedRate] = {}


class Judges(Record):
    """Judge checks (calibrated ones count; advisory ones are shown) and judge spending."""

    checks: int = 0
    calibrated_checks: int = 0
    advisory_checks: int = 0
    pass_rate: float | None = None
    calibrated_pass_rate: float | None = None
    by_rubric: dict[str, dict[str, int]] = {}
    calls: int = 0
    cache_hits: int = 0
    #: None: judge calls none of which reported it ("not measured"; for the cost, none
    #: was priced either), never 0.
    input_tokens: int | None = 0
    output_tokens: int | None = 0
    cost_usd: float | None = 0.0
    #: The figures above that are lower bounds: some calls did not report them.
    partial: list[str] = []
    errors: int = 0


class UserModelFigures(Record):
    """The model playing the user (`--user-model`): what it spent, apart from the agent
    and the judges (calls, replies replayed from the cache, tokens and cost; None: no
    call reported it, "not measured", never 0), and its fidelity judged
    (`--user-fidelity`: trials judged, and those whose user the judge failed)."""

    calls: int = 0
    cache_hits: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    #: The figures above that are lower bounds: some calls did not report them.
    partial: list[str] = []
    fidelity_judged: int = 0
    fidelity_failed: int = 0


class Efficiency(Record):
    """Steps against the task's optimum (`score`), and seed 003's combined score of steps,
    tokens and latency (`combined`), each a mean over the tasks that measured it."""

    score: float | None = None
    tasks: int = 0
    combined: float | None = None
    combined_tasks: int = 0


class ScoreComponent(Record):
    """One weighted category: its metric (on a slice, `where`), score and weight."""

    score: float | None
    weight: float
    metric: str = ""
    where: dict[str, list[str]] = {}


class Scorecard(Record):
    """The weighted score of the categories, and the scorecard's gates (gate rows)."""

    score: float | None  # None: no category had anything to measure
    components: dict[str, ScoreComponent]
    gates: list[dict[str, Any]]
    passed: bool


class Rates(Record):
    """Success (task-weighted, with its interval), partial, pass@k and pass^k: the figures
    a run and each of its slices share."""

    valid_trials: int
    passed_trials: int
    success_rate: float | None
    success_ci: list[float | None]
    success_se: float | None
    success_interval: Interval | None = None
    pooled_success_rate: float | None = None
    partial_trials: int = 0
    partial_rate: float | None = None
    pass_at_k: dict[str, float | None]
    pass_hat_k: dict[str, float | None]
    pass_k: PassK | None = None


class TaskRow(Record):
    """One task's trials in the run."""

    id: str
    n: int
    passed: int
    partial: int = 0
    errors: int
    sim_errors: int = 0
    timeouts: int
    success_rate: float | None
    pass_hat_k: dict[str, float]
    failed_checks: dict[str, int]
    root_causes: dict[str, list[int]] = {}
    tags: list[str]
    suites: list[str]
    risk: str
    split: str
    difficulty: str | None = None
    optimal_steps: int | None = None
    efficiency: float | None = None
    cost_usd: float | None = None
    #: Trials whose cost is a lower bound (some model calls were not priced): so is `cost_usd`.
    cost_partial_trials: int = 0
    mean_score: float | None = None


class _SliceSize(Record):
    tasks: int


class SliceRow(Rates, _SliceSize):
    """The tasks of one tag, suite, risk or split (keys like `tag:lookup`)."""

    safety_violations: int
    root_causes: dict[str, int] = {}


class _RunSize(Record):
    run_id: str
    tasks: int
    trials: int
    trials_per_task: int
    expected_trials: int
    missing_trials: int


class RunSummary(Rates, _RunSize):
    """A run's figures: size and validity, success, safety, judges, cost, per task and
    per slice. `status` and `wall_time_s` are set when the run finishes. The JSON keys
    keep this order: size, rates, the rest as declared."""

    icc: float | None = None
    mde: float | None = None
    statuses: dict[str, int]
    errors: int
    sim_errors: int = 0
    timeouts: int
    needs_review: int = 0
    undecided: Undecided = Undecided()
    untraced_trials: int
    error_rate: float
    max_error_rate: float
    grader_errors: int = 0
    valid: bool
    #: None: a summary from before the reasons were recorded.
    invalid_reasons: list[str] | None = None
    safety_violations: Violations
    tool_use: dict[str, float | None]
    #: None: a summary from before judges were summarised.
    judges: Judges | None = None
    #: None: no model played a user in the run.
    user_model: UserModelFigures | None = None
    data_quality: dict[str, int] = {}
    quality: dict[str, float | None] = {}
    efficiency: Efficiency = Efficiency()
    #: Trials whose task set no budget, or whose budget nothing measured (seed 004's gate).
    budget_unmeasured_trials: int = 0
    cost: Cost
    tokens: Tokens
    tool_calls: Distribution
    latency_s: Distribution
    simulated_s: Distribution = Distribution()
    per_task: list[TaskRow]
    slices: dict[str, SliceRow]
    scorecard: Scorecard | None = None
    status: str | None = None
    wall_time_s: float | None = None
    summary_version: int = SUMMARY_VERSION

    @classmethod
    def new(cls, data: dict[str, Any]) -> RunSummary:
        """The summary of figures computed now (`decide.summarize.summarize`'s JSON)."""
        return cls.model_validate({"summary_version": SUMMARY_VERSION, **data})

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunSummary:
        """A stored summary of any version, migrated to this one."""
        return cls.model_validate(
            migrated(data, "summary_version", SUMMARY_VERSION, MIGRATIONS, "summary")
        )

    def task_infos(self) -> dict[str, TaskInfo]:
        """Tags, suites, risk, split, difficulty and optimal steps per task."""
        return {
            row.id: TaskInfo(
                row.id, row.tags, row.suites, row.risk, row.split, row.difficulty, row.optimal_steps
            )
            for row in self.per_task
        }

    @property
    def headline_k(self) -> int:
        """The k of the headline pass^k: the trials per task, or fewer when some task has
        fewer valid trials (pass^k is reported over all tasks or not at all). At least 1."""
        complete = self.pass_k.complete_up_to if self.pass_k else self.trials_per_task
        return max(min(self.trials_per_task, complete), 1)


def _from_1(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 (unversioned, before 2026-12-02) gave the cost per successful task; the
    cost per passed trial replaced it."""
    cost = dict(data.get("cost") or {})
    old = cost.pop("per_successful_task_usd", None)
    if "per_passed_trial_usd" not in cost:
        total, passed = cost.get("total_usd"), data.get("passed_trials")
        cost["per_passed_trial_usd"] = total / passed if total is not None and passed else old
    return {**data, "cost": cost, "summary_version": 2}


Migration = Callable[[dict[str, Any]], dict[str, Any]]


def migrated(
    data: dict[str, Any], key: str, current: int, migrations: dict[int, Migration], what: str
) -> dict[str, Any]:
    """A stored record's JSON turned into the `current` layout, one version at a time
    (no `key`: version 1, stored before versions were recorded); a newer one is refused."""
    version = int(data.get(key, 1))
    if version > current:
        raise ValueError(f"{what} version {version} is newer than this proctor reads ({current})")
    for step in range(version, current):
        data = migrations[step](data)
    return data


#: version → the step that turns a summary of that version into the next.
MIGRATIONS: dict[int, Migration] = {1: _from_1}


def summary_schema() -> dict[str, Any]:
    """JSON Schema of a run summary (`proctor run --json` less its `manifest`)."""
    schema = RunSummary.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "proctor run summary"
    return schema


__all__ = [
    "SUMMARY_VERSION",
    "Cost",
    "Distribution",
    "Judges",
    "RunSummary",
    "SliceRow",
    "TaskRow",
    "Violations",
    "summary_schema",
]
