"""Commands that close the loop with production and test the tests: promote, monitor,
mutate, flaky."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from proctor.cli.app import main
from proctor.cli.common import (
    DEFAULT_PATH,
    EXIT_INVALID,
    RATE,
    agent_or_exit,
    fail,
    open_store,
    redactor_for,
    suite_or_exit,
    write_json,
)


@main.command()
@click.argument("run_ref")
@click.option("--task", "task_id", required=True, help="The failed trial's task id.")
@click.option("--trial", default=0, show_default=True, type=click.IntRange(min=0))
@click.option("--out", "out_dir", required=True, type=click.Path(), help="Folder to write into.")
@click.option("--suite", "suite_paths", multiple=True, help="Task files (default: the run's).")
@click.option("--id", "new_id", default=None, help="The new task's id (default TASK.TRACE8).")
@click.option("--reason", default=None, help="A reviewer's reason code for the failure.")
@click.option("--note", default="", help="The reviewer's evidence note (with --reason).")
@click.option("--store", "store_path", default=str(DEFAULT_PATH), show_default=True)
@click.option("--redact", "redact_path", type=click.Path(), help="Redaction config file.")
def promote(
    run_ref: str,
    task_id: str,
    trial: int,
    out_dir: str,
    suite_paths: tuple[str, ...],
    new_id: str | None,
    reason: str | None,
    note: str,
    store_path: str,
    redact_path: str | None,
) -> None:
    """Turn a failed trial of RUN into a minimal regression task file in --out."""
    from proctor.interop.redact import Redactor
    from proctor.loop.promote import PromoteError, ReviewNote
    from proctor.loop.promote import promote as promote_trial
    from proctor.store import RunNotFound

    if note and reason is None:
        fail("--note goes with --reason (the reviewer's reason code)")
    if not Path(store_path).exists():
        fail(f"{store_path}: no store yet (run `proctor run` or `proctor grade` first)")
    store = open_store(store_path)
    if suite_paths:
        suite = suite_or_exit(suite_paths)
    else:
        try:
            paths = store.run(run_ref)["manifest"]["suite"]["paths"]
        except RunNotFound as exc:
            fail(str(exc))
        missing = [p for p in paths if not Path(p).exists()]
        if missing:
            fail(f"the run's task files are not here ({', '.join(missing)}): give --suite PATHS")
        suite = suite_or_exit(tuple(paths))
    review = ReviewNote(reason, note) if reason is not None else None
    redactor = redactor_for(redact_path) or Redactor()
    try:
        done = promote_trial(
            store,
            run_ref,
            task_id,
            trial,
            suite,
            out_dir,
            redactor=redactor,
            review=review,
            new_id=new_id,
        )
    except PromoteError as exc:
        fail(str(exc))
    click.echo(f"wrote {done.path} (task {done.task.id})")
    if done.shim is not None:
        click.echo(f"wrote {done.shim}: it loads domain {done.task.domain!r} for the tasks there")
    click.echo(f"carried the failed expectations: {', '.join(done.carried)}")
    click.echo(f"on the original trace it fails: {', '.join(done.regrade_failures)}")
    for kept in done.kept_values:
        click.echo(f"kept (the task needs it, {kept['why']}): {kept['value']!r} in {kept['where']}")
    if done.not_carried:
        click.echo(f"not carried (no expectation states it): {', '.join(done.not_carried)}")
    for line in done.replay_differences:
        click.echo(f"warning: the promoted world answers differently: {line}", err=True)


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--agent", "agent_ref", required=True, help="The reference agent (FILE.py:NAME).")
@click.option("--trials", "-k", default=1, show_default=True, type=click.IntRange(min=1))
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--kinds", multiple=True, help="Only these mutation kinds (comma-separated).")
@click.option("--json", "json_path", type=click.Path(), help="Write the full report here.")
@click.option("--min-score", default=None, type=RATE, help="Exit 1 below this score.")
def mutate(
    paths: tuple[str, ...],
    agent_ref: str,
    trials: int,
    seed: int,
    kinds: tuple[str, ...],
    json_path: str | None,
    min_score: float | None,
) -> None:
    """How many injected defects the suite catches (mutants of a reference agent's passes)."""
    from rich.console import Console

    from proctor.cli.common import split_csv
    from proctor.health.mutants import KINDS
    from proctor.health.mutate import mutate_suite
    from proctor.report.health_tables import print_mutation

    chosen = split_csv(kinds) or list(KINDS)
    unknown = sorted(set(chosen) - set(KINDS))
    if unknown:
        fail(f"unknown mutation kind {unknown[0]!r} (one of {', '.join(KINDS)})")
    suite = suite_or_exit(paths)
    report = mutate_suite(suite, agent_or_exit(agent_ref), seed=seed, trials=trials, kinds=chosen)
    data = report.to_dict()
    write_json(json_path, data)
    print_mutation(data, Console())
    if min_score is not None and (report.score is None or report.score < min_score):
        sys.exit(EXIT_INVALID)


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--agent", "agent_ref", required=True, help="A deterministic agent (FILE.py:NAME).")
@click.option("--trials", "-k", default=1, show_default=True, type=click.IntRange(min=1))
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--json", "json_path", type=click.Path(), help="Write the report here.")
def flaky(
    paths: tuple[str, ...], agent_ref: str, trials: int, seed: int, json_path: str | None
) -> None:
    """Tasks whose verdicts or checks differ between two runs with the same seed (exit 1)."""
    from rich.console import Console

    from proctor.health.flaky import flaky_tasks
    from proctor.report.health_tables import print_flaky

    suite = suite_or_exit(paths)
    report = flaky_tasks(suite, agent_or_exit(agent_ref), seed=seed, trials=trials)
    data = report.to_dict()
    write_json(json_path, data)
    print_flaky(data, Console())
    if report.flaky_tasks:
        sys.exit(EXIT_INVALID)


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--map", "map_path", required=True, type=click.Path(), help="The mapping file.")
@click.option("--suite", "suite_paths", multiple=True, help="Tasks to grade mapped sessions by.")
@click.option("--baseline", default=None, help="An offline run (or exported file) to test drift.")
@click.option("--window", default="1d", show_default=True, help="Time window: 30m, 6h, 1d, 1w.")
@click.option("--format", "fmt", default="auto", help="Trace format (as `proctor grade`).")
@click.option("--html", "html_path", type=click.Path(), help="Write the monitor page here.")
@click.option("--json", "json_path", type=click.Path(), help="Write the figures here.")
@click.option("--store", "store_path", default=str(DEFAULT_PATH), show_default=True)
def monitor(
    paths: tuple[str, ...],
    map_path: str,
    suite_paths: tuple[str, ...],
    baseline: str | None,
    window: str,
    fmt: str,
    html_path: str | None,
    json_path: str | None,
    store_path: str,
) -> None:
    """Production traces in PATHS: signals per window and slice, drift from --baseline."""
    from rich.console import Console

    from proctor.cli.common import maybe_store, run_data_or_exit
    from proctor.core.documents import SpecError
    from proctor.loop.mapping import load_monitor_mapping
    from proctor.loop.monitor import MonitorError, MonitorInputs, window_seconds
    from proctor.loop.monitor import monitor as watch
    from proctor.loop.program import program_figures
    from proctor.report.monitor_tables import print_monitor

    try:
        mapping = load_monitor_mapping(map_path)
        window_seconds(window)
    except SpecError as exc:
        fail(exc.lines())
    except ValueError as exc:
        fail(str(exc))
    suite = suite_or_exit(suite_paths) if suite_paths else None
    store = maybe_store(store_path)
    base = run_data_or_exit(baseline, store) if baseline else None
    inputs = MonitorInputs(
        list(paths), mapping, window, suite, base, store, fmt=fmt, mapping_path=map_path
    )
    try:
        data, records = watch(inputs)
    except MonitorError as exc:
        fail(str(exc))
    suite_tags = (
        {tag for t in suite.tasks for tag in t.task.tags}
        if suite is not None
        else {tag for info in base.task_infos().values() for tag in info.tags}
        if base is not None
        else None
    )
    data["program"] = program_figures(
        session_tags=[r.tags for r in records] if suite_tags is not None else None,
        suite_tags=suite_tags,
        run_results=base.results if base is not None else (),
        summary=base.summary if base is not None else None,
        store=store,
        suite=suite,
    )
    write_json(json_path, data)
    if html_path:
        from proctor.report.monitor_html import write_monitor

        size = write_monitor(html_path, data)
        click.echo(f"monitor page {html_path} ({size / 1e3:.0f} kB)")
    print_monitor(data, Console())
