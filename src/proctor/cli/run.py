"""Commands that load suites and run them: validate, schema, run, regrade."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import click

from proctor.cli.app import main
from proctor.cli.common import (
    DEFAULT_PATH,
    EXIT_BAD_INPUT,
    EXIT_INVALID,
    RATE,
    SECONDS,
    all_checks_option,
    fail,
    files_line,
    open_store,
    run_data_or_exit,
    say,
    split_csv,
    suite_or_exit,
    write_json,
)
from proctor.cli.decide import (
    check_health_options,
    check_rules,
    gate_verdict,
    health_options,
    prices_or_exit,
    required_health,
)
from proctor.cli.judges import JudgeOptions, judge_options
from proctor.cli.profile import GroupedCommand, profile_option
from proctor.cli.scale import executor_options, pool_or_exit, workers_option


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option(
    "--strict",
    is_flag=True,
    help="Duplicate tasks are errors; near-duplicates are looked for too; a prompt plainly "
    "not in English without `language:` is warned of.",
)
def validate(paths: tuple[str, ...], strict: bool) -> None:
    """Check every task file under PATHS; one line per problem with file:line."""
    from proctor.core.documents import SpecError
    from proctor.tasks.duplicates import NEAR, duplicate_tasks

    suite = suite_or_exit(paths)
    starts = {t.id: t.domain.starting_point(t.task) for t in suite.tasks}
    found = duplicate_tasks(
        [t.loaded for t in suite.tasks], near=NEAR if strict else None, starts=starts
    )
    duplicates = SpecError(found).lines()
    if strict and duplicates:
        fail(duplicates)
    for line in duplicates:
        click.echo(f"warning: {line} (an error with --strict)", err=True)
    if strict:
        from proctor.tasks import language_id

        if not language_id.available():
            note = "note: prompt languages not checked (pip install proctor[language])"
            click.echo(note, err=True)
        for line in language_id.language_warnings([t.loaded for t in suite.tasks]):
            click.echo(f"warning: {line}", err=True)
    domains = ", ".join(sorted(suite.domains))
    click.echo(
        f"ok: {len(suite.tasks)} tasks valid (domains: {domains}; suite digest {suite.digest})"
    )
    click.echo(files_line(suite.files, suite.files))


@main.command()
@click.argument("kind", type=click.Choice(["task", "summary", "manifest"]), default="task")
def schema(kind: str) -> None:
    """Print the JSON Schema of task files (for editors), or of a run summary or manifest
    (`--json`)."""
    if kind == "summary":
        from proctor.core.summary import summary_schema

        click.echo(json.dumps(summary_schema(), indent=2))
        return
    if kind == "manifest":
        from proctor.core.manifest import manifest_schema

        click.echo(json.dumps(manifest_schema(), indent=2))
        return
    from proctor.tasks.schema import task_schema

    click.echo(json.dumps(task_schema(), indent=2))


#: `proctor run --help` in these groups; a profile's keys are the same options.
RUN_GROUPS = (
    (
        "What runs",
        ("agent_ref", "trials", "seed", "tags", "suite_kind", "split", "task_ids", "faults_path"),
    ),
    (
        "How trials run",
        ("concurrency", "timeout_s", "isolation", "executor_name", "address", "working_dir"),
    ),
    (
        "Judges and scoring",
        (
            "judge_refs",
            "judge_combine",
            "min_kappa",
            "max_false_pass",
            "scorecard_path",
            "prices_path",
            "max_error_rate",
        ),
    ),
    ("Release gate", ("gate_path", "baseline_ref", "require_health", "health_path")),
    (
        "Store and output",
        ("store_path", "resume_id", "json_path", "junit_path", "quiet", "all_checks", "profile"),
    ),
)


@main.command(cls=GroupedCommand, groups=RUN_GROUPS)
@profile_option
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--agent", "agent_ref", required=True, help="FILE.py:NAME or MODULE:NAME")
@click.option("--trials", "-k", default=1, show_default=True, type=click.IntRange(min=1))
@click.option("--concurrency", "-j", default=8, show_default=True, type=click.IntRange(min=1))
@click.option(
    "--timeout",
    "timeout_s",
    default=60.0,
    show_default=True,
    type=SECONDS,
    help="Per-trial limit in seconds (0: none).",
)
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--tags", multiple=True, help="Only tasks with any of these tags (comma-separated).")
@click.option("--suite", "suite_kind", default=None, help="Only tasks in this suite.")
@click.option("--split", type=click.Choice(["dev", "holdout"]), default=None)
@click.option("--task", "task_ids", multiple=True, help="Only these task ids.")
@click.option("--store", "store_path", default=str(DEFAULT_PATH), show_default=True)
@click.option(
    "--json", "json_path", default=None, type=click.Path(), help="Write the summary here."
)
@click.option("--max-error-rate", default=0.05, show_default=True, type=RATE)
@click.option(
    "--faults",
    "faults_path",
    default=None,
    type=click.Path(),
    help="YAML/JSON list of faults injected into every task.",
)
@click.option(
    "--scorecard",
    "scorecard_path",
    default=None,
    type=click.Path(),
    help="YAML/JSON scorecard weights and gates (default: the built-in ones).",
)
@click.option(
    "--gate", "gate_path", default=None, type=click.Path(), help="Gate the run with these rules."
)
@click.option(
    "--baseline",
    "baseline_ref",
    default=None,
    help="A stored run for --gate's baseline rules (they need one: exit 2 without).",
)
@health_options
@click.option(
    "--prices",
    "prices_path",
    default=None,
    type=click.Path(),
    help="Price table whose `currency:` the run reports costs in (default: PROCTOR_PRICES).",
)
@click.option(
    "--junit", "junit_path", default=None, type=click.Path(), help="Write JUnit XML here."
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar or tables.")
@all_checks_option
@click.option(
    "--isolation",
    type=click.Choice(["thread", "process"]),
    default="thread",
    show_default=True,
    help="process: each trial in a worker process, killed and replaced at its timeout.",
)
@executor_options
@click.option(
    "--resume", "resume_id", default=None, help="Continue this interrupted run (same options)."
)
@judge_options
@click.option(
    "--user-model",
    "user_model_ref",
    default=None,
    help="A model plays the users of tasks with a `user:` scenario: chat:MODEL?base_url=... "
    "or FILE.py:NAME.",
)
@click.option(
    "--user-cache",
    type=click.Choice(["use", "require", "off"]),
    default="use",
    show_default=True,
    help="Replay user replies cached on the conversation so far; require: a miss is an error.",
)
@click.option(
    "--user-fidelity",
    "fidelity_refs",
    multiple=True,
    help="A judge of the model user's fidelity (repeat for a panel): every failed trial and "
    "a sample of passed ones; calibrated on the user-fidelity rubric, a failure is sim_error.",
)
@click.option(
    "--fidelity-sample",
    type=RATE,
    default=0.1,
    show_default=True,
    help="The share of passed trials the fidelity judge sees (seeded by task and trial).",
)
@click.option(
    "--user-replay",
    "user_replay",
    default=None,
    type=click.Path(),
    help="An exported run (proctor export): its recorded users speak while the agent says "
    "what that run's agent said; --user-model takes over where it differs.",
)
def run(
    paths: tuple[str, ...],
    agent_ref: str,
    trials: int,
    concurrency: int,
    timeout_s: float,
    seed: int,
    tags: tuple[str, ...],
    suite_kind: str | None,
    split: str | None,
    task_ids: tuple[str, ...],
    store_path: str,
    json_path: str | None,
    max_error_rate: float,
    faults_path: str | None,
    scorecard_path: str | None,
    gate_path: str | None,
    baseline_ref: str | None,
    require_health: bool,
    health_path: str | None,
    prices_path: str | None,
    junit_path: str | None,
    quiet: bool,
    all_checks: bool,
    isolation: str,
    executor_name: str,
    address: str | None,
    working_dir: str | None,
    resume_id: str | None,
    judges: JudgeOptions,
    user_model_ref: str | None,
    user_cache: str,
    fidelity_refs: tuple[str, ...],
    fidelity_sample: float,
    user_replay: str | None,
) -> None:
    """Run the tasks under PATHS with an agent, k trials each, and print the summary.

    Options may come from a profile (`--profile`); flags given here override it.
    """
    from rich.console import Console

    from proctor.api import InputError, prepare
    from proctor.core.documents import SpecError
    from proctor.decide.gate import load_rules
    from proctor.report.judge_tables import print_judges
    from proctor.report.terminal import print_summary

    suite = suite_or_exit(paths)
    try:
        rules = load_rules(gate_path) if gate_path else None
    except SpecError as exc:
        fail(exc.lines())
    if baseline_ref is not None and rules is None:
        fail("--baseline goes with --gate")
    if require_health and rules is None:
        fail("--require-health goes with --gate")
    check_health_options(require_health, health_path)
    table = prices_or_exit(prices_path)
    if gate_path and rules is not None:
        check_rules(gate_path, rules, baseline=baseline_ref is not None, currency=table.currency)
    try:
        evaluation = prepare(
            suite,
            agent_ref,
            trials=trials,
            seed=seed,
            concurrency=concurrency,
            timeout_s=timeout_s,
            tags=split_csv(tags),
            suite=suite_kind,
            split=split,
            ids=split_csv(task_ids),
            faults=faults_path or (),
            scorecard=scorecard_path,
            prices=table,
            max_error_rate=max_error_rate,
            isolation=isolation,  # type: ignore[arg-type]
            executor=executor_name,  # type: ignore[arg-type]
            address=address,
            working_dir=working_dir,
            judges=judges.refs,
            judge_combine=judges.combine,  # type: ignore[arg-type]
            calibration=judges.policy(),
            store=store_path,
            resume=resume_id,
            user_model=user_model_ref,
            user_cache=user_cache,  # type: ignore[arg-type]
            user_fidelity=fidelity_refs,
            fidelity_sample=fidelity_sample,
            user_replay=user_replay,
            say=say,
        )
    except SpecError as exc:
        fail(exc.lines())
    except InputError as exc:
        fail(str(exc))
    store = evaluation.store
    baseline = run_data_or_exit(baseline_ref, store) if baseline_ref else None  # before running
    if not quiet:  # every input accepted: what the run is made of
        click.echo(files_line(suite.files, suite.files) + f" ({len(suite.tasks)} tasks)", err=True)
    console = Console(stderr=True)
    started = time.perf_counter()
    ids = [t.id for t in evaluation.suite.tasks]
    try:
        result = _with_progress(evaluation, console, quiet)
    except BaseException as exc:  # the run did not finish: never exit 0, and say why
        why, code = _unfinished(exc, evaluation.run_id, evaluation.recorded)
        if junit_path:
            _junit(junit_path, evaluation.run_id, evaluation.suite.name, ids, store, why)
        fail(why, code)
    elapsed = time.perf_counter() - started
    summary = result.summary
    if json_path:
        write_json(json_path, result.to_json())
    if not quiet:
        # with --gate, the gate's recommendation is the last line; without, the summary's
        print_summary(summary, Console(), all_checks=all_checks, recommendation=rules is None)
        print_judges(result.manifest, summary, Console())
    user = evaluation.runner.user
    if user is not None and user.cache is not None and not quiet:
        cache = user.cache
        click.echo(f"user cache: {cache.hits} replayed, {cache.misses} new user-model replies")
    click.echo(
        f"run {result.run_id}: {summary.trials} trials in {elapsed:.2f} s, status "
        f"{summary.status}; stored in {store_path}"
        + (f"; summary in {json_path}" if json_path else "")
    )
    if junit_path:
        from proctor.report.fmt import invalid_why

        problem = None if summary.status == "completed" else invalid_why(summary)
        _junit(junit_path, result.run_id, evaluation.suite.name, ids, store, problem)
    if rules is not None:
        data = result.data
        health = required_health(data, rules, store, health_path) if require_health else None
        code = gate_verdict(data, rules, baseline, as_json=False, health=health)
        if code:
            sys.exit(code)
    store.close()
    if summary.status != "completed":
        sys.exit(EXIT_INVALID)


def _unfinished(exc: BaseException, run_id: str, recorded: bool) -> tuple[str, int]:
    """Why a run stopped before its summary, and the exit code (never 0)."""
    from proctor.run.worker_source import ExecutorError
    from proctor.store import StoreError

    resume = (
        f"run {run_id} is interrupted: `--resume {run_id}` continues it"
        if recorded
        else "nothing was run"
    )
    if isinstance(exc, ExecutorError):
        return f"{exc} ({resume})", EXIT_BAD_INPUT
    if isinstance(exc, StoreError):
        return f"{exc}; {resume} once the store takes writes again", EXIT_INVALID
    if isinstance(exc, KeyboardInterrupt):
        return f"stopped by the user; {resume}", 130
    text = str(exc).splitlines()
    what = f"{type(exc).__name__}: {text[0] if text else ''}"
    return f"the run stopped on a harness error ({what}); {resume}", EXIT_INVALID


def _junit(
    path: str, run_id: str, suite: str, task_ids: list[str], store: Any, problem: str | None
) -> None:
    """JUnit XML for what was stored, with the run's problem (if any) as an error case."""
    from proctor.report.junit import write_junit
    from proctor.store import StoreError

    try:
        results = list(store.trial_results(run_id))
    except StoreError:
        results = []
    try:
        write_junit(path, run_id, suite, task_ids, results, problem=problem)
    except OSError as exc:
        click.echo(f"cannot write {path}: {exc}", err=True)


def _with_progress(evaluation: Any, console: Any, quiet: bool) -> Any:
    if quiet:
        return evaluation.run()
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (
        TextColumn("trials"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[tally]}"),
        TimeElapsedColumn(),
    )
    # drawn 4 times a second, not rich's 10: each drawing costs about 1 ms of CPU, which
    # at 10 a second was 1% of a core, as much as a few µs a trial of a quick run
    with Progress(*columns, console=console, transient=True, refresh_per_second=4) as progress:
        bar = progress.add_task("trials", total=evaluation.remaining, tally="")
        from proctor.core.results import TRIAL_STATUSES

        tally = dict.fromkeys(TRIAL_STATUSES, 0)

        def advance(result: Any) -> None:
            tally[result.status] = tally.get(result.status, 0) + 1
            text = " ".join(f"{k} {v}" for k, v in tally.items() if v)
            progress.update(bar, advance=1, tally=text)

        return evaluation.run(progress=advance)


@main.command()
@click.argument("run_ref")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--store", "store_path", default=str(DEFAULT_PATH), show_default=True)
@click.option(
    "--json", "json_path", default=None, type=click.Path(), help="Write the summary here."
)
@click.option(
    "--scorecard",
    "scorecard_path",
    default=None,
    type=click.Path(),
    help="YAML/JSON scorecard weights and gates (default: the built-in ones).",
)
@click.option("--quiet", "-q", is_flag=True, help="No summary tables.")
@all_checks_option
@judge_options
@workers_option
@executor_options
def regrade(
    run_ref: str,
    paths: tuple[str, ...],
    store_path: str,
    json_path: str | None,
    scorecard_path: str | None,
    quiet: bool,
    judges: JudgeOptions,
    all_checks: bool,
    workers: int,
    executor_name: str,
    address: str | None,
    working_dir: str | None,
) -> None:
    """Grade RUN's stored traces again (after a grader or expectation change) as a new run.

    The tasks and domains come from PATHS, by default the paths the run was made with;
    the judges from --judge, by default the run's own (their verdicts come from the
    judge cache: no new judge call for what was judged before).
    """
    from rich.console import Console

    from proctor.core.documents import SpecError
    from proctor.decide.scorecard import load_scorecard
    from proctor.env.sources import source_spec
    from proctor.report.judge_tables import print_judges
    from proctor.report.terminal import print_summary
    from proctor.run.regrade import RegradeError
    from proctor.run.regrade import regrade as regrade_run
    from proctor.run.worker_source import ExecutorError
    from proctor.store import RunNotFound

    if not Path(store_path).exists():
        fail(f"{store_path}: no store yet (run `proctor run` first)")
    store = open_store(store_path)
    try:
        source = store.run(run_ref)
        card = load_scorecard(scorecard_path) if scorecard_path else None
    except RunNotFound as exc:
        fail(str(exc))
    except SpecError as exc:
        fail(exc.lines())
    if not paths:
        paths = tuple(source["manifest"]["suite"].get("paths") or ())
        if not paths or not all(Path(p).exists() or source_spec(p) for p in paths):
            fail(
                f"run {source['run_id']}'s suite paths {list(paths)} are not found here "
                "(they are relative to where it ran): pass PATHS"
            )
    suite = suite_or_exit(paths)
    before = source["manifest"].get("judges") or {}
    judging = judges.judging(
        store,
        suite,
        source["manifest"].get("model"),
        judges.refs or before.get("refs", ()),
        None if judges.refs else before.get("combine"),
    )
    started = time.perf_counter()
    with pool_or_exit(workers, executor_name, address, working_dir) as pool:
        try:
            done = regrade_run(
                store, source["run_id"], suite, scorecard=card, judging=judging, pool=pool
            )
        except (RegradeError, ExecutorError) as exc:
            fail(str(exc))
    elapsed = time.perf_counter() - started
    summary = done.summary
    if done.changed_tasks:
        listed = ", ".join(done.changed_tasks)
        click.echo(f"warning: tasks changed since the run, graded as they are now: {listed}")
    if json_path:
        out = {**summary.to_json(), "manifest": done.manifest.to_json()}
        Path(json_path).parent.mkdir(parents=True, exist_ok=True)
        Path(json_path).write_text(json.dumps(out, indent=2, default=str) + "\n")
    if not quiet:
        print_summary(summary, Console(), all_checks=all_checks)
        print_judges(done.manifest, summary, Console())
    flips = ", ".join(f"{a} -> {b}: {n}" for (a, b), n in sorted(done.flips.items()))
    rate = summary.trials / elapsed if elapsed > 0 else 0.0
    click.echo(
        f"run {done.run_id}: {summary.trials} trials of run {done.source_id} regraded in "
        f"{elapsed:.2f} s ({rate:,.0f}/s); verdicts changed: {flips or 'none'}"
    )
    if judging is not None:
        cache = judging.panel.cache
        rate_text = "n/a" if cache.hit_rate is None else f"{cache.hit_rate:.0%}"
        click.echo(
            f"judge cache: {cache.hits} hits, {cache.misses} new judge calls (hit rate {rate_text})"
        )
    store.close()
