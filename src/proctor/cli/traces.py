"""Commands for traces from outside: grade, replay, export-otel."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from proctor.cli.app import main
from proctor.cli.common import (
    DEFAULT_PATH,
    EXIT_INVALID,
    RATE,
    SECONDS,
    agent_or_exit,
    all_checks_option,
    fail,
    open_store,
    redactor_for,
    suite_or_exit,
)
from proctor.cli.judges import JudgeOptions, judge_options
from proctor.cli.scale import executor_options, pool_or_exit, workers_option

# -- real traces: grade, replay, export-otel (proctor.interop) ------------------------------

_TRACE_FORMATS = (
    "auto (default), openai, otel (GenAI spans, proctor's export), openinference, "
    "inspect (Inspect AI .eval or .json logs)"
)


def _sessions(traces: str, fmt: str, map_path: str | None) -> tuple[list[Any], Any]:
    from proctor.traces.trace_files import load_sessions

    try:
        return load_sessions(traces, fmt), _mapping(map_path)
    except ValueError as exc:  # TraceInputError: one line
        fail(str(exc))


def _mapping(map_path: str | None) -> Any:
    from proctor.traces.grading import load_mapping

    return load_mapping(map_path) if map_path else None


@main.command()
@click.argument("traces", type=click.Path())
@click.option("--suite", "suite_paths", multiple=True, required=True, help="Tasks to grade by.")
@click.option("--map", "map_path", type=click.Path(), help="YAML/JSON {session id: task id}.")
@click.option("--format", "fmt", default="auto", help=_TRACE_FORMATS)
@click.option("--store", "store_path", default=str(DEFAULT_PATH), show_default=True)
@click.option("--redact", "redact_path", type=click.Path(), help="Redaction config file.")
@click.option("--max-error-rate", default=0.05, show_default=True, type=RATE)
@click.option("--json", "json_path", type=click.Path(), help="Write the summary here.")
@click.option("--quiet", "-q", is_flag=True, help="No tables.")
@all_checks_option
@workers_option
@executor_options
def grade(
    traces: str,
    suite_paths: tuple[str, ...],
    map_path: str | None,
    fmt: str,
    store_path: str,
    redact_path: str | None,
    max_error_rate: float,
    json_path: str | None,
    quiet: bool,
    all_checks: bool,
    workers: int,
    executor_name: str,
    address: str | None,
    working_dir: str | None,
) -> None:
    """Grade recorded sessions in TRACES against the tasks of --suite; stored as a run.

    A session meets its task by the task id it carries or by --map.
    """
    from rich.console import Console

    from proctor.report.terminal import print_summary
    from proctor.run.worker_source import ExecutorError
    from proctor.traces.grading import grade_sessions
    from proctor.traces.trace_files import iter_sessions

    suite = suite_or_exit(suite_paths)
    try:
        mapping = _mapping(map_path)
        sessions = iter_sessions(traces, fmt)  # streamed: graded and stored one by one
    except ValueError as exc:
        fail(str(exc))
    store = open_store(store_path, redact_path)
    with pool_or_exit(workers, executor_name, address, working_dir) as pool:
        try:
            graded = grade_sessions(
                sessions,
                suite,
                store=store,
                mapping=mapping,
                source=traces,
                fmt=fmt,
                max_error_rate=max_error_rate,
                pool=pool,
            )
        except (ValueError, ExecutorError) as exc:
            fail(str(exc))
    store.close()
    summary = graded.summary
    if json_path:
        Path(json_path).parent.mkdir(parents=True, exist_ok=True)
        out = {**summary.to_json(), "manifest": graded.manifest.to_json()}
        Path(json_path).write_text(json.dumps(out, indent=2, default=str) + "\n")
    if not quiet:
        print_summary(summary, Console(), all_checks=all_checks)
    if graded.unmatched:
        shown = ", ".join(graded.unmatched[:5]) + (" ..." if len(graded.unmatched) > 5 else "")
        click.echo(f"warning: {len(graded.unmatched)} sessions match no task: {shown}", err=True)
    click.echo(
        f"run {graded.run_id}: {summary.trials} sessions graded against "
        f"{summary.tasks} tasks, status {summary.status}; stored in {store_path}"
    )
    if summary.status == "invalid":
        sys.exit(EXIT_INVALID)


@main.command()
@click.argument("traces", type=click.Path())
@click.option("--agent", "agent_ref", required=True, help="FILE.py:NAME, MODULE:NAME, chat:MODEL")
@click.option("--suite", "suite_paths", multiple=True, help="Tasks the sessions belong to.")
@click.option("--map", "map_path", type=click.Path(), help="YAML/JSON {session id: task id}.")
@click.option("--format", "fmt", default="auto", help=_TRACE_FORMATS)
@click.option("--store", "store_path", default=str(DEFAULT_PATH), show_default=True)
@click.option("--redact", "redact_path", type=click.Path(), help="Redaction config file.")
@click.option("--timeout", "timeout_s", default=60.0, show_default=True, type=SECONDS)
@click.option("--concurrency", "-j", default=4, show_default=True, type=click.IntRange(min=1))
@click.option("--json", "json_path", type=click.Path(), help="Write the replay report here.")
@judge_options
def replay(
    traces: str,
    agent_ref: str,
    suite_paths: tuple[str, ...],
    map_path: str | None,
    fmt: str,
    store_path: str,
    redact_path: str | None,
    timeout_s: float,
    concurrency: int,
    json_path: str | None,
    judges: JudgeOptions,
) -> None:
    """Re-run an agent on the sessions in TRACES, tool calls answered from the recording.

    A call the recording lacks is a divergence; the replay is stored as a run.
    """
    from rich.console import Console
    from rich.table import Table

    from proctor.traces.replay import replay as replay_sessions

    suite = suite_or_exit(suite_paths) if suite_paths else None
    sessions, mapping = _sessions(traces, fmt, map_path)
    agent = agent_or_exit(agent_ref)
    store = open_store(store_path, redact_path)
    settings = getattr(agent, "settings", None)
    model = settings.get("model") if isinstance(settings, dict) else None
    judging = judges.judging(store, suite, model) if suite is not None else None
    try:
        done = replay_sessions(
            sessions,
            agent,
            suite=suite,
            mapping=mapping,
            store=store,
            agent_ref=agent_ref,
            timeout_s=timeout_s or None,
            concurrency=concurrency,
            judging=judging,
        )
    except ValueError as exc:
        fail(str(exc))
    store.close()
    table = Table(title=f"replay {done.run_id}", title_justify="left")
    for col in ("session", "trial", "status", "recorded", "replayed", "unrecorded", "missing"):
        table.add_column(col)
    table.add_column("diverges at")
    for s in done.sessions:
        table.add_row(
            s.session,
            f"{s.task_id}#{s.trial}",
            s.status,
            str(s.recorded),
            str(s.replayed),
            str(len(s.unrecorded)),
            str(len(s.missing)),
            "—" if s.first_divergence is None else f"call {s.first_divergence + 1}",
        )
    Console().print(table)
    if json_path:
        Path(json_path).parent.mkdir(parents=True, exist_ok=True)
        report = {"run_id": done.run_id, "sessions": [s.to_dict() for s in done.sessions]}
        Path(json_path).write_text(json.dumps(report, indent=2, default=str) + "\n")
    diverged = sum(s.diverged for s in done.sessions)
    click.echo(
        f"run {done.run_id}: {len(done.sessions)} sessions replayed, {diverged} diverged "
        f"from the recording; stored in {store_path}"
    )


@main.command("export-otel")
@click.argument("run_ref")
@click.option("--out", "out_path", type=click.Path(), help="Write OTLP JSON lines here.")
@click.option("--endpoint", help="OTLP/HTTP traces URL, e.g. http://localhost:4318/v1/traces.")
@click.option("--header", "headers", multiple=True, help="KEY=VALUE sent to the endpoint.")
@click.option(
    "--include-content", is_flag=True, help="Also arguments, results, messages, answers, state."
)
@click.option("--redact", "redact_path", type=click.Path(), help="Redaction config file.")
@click.option("--store", "store_path", default=str(DEFAULT_PATH), show_default=True)
def export_otel(
    run_ref: str,
    out_path: str | None,
    endpoint: str | None,
    headers: tuple[str, ...],
    include_content: bool,
    redact_path: str | None,
    store_path: str,
) -> None:
    """Export a stored run as OpenTelemetry spans (GenAI semantic conventions)."""
    from proctor.interop.otel_export import EndpointError, ExportError, export_run
    from proctor.store import RunNotFound

    if not Path(store_path).exists():
        fail(f"{store_path}: no store yet (run `proctor run` first)")
    pairs = [h.partition("=") for h in headers]
    if any(not sep or not key for key, sep, _ in pairs):
        fail("--header takes KEY=VALUE")
    try:
        run_id, count = export_run(
            open_store(store_path, readonly=True),
            run_ref,
            out=out_path,
            endpoint=endpoint,
            include_content=include_content,
            redactor=redactor_for(redact_path),
            headers={k: v for k, _, v in pairs} or None,
        )
    except EndpointError as exc:
        fail(str(exc), EXIT_INVALID)
    except (RunNotFound, ExportError) as exc:
        fail(str(exc))
    click.echo(f"run {run_id}: {count} spans exported to {out_path or endpoint}")
