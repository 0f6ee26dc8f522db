"""`proctor.evaluate`: tasks × agent × k trials → a RunResult, from a notebook or a test.

The `proctor run` command is a shell over this (it parses options and prints): the two
give one run for one set of options (docs/architecture.md, Life of a trial). Inputs that
cannot be used raise InputError (one line) or SpecError (task, fault and scorecard files,
`file:line` each) before any trial runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict, Unpack

from proctor.api.decisions import (
    GateVerdict,
    check_rules,
    compare,
    gate,
    required_health,
    rule_list,
)
from proctor.api.errors import InputError
from proctor.api.run_judges import Combine, fidelity_for, judging_for

if TYPE_CHECKING:
    from proctor.agents.pricing import PriceTable
    from proctor.api.decisions import RunRef
    from proctor.core.manifest import Manifest
    from proctor.core.results import TrialResult
    from proctor.core.runs import RunData
    from proctor.core.summary import RunSummary
    from proctor.decide.gate import Rule
    from proctor.decide.scorecard import ScorecardConfig
    from proctor.env.suite import Suite
    from proctor.interop.redact import Redactor
    from proctor.judge.calibration_records import CalibrationPolicy
    from proctor.review.queue import ReviewConfig
    from proctor.run.executor import Executor
    from proctor.run.runner import ProgressFn, Runner, RunReport
    from proctor.run.simulator import Replay, UserPlayer
    from proctor.store.sqlite import Store
    from proctor.tasks.models import Fault


class RunOptions(TypedDict, total=False):
    """`evaluate`'s options beyond tasks, agent, trials and seed, in `proctor run`'s groups;
    their defaults are `prepare`'s (and the command's)."""

    # which tasks
    tags: Sequence[str]
    suite: str | None
    split: str | None
    ids: Sequence[str]
    faults: Sequence[Fault] | str | Path
    # how trials run
    concurrency: int
    timeout_s: float | None
    isolation: Literal["thread", "process"]
    executor: Literal["local", "ray"]
    address: str | None
    working_dir: str | None
    resume: str | None
    # how trials are judged and summarised
    judges: Sequence[str]
    judge_combine: Combine
    calibration: CalibrationPolicy | None
    scorecard: ScorecardConfig | str | Path | None
    prices: PriceTable | str | Path | None
    max_error_rate: float
    # who plays the task's user past its scripted lines
    user_model: str | None
    user_cache: Literal["use", "require", "off"]
    user_fidelity: Sequence[str]
    fidelity_sample: float
    user_replay: str | Path | None
    # where the run goes, and what a person is told
    store: Store | str | Path
    say: Callable[[str], None]


def load_tasks(
    paths: str | Path | Sequence[str | Path],
    *,
    tags: Sequence[str] = (),
    suite: str | None = None,
    split: str | None = None,
    ids: Sequence[str] = (),
) -> Suite:
    """The tasks under `paths`, validated and bound to their domains, then only those with
    any of `tags`, in `suite`, in `split`, among `ids` (each filter when given). Raises
    SpecError (every problem, `file:line`) and InputError (no task matches, or an id is
    not in the suite)."""
    from proctor.env.suite import load_suite

    loaded = load_suite(paths if isinstance(paths, str | Path) else list(paths))
    return _selected(loaded, tags=tags, suite=suite, split=split, ids=ids)[0]


def _selected(
    loaded: Suite,
    *,
    tags: Sequence[str],
    suite: str | None,
    split: str | None,
    ids: Sequence[str],
) -> tuple[Suite, dict[str, Any]]:
    """The selected tasks and the filters as the manifest records them."""
    filters = {"tags": list(tags), "suite": suite, "split": split, "ids": list(ids)}
    unknown = loaded.unknown(ids)
    if unknown:  # a misspelt id would otherwise shrink the run without a word
        raise InputError(f"no task {', '.join(map(repr, unknown))} in the suite")
    selected = loaded.select(tags=tags, suite=suite, split=split, ids=ids)
    if not selected.tasks:
        raise InputError(f"no task matches the filters {json.dumps(filters)}")
    return selected, filters


def check_executor(name: str, address: str | None, working_dir: str | None) -> None:
    """Ray's options go with the Ray executor only (InputError otherwise)."""
    if (address is not None or working_dir is not None) and name != "ray":
        raise InputError(
            "--address and --working-dir are for a Ray cluster: use them with --executor ray"
        )


def _executor(name: str, isolation: str, address: str | None, working_dir: str | None) -> Executor:
    """The executor the options name; Ray trials always run in worker processes."""
    check_executor(name, address, working_dir)
    if name == "ray":
        from proctor.run.ray_executor import RayExecutor

        return RayExecutor(address, working_dir=working_dir)
    if isolation == "process":
        from proctor.run.process import ProcessExecutor

        return ProcessExecutor()
    from proctor.run.executor import LocalExecutor

    return LocalExecutor()


def price_table(prices: str | Path | None) -> PriceTable:
    """The price table of `prices`, else of $PROCTOR_PRICES (InputError when unreadable)."""
    from proctor.agents.pricing import PriceTable

    try:
        return PriceTable.load(prices) if prices else PriceTable.from_env()
    except ValueError as exc:
        raise InputError(str(exc)) from None


def _open_store(path: str | Path, say: Callable[[str], None]) -> Store:
    """The store at `path` (`:memory:`: one in memory); trials written to it are redacted
    per $PROCTOR_REDACT, and a write waiting for another process's lock is said."""
    from proctor.interop.redact import Redactor
    from proctor.store import Store, StoreError

    try:
        return Store(path, redactor=Redactor.from_env(), on_wait=say)
    except (StoreError, ValueError) as exc:
        raise InputError(str(exc)) from None


@dataclass
class RunResult:
    """A finished run: its manifest, summary and trials, in the store it was written to.

    The summary is what `proctor run --json` writes (with the manifest beside it); the
    trials are read back from the store when first asked for.
    """

    run_id: str
    manifest: Manifest
    summary: RunSummary
    store: Store = field(repr=False)
    suite: Suite | None = field(default=None, repr=False)
    _report: RunReport | None = field(default=None, repr=False)

    @property
    def status(self) -> str:
        """`completed`, or `invalid` when too many trials errored (the summary says why)."""
        return str(self.summary.status)

    @property
    def trials(self) -> list[TrialResult]:
        if self._report is None:
            from proctor.store.export import store_run

            return store_run(self.store, self.run_id).results
        return self._report.results

    @property
    def data(self) -> RunData:
        """The run as compare, gates and reports read it."""
        from proctor.core.runs import RunData

        return RunData(self.run_id, self.manifest, self.summary, self.trials, self.status)

    def to_json(self) -> dict[str, Any]:
        """The summary with the manifest beside it (`proctor run --json`)."""
        return {**self.summary.to_json(), "manifest": self.manifest.to_json()}

    def gate(
        self,
        rules: Sequence[Rule] | str | Path,
        baseline: RunRef | None = None,
        *,
        require_health: bool = False,
        health_report: str | Path | None = None,
    ) -> GateVerdict:
        """This run through the gate's rules (a list, or a gates file); baseline-relative
        rules need `baseline`. `require_health`: the suite's health report (the store's,
        or `health_report`) must be healthy for every gated slice."""
        loaded = rule_list(rules)
        data = self.data
        health = (
            required_health(data, loaded, self.store, health_report) if require_health else None
        )
        base = None if baseline is None else _data(baseline, self.store)
        return gate(data, loaded, base, health=health)

    def compare(self, baseline: RunRef, **options: Any) -> dict[str, Any]:
        """This run (the candidate) against `baseline`, task by task: `proctor compare`'s
        report (options: margin, resamples, seed)."""
        return compare(_data(baseline, self.store), self.data, **options)

    def report(
        self,
        html: str | Path | None = None,
        markdown: str | Path | None = None,
        *,
        baseline: RunRef | None = None,
        rules: Sequence[Rule] | str | Path | None = None,
        review: ReviewConfig | None = None,
        redactor: Redactor | None = None,
        embed_limit: int | None = None,
        desk_url: str | None = None,
    ) -> list[Path]:
        """Write the HTML report (with every trace) and/or the Markdown one-pager; returns
        the paths written. The report `proctor report` writes (`api.reports.write_report`,
        which says what the options do)."""
        from proctor.api.reports import write_report

        base = None if baseline is None else _data(baseline, self.store)
        return write_report(
            self.data,
            self.store,
            html=html,
            markdown=markdown,
            baseline=base,
            rules=rules,
            suite=self.suite,
            review=review,
            redactor=redactor,
            embed_limit=embed_limit,
            desk_url=desk_url,
        )


def _data(ref: RunRef, store: Store | None) -> RunData:
    from proctor.api.decisions import run_data

    return run_data(ref, store)


@dataclass
class Evaluation:
    """A run ready to start: every input checked, the trials not run yet.

    `proctor.evaluate` is `prepare(...).run()`; the CLI keeps the Evaluation to say which
    run to resume when one stops part way.
    """

    runner: Runner
    store: Store
    suite: Suite

    @property
    def run_id(self) -> str:
        return self.runner.run_id

    @property
    def recorded(self) -> bool:
        """The run is in the store: an interrupted one can be resumed."""
        return self.runner.recorded

    @property
    def remaining(self) -> int:
        """The trials this run will execute."""
        return self.runner.remaining

    def run(self, progress: ProgressFn | None = None) -> RunResult:
        """Run the trials (`progress` is told of each as it is stored)."""
        report = self.runner.run(progress)
        return RunResult(
            report.run_id, report.manifest, report.summary, self.store, self.suite, report
        )


def prepare(
    tasks: str | Path | Sequence[str | Path] | Suite,
    agent: Any,
    *,
    trials: int = 1,
    seed: int = 0,
    concurrency: int = 8,
    timeout_s: float | None = 60.0,
    tags: Sequence[str] = (),
    suite: str | None = None,
    split: str | None = None,
    ids: Sequence[str] = (),
    faults: Sequence[Fault] | str | Path = (),
    scorecard: ScorecardConfig | str | Path | None = None,
    prices: PriceTable | str | Path | None = None,
    max_error_rate: float = 0.05,
    isolation: Literal["thread", "process"] = "thread",
    executor: Literal["local", "ray"] = "local",
    address: str | None = None,
    working_dir: str | None = None,
    judges: Sequence[str] = (),
    judge_combine: Combine = "mean",
    calibration: CalibrationPolicy | None = None,
    store: Store | str | Path = ":memory:",
    resume: str | None = None,
    user_model: str | None = None,
    user_cache: Literal["use", "require", "off"] = "use",
    user_fidelity: Sequence[str] = (),
    fidelity_sample: float = 0.1,
    user_replay: str | Path | None = None,
    say: Callable[[str], None] = lambda line: None,
) -> Evaluation:
    """Check every input and build the run `evaluate` makes (see there)."""
    from proctor.agents import AgentNotFound, load_agent
    from proctor.agents.pricing import PriceTable
    from proctor.decide.scorecard import ScorecardConfig, load_scorecard
    from proctor.env.suite import Suite, load_suite
    from proctor.run import Runner
    from proctor.run.resume import ResumeError
    from proctor.run.worker_source import ExecutorError
    from proctor.store import RunNotFound, Store
    from proctor.tasks.loader import load_faults

    try:  # first: process workers' forkserver starts while the suite and agent load
        run_executor = _executor(executor, isolation, address, working_dir)
    except ExecutorError as exc:
        raise InputError(str(exc)) from None
    if isinstance(tasks, Suite):
        loaded = tasks
    else:
        loaded = load_suite(tasks if isinstance(tasks, str | Path) else list(tasks))
    selected, filters = _selected(loaded, tags=tags, suite=suite, split=split, ids=ids)
    faults_source = str(faults) if isinstance(faults, str | Path) else "faults"
    fault_list = load_faults(faults) if isinstance(faults, str | Path) else list(faults)
    card = load_scorecard(scorecard) if isinstance(scorecard, str | Path) else scorecard
    tools = {name for domain in selected.domains.values() for name in domain.tools}
    unknown = sorted({f.tool for f in fault_list} - tools)
    if unknown:
        raise InputError(
            f"{faults_source}: faults name tools no selected domain has: {', '.join(unknown)}"
        )
    agent_ref = agent if isinstance(agent, str) else ""
    if isinstance(agent, str):
        try:
            agent = load_agent(agent)
        except AgentNotFound as exc:
            raise InputError(str(exc)) from None
    table = prices if isinstance(prices, PriceTable) else price_table(prices)
    currency = table.currency
    if isinstance(card, ScorecardConfig):
        where = str(scorecard) if isinstance(scorecard, str | Path) else "scorecard"
        check_rules(where, list(card.gates), baseline=True, currency=currency)
    if not isinstance(store, Store):
        store = _open_store(store, say)
    settings = getattr(agent, "settings", None)
    agent_model = settings.get("model") if isinstance(settings, dict) else None
    judging = judging_for(
        store,
        selected,
        agent_model,
        judges,
        combine=judge_combine,
        policy=calibration,
        say=say,
    )
    user = _user_player(user_model, user_cache, store, executor, isolation, user_replay)
    if user_fidelity and user is None:
        raise InputError("--user-fidelity judges a model user: it goes with --user-model")
    fidelity = fidelity_for(store, user_fidelity, fidelity_sample, policy=calibration, say=say)
    scenarios = sum(t.task.user.scenario for t in selected.tasks)
    if scenarios and user is None:
        say(
            f"note: {scenarios} tasks have a `user:` scenario but no --user-model: their "
            "users say only their scripted lines"
        )
    try:
        runner = Runner(
            selected,
            agent,
            trials=trials,
            concurrency=concurrency,
            timeout_s=timeout_s or None,
            seed=seed,
            store=store,
            agent_ref=agent_ref,
            run_id=resume,
            filters=filters,
            max_error_rate=max_error_rate,
            faults=fault_list,
            scorecard=card,
            currency=currency,
            executor=run_executor,
            resume=resume is not None,
            judging=judging,
            user=user,
            fidelity=fidelity,
        )
    except (ResumeError, RunNotFound, ExecutorError) as exc:
        raise InputError(str(exc)) from None
    return Evaluation(runner, store, selected)


def _user_player(
    ref: str | None,
    cache: str,
    store: Store,
    executor: str,
    isolation: str,
    replay: str | Path | None = None,
) -> UserPlayer | None:
    """The run's model user (None without a `user_model` reference), replaying an export's
    recorded users first when `replay` names one; InputError for a bad reference or
    file, or an executor a model user cannot run on."""
    if ref is None:
        if replay is not None:
            raise InputError("--user-replay needs --user-model: the model that takes over")
        return None
    if executor != "local" or isolation != "thread":
        raise InputError("--user-model runs with the local executor and thread isolation only")
    from proctor.run.simulator import UserPlayer
    from proctor.run.usercache import CacheMode, UserCache
    from proctor.run.usermodel import UserModelNotFound, load_user_model

    try:
        model = load_user_model(ref)
    except UserModelNotFound as exc:
        raise InputError(str(exc)) from None
    recorded = None if replay is None else _replay(replay)
    if cache == "off":
        return UserPlayer(model, replay=recorded)
    mode: CacheMode = "require" if cache == "require" else "use"
    return UserPlayer(model, UserCache(store, mode), replay=recorded)


def _replay(path: str | Path) -> Replay:
    """The recorded users of an export (`proctor export`); InputError naming the file."""
    from proctor.run.simulator import Replay
    from proctor.store.export import RunInputError, read_user_turns

    try:
        run, turns = read_user_turns(path)
        return Replay.of(run.run_id, turns)
    except RunInputError as exc:
        raise InputError(f"--user-replay: {exc}") from None
    except ValueError as exc:
        raise InputError(f"--user-replay: {path}: {exc}") from None


def evaluate(
    tasks: str | Path | Sequence[str | Path] | Suite,
    agent: Any,
    trials: int = 1,
    seed: int = 0,
    *,
    progress: ProgressFn | None = None,
    **options: Unpack[RunOptions],
) -> RunResult:
    """Run every task `trials` times with `agent` and summarise: the run `proctor run`
    makes with the same options.

    `tasks`: task files or folders (or a Suite from `load_tasks`); `agent`: an agent, or a
    reference (`FILE.py:NAME`, `MODULE:NAME`, `chat:MODEL`). Options, with `proctor run`'s
    defaults: concurrency, timeout_s (None: no limit), tags/suite/split/ids (filters),
    faults, scorecard, prices, max_error_rate, isolation (`thread` | `process`), executor
    (`local` | `ray`), address, working_dir, judges, judge_combine, calibration, user_model
    and user_cache (a model plays the user), user_fidelity (judges of how faithfully it
    played, proctor.run.fidelity) and fidelity_sample (the share of passed trials they
    judge besides every failed one), user_replay (an export whose recorded users speak
    first), store (a Store or a path; by default in
    memory), resume (a run id), say (notes for a person).
    """
    return prepare(tasks, agent, trials=trials, seed=seed, **options).run(progress)
