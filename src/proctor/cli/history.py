"""Commands that read stored runs: runs, show, export, report, review-queue."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

from proctor.cli.app import main
from proctor.cli.common import (
    DEFAULT_PATH,
    EXIT_INVALID,
    RATE,
    Finite,
    all_checks_option,
    fail,
    maybe_store,
    open_store,
    redactor_for,
    run_data_or_exit,
    suite_or_exit,
)


@main.command()
@click.option("--store", "store_path", default=str(DEFAULT_PATH), show_default=True)
@click.option("--limit", default=20, show_default=True, type=click.IntRange(min=1))
def runs(store_path: str, limit: int) -> None:
    """List stored runs, newest first."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from proctor.core.manifest import Manifest
    from proctor.store.export import stored_summary

    if not Path(store_path).exists():
        fail(f"{store_path}: no store yet (run `proctor run` first)")
    store = open_store(store_path, readonly=True)
    table = Table(title=f"runs in {store_path}", title_justify="left")
    table.add_column("run", no_wrap=True, min_width=12)
    for col in ("created", "agent", "suite", "trials", "success", "violations", "status"):
        table.add_column(col, overflow="fold")
    unreadable = []
    for r in store.runs(limit):
        if r.get("unreadable"):
            unreadable.append(r["run_id"])
            created = time.strftime("%Y-%m-%d %H:%M", time.localtime(r["created_at"]))
            table.add_row(Text(str(r["run_id"])), created, "—", "—", "—", "—", "—", "unreadable")
            continue
        m, s = Manifest.from_json(r["manifest"]), stored_summary(r["summary"])
        rate = s.success_rate if s else None
        table.add_row(
            r["run_id"],
            time.strftime("%Y-%m-%d %H:%M", time.localtime(r["created_at"])),
            Text(f"{m.agent.name} {m.agent.version}".strip()),
            Text(f"{m.suite.name} @{m.suite.digest[:8]}" + (" (holdout)" if m.holdout else "")),
            str(s.trials) if s else "—",
            "—" if rate is None else f"{100 * rate:.1f}%",
            str(s.safety_violations.total) if s else "—",
            r["status"],
        )
    Console().print(table)
    for run_id in unreadable:
        click.echo(f"warning: run {run_id} is unreadable: {store.path} is damaged", err=True)


@main.command()
@click.argument("run_id")
@click.option("--store", "store_path", default=str(DEFAULT_PATH), show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the stored summary as JSON.")
@click.option("--task", "task_id", default=None, help="Print this task's trace instead.")
@click.option("--trial", default=None, type=click.IntRange(min=0), help="Trial number (0).")
@all_checks_option
def show(
    run_id: str,
    store_path: str,
    as_json: bool,
    task_id: str | None,
    trial: int | None,
    all_checks: bool,
) -> None:
    """Show the summary of a stored run (RUN_ID, a unique prefix, or `latest`).

    With --task (and --trial, default 0): one trial's trace, step by step, and its checks.
    """
    from rich.console import Console

    from proctor.report.terminal import print_summary
    from proctor.store import RunNotFound

    if trial is not None and task_id is None:
        fail("--trial needs --task: proctor show RUN --task ID --trial N")
    if not Path(store_path).exists():
        fail(f"{store_path}: no store yet (run `proctor run` first)")
    store = open_store(store_path, readonly=True)
    try:
        run_row = store.run(run_id)
    except RunNotFound as exc:
        fail(str(exc))
    if task_id is not None:
        _show_trace(store, run_row["run_id"], task_id, trial or 0, as_json)
        return
    stored = run_row["summary"]
    if stored is None:
        fail(f"run {run_row['run_id']} has no summary (status {run_row['status']})", EXIT_INVALID)
    if as_json:
        click.echo(json.dumps({**stored, "manifest": run_row["manifest"]}, indent=2, default=str))
        return
    from proctor.store.export import stored_summary

    summary = stored_summary(stored)
    assert summary is not None
    print_summary(summary, Console(), all_checks=all_checks)
    from proctor.core.manifest import Manifest
    from proctor.report.judge_tables import print_judges

    print_judges(Manifest.from_json(run_row["manifest"]), summary, Console())


def _show_trace(store: Any, run_id: str, task_id: str, trial: int, as_json: bool) -> None:
    """One trial's trace, readable in the terminal (or as JSON)."""
    from rich.console import Console

    from proctor.report.trace_text import print_trace
    from proctor.store import RunNotFound

    try:
        trace, _, _ = store.trace(run_id, task_id, trial)
    except RunNotFound as exc:
        fail(str(exc))
    result = next(
        r for r in store.trial_results(run_id) if r.task_id == task_id and r.trial == trial
    )
    if as_json:
        out = {**result.to_dict(), "events": [e.to_dict() for e in trace.events]}
        click.echo(json.dumps(out, indent=2, default=str))
        return
    print_trace(result, trace, Console())


@main.command()
@click.argument("run_ref")
@click.option("--out", "out_path", required=True, type=click.Path(), help="JSON lines file.")
@click.option("--store", "store_path", default=str(DEFAULT_PATH), show_default=True)
def export(run_ref: str, out_path: str, store_path: str) -> None:
    """Write a stored run (manifest, summary, trial results) to a file for compare/gate;
    a trial a model user played keeps its conversation, for `run --user-replay`."""
    from proctor.env.user import recorded_turns
    from proctor.store.export import export_run

    if not Path(store_path).exists():
        fail(f"{store_path}: no store yet (run `proctor run` first)")
    store = open_store(store_path, readonly=True)
    run_data = run_data_or_exit(run_ref, store)
    turns = {}
    if run_data.manifest.user_model is not None:
        for r in run_data.results:
            if r.trace_id:
                events = store.trace(run_data.run_id, r.task_id, r.trial)[0].events
                turns[(r.task_id, r.trial)] = recorded_turns(events)
    count = export_run(run_data, out_path, turns)
    click.echo(f"run {run_data.run_id}: {count} trials written to {out_path}")


# -- reports for people: HTML, Markdown, review queue -----------------------------------


def _review_config(sample_rate: float, seed: int, drift: float | None = None) -> Any:
    from proctor.review.queue import DEFAULT_DRIFT, ReviewConfig

    return ReviewConfig(sample_rate=sample_rate, seed=seed, drift=drift or DEFAULT_DRIFT)


_sample_rate = click.option(
    "--sample-rate",
    default=0.05,
    show_default=True,
    type=RATE,
    help="Share of the trials no rule routed that is sampled for review.",
)


@main.command()
@click.argument("run_ref")
@click.option("--html", "html_path", type=click.Path(), help="Write the HTML report here.")
@click.option("--md", "md_path", type=click.Path(), help="Write the Markdown one-pager here.")
@click.option("--baseline", default=None, help="Run or exported file to compare with.")
@click.option("--rules", "rules_path", type=click.Path(), help="Evaluate these gate rules.")
@click.option(
    "--tasks",
    "task_paths",
    multiple=True,
    type=click.Path(),
    help="The run's task files or folders, for prompts (tasks whose content is unchanged).",
)
@_sample_rate
@click.option("--review-seed", default=0, show_default=True, type=int)
@click.option(
    "--embed-limit",
    default=1000,
    show_default=True,
    type=click.IntRange(min=0),
    help="Above this many trials, embed only failed and queued traces; link the rest.",
)
@click.option(
    "--desk-url",
    default="http://127.0.0.1:8765",
    show_default=True,
    help="The review desk that traces not embedded link to.",
)
@click.option("--store", "store_path", default=str(DEFAULT_PATH), show_default=True)
@click.option(
    "--redact", "redact_path", type=click.Path(), help="Redaction config for --tasks texts."
)
def report(
    run_ref: str,
    html_path: str | None,
    md_path: str | None,
    baseline: str | None,
    rules_path: str | None,
    task_paths: tuple[str, ...],
    sample_rate: float,
    review_seed: int,
    embed_limit: int,
    desk_url: str,
    store_path: str,
    redact_path: str | None,
) -> None:
    """Write the HTML report (with every trace) and/or the Markdown one-pager of a run.

    With review desk labels for the run, both show human-adjudicated success too."""
    from proctor.api import InputError
    from proctor.api.reports import write_report
    from proctor.core.documents import SpecError
    from proctor.store.export import RunInputError, store_run

    if not html_path and not md_path:
        fail("nothing to write: pass --html PATH and/or --md PATH")
    if not Path(store_path).exists():
        fail(f"{store_path}: no store yet (run `proctor run` first)")
    suite = suite_or_exit(task_paths) if task_paths else None
    store = open_store(store_path, readonly=True)
    try:  # read once: write_report takes the run as read here
        data = store_run(store, run_ref)
    except RunInputError as exc:
        fail(str(exc))
    try:
        write_report(
            data,
            store,
            html=html_path,
            markdown=md_path,
            baseline=baseline,
            rules=rules_path,
            suite=suite,
            review=_review_config(sample_rate, review_seed),
            redactor=redactor_for(redact_path),
            embed_limit=embed_limit,
            desk_url=desk_url,
        )
    except SpecError as exc:
        fail(exc.lines())
    except InputError as exc:
        fail(str(exc))
    except ValueError as exc:  # a run without a summary
        fail(str(exc), EXIT_INVALID)
    except OSError as exc:
        fail(f"cannot write the report: {exc}")
    written = (
        [f"HTML {html_path} ({Path(html_path).stat().st_size / 1e6:.1f} MB)"] if html_path else []
    )
    written += [f"Markdown {md_path}"] if md_path else []
    click.echo(f"report of run {data.run_id}: " + "; ".join(written))


@main.command("review-queue")
@click.argument("run_ref")
@click.option("--baseline", default=None, help="Run or exported file: route flipped verdicts.")
@_sample_rate
@click.option("--seed", default=0, show_default=True, type=int, help="Sampling seed.")
@click.option(
    "--drift",
    default=0.1,
    show_default=True,
    type=Finite(0, 1, min_open=True),
    help="With --baseline: route the tasks of a slice whose success moved this much.",
)
@click.option("--store", "store_path", default=str(DEFAULT_PATH), show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the queue as JSON.")
def review_queue(
    run_ref: str,
    baseline: str | None,
    sample_rate: float,
    seed: int,
    drift: float,
    store_path: str,
    as_json: bool,
) -> None:
    """The trials of RUN a person should read, each with why (see proctor.review.queue)."""
    from proctor.decide.compare import CompareError
    from proctor.review.queue import review_queue as route

    store = maybe_store(store_path)
    run_data = run_data_or_exit(run_ref, store)
    base = run_data_or_exit(baseline, store) if baseline else None
    try:
        queue = route(run_data, base, _review_config(sample_rate, seed, drift))
    except CompareError as exc:
        fail(str(exc))
    if as_json:
        click.echo(json.dumps(queue, indent=2, default=str))
        return
    from rich.console import Console

    from proctor.report.review_table import print_queue

    print_queue(queue, Console())
