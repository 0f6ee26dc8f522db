"""`proctor ...`: validate, schema, run, runs, show.

Exit codes: 0 done; 1 the run is invalid (too many harness errors, missing trials);
2 bad input (task files, agent reference, run id). Bad input never shows a traceback.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

import click

DEFAULT_PATH = (
    ".proctor/proctor.db"  # also proctor.store.DEFAULT_PATH; kept here so --help stays light
)

EXIT_INVALID = 1
EXIT_BAD_INPUT = 2


def _fail(lines: list[str] | str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    for line in [lines] if isinstance(lines, str) else lines:
        click.echo(line, err=True)
    sys.exit(code)


def _split(values: tuple[str, ...]) -> list[str]:
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def _load_suite(paths: tuple[str, ...]) -> Any:
    from proctor.spec import SpecError, load_suite

    try:
        return load_suite(list(paths))
    except SpecError as exc:
        _fail(exc.lines())


def _open_store(path: str, redact_path: str | None = None) -> Any:
    """The store; trials written to it are redacted per `redact_path` or $PROCTOR_REDACT."""
    from proctor.store import Store

    redactor = _redactor(redact_path)
    try:
        return Store(path, redactor=redactor)
    except Exception as exc:  # sqlite3.DatabaseError, OSError
        _fail(f"{path}: cannot open store: {exc}")


def _redactor(path: str | None) -> Any:
    """The Redactor of `--redact FILE`, else of $PROCTOR_REDACT, else None."""
    from proctor.redact import Redactor

    try:
        return Redactor.load(path) if path else Redactor.from_env()
    except ValueError as exc:
        _fail(str(exc))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="proctor")
def main() -> None:
    """Evaluate tool-using AI agents: outcome, trajectory, safety, cost, reliability."""


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--strict", is_flag=True, help="Duplicate and near-duplicate tasks are errors.")
def validate(paths: tuple[str, ...], strict: bool) -> None:
    """Check every task file under PATHS; one line per problem with file:line."""
    from proctor.spec import SpecError
    from proctor.spec.duplicates import duplicate_tasks

    suite = _load_suite(paths)
    duplicates = SpecError(duplicate_tasks(suite)).lines()
    if strict and duplicates:
        _fail(duplicates)
    for line in duplicates:
        click.echo(f"warning: {line} (an error with --strict)", err=True)
    domains = ", ".join(sorted(suite.domains))
    click.echo(
        f"ok: {len(suite.tasks)} tasks valid (domains: {domains}; suite digest {suite.digest})"
    )


@main.command()
def schema() -> None:
    """Print the JSON Schema of task files (for editors)."""
    from proctor.spec import task_schema

    click.echo(json.dumps(task_schema(), indent=2))


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--agent", "agent_ref", required=True, help="FILE.py:NAME or MODULE:NAME")
@click.option("--trials", "-k", default=1, show_default=True, type=click.IntRange(min=1))
@click.option("--concurrency", "-j", default=8, show_default=True, type=click.IntRange(min=1))
@click.option(
    "--timeout",
    "timeout_s",
    default=60.0,
    show_default=True,
    type=float,
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
@click.option("--max-error-rate", default=0.05, show_default=True, type=float)
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
    "--junit", "junit_path", default=None, type=click.Path(), help="Write JUnit XML here."
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar or tables.")
@click.option(
    "--isolation",
    type=click.Choice(["thread", "process"]),
    default="thread",
    show_default=True,
    help="process: each trial in a worker process, killed and replaced at its timeout.",
)
@click.option(
    "--executor",
    "executor_name",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="ray: trials as Ray tasks (pip install 'proctor[ray]').",
)
@click.option("--address", default=None, help="Ray cluster: auto or ray://HOST:PORT.")
@click.option(
    "--resume", "resume_id", default=None, help="Continue this interrupted run (same options)."
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
    junit_path: str | None,
    quiet: bool,
    isolation: str,
    executor_name: str,
    address: str | None,
    resume_id: str | None,
) -> None:
    """Run the tasks under PATHS with an agent, k trials each, and print the summary."""
    from rich.console import Console

    from proctor.agents import AgentNotFound, load_agent
    from proctor.gate import load_rules
    from proctor.report.terminal import print_summary
    from proctor.run import Runner
    from proctor.spec import SpecError
    from proctor.spec.loader import load_faults

    suite = _load_suite(paths)
    filters = {"tags": _split(tags), "suite": suite_kind, "split": split, "ids": _split(task_ids)}
    selected = suite.select(**filters)
    if not selected.tasks:
        _fail(f"no task matches the filters {json.dumps(filters)}")
    from proctor.scorecard import load_scorecard

    try:
        faults = load_faults(faults_path) if faults_path else []
        rules = load_rules(gate_path) if gate_path else None
        card = load_scorecard(scorecard_path) if scorecard_path else None
    except SpecError as exc:
        _fail(exc.lines())
    tools = {name for domain in selected.domains.values() for name in domain.tools}
    unknown = sorted({f.tool for f in faults} - tools)
    if unknown:
        _fail(f"{faults_path}: faults name tools no selected domain has: {', '.join(unknown)}")
    try:
        agent = load_agent(agent_ref)
    except AgentNotFound as exc:
        _fail(str(exc))
    if address is not None and executor_name != "ray":
        _fail("--address names a Ray cluster: use it with --executor ray")
    from proctor.run.executor import ExecutorError
    from proctor.run.resume import ResumeError
    from proctor.store import RunNotFound

    store = _open_store(store_path)
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
            run_id=resume_id,
            filters=filters,
            max_error_rate=max_error_rate,
            faults=faults,
            scorecard=card,
            executor=_executor(executor_name, isolation, address),
            resume=resume_id is not None,
        )
    except (ResumeError, RunNotFound, ExecutorError) as exc:
        _fail(str(exc))
    console = Console(stderr=True)
    started = time.perf_counter()
    try:
        report = _with_progress(runner, runner.remaining, console, quiet)
    except ExecutorError as exc:
        _fail(f"{exc} (run {runner.run_id} is interrupted: `--resume {runner.run_id}`)")
    elapsed = time.perf_counter() - started
    summary = report.summary
    if json_path:
        out = {**summary, "manifest": report.manifest}
        Path(json_path).parent.mkdir(parents=True, exist_ok=True)
        Path(json_path).write_text(json.dumps(out, indent=2, default=str) + "\n")
    if not quiet:
        print_summary(summary, Console())
    click.echo(
        f"run {report.run_id}: {summary['trials']} trials in {elapsed:.2f} s, status "
        f"{summary['status']}; stored in {store_path}"
        + (f"; summary in {json_path}" if json_path else "")
    )
    if junit_path:
        from proctor.report.junit import write_junit

        task_ids = [t.id for t in selected.tasks]
        write_junit(junit_path, report.run_id, selected.name, task_ids, report.results)
    if rules is not None:
        from proctor.store.export import RunData

        data = RunData(report.run_id, report.manifest, summary, report.results, summary["status"])
        if not _gate_verdict(data, rules, None, as_json=False):
            sys.exit(EXIT_INVALID)
    store.close()
    if summary["status"] == "invalid":
        sys.exit(EXIT_INVALID)


def _executor(name: str, isolation: str, address: str | None) -> Any:
    """The executor the options name; Ray trials always run in worker processes."""
    if name == "ray":
        from proctor.run.ray_executor import RayExecutor

        return RayExecutor(address)
    if isolation == "process":
        from proctor.run.process import ProcessExecutor

        return ProcessExecutor()
    from proctor.run.executor import LocalExecutor

    return LocalExecutor()


def _with_progress(runner: Any, total: int, console: Any, quiet: bool) -> Any:
    if quiet:
        return runner.run()
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (
        TextColumn("trials"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[tally]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as progress:
        bar = progress.add_task("trials", total=total, tally="")
        tally = {"passed": 0, "failed": 0, "timeout": 0, "error": 0}

        def advance(result: Any) -> None:
            tally[result.status] = tally.get(result.status, 0) + 1
            text = " ".join(f"{k} {v}" for k, v in tally.items() if v)
            progress.update(bar, advance=1, tally=text)

        return runner.run(progress=advance)


@main.command()
@click.option("--store", "store_path", default=str(DEFAULT_PATH), show_default=True)
@click.option("--limit", default=20, show_default=True)
def runs(store_path: str, limit: int) -> None:
    """List stored runs, newest first."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    if not Path(store_path).exists():
        _fail(f"{store_path}: no store yet (run `proctor run` first)")
    store = _open_store(store_path)
    table = Table(title=f"runs in {store_path}", title_justify="left")
    table.add_column("run", no_wrap=True, min_width=12)
    for col in ("created", "agent", "suite", "trials", "success", "violations", "status"):
        table.add_column(col, overflow="fold")
    for r in store.runs(limit):
        m, s = r["manifest"], r["summary"] or {}
        rate = s.get("success_rate")
        table.add_row(
            r["run_id"],
            time.strftime("%Y-%m-%d %H:%M", time.localtime(r["created_at"])),
            Text(f"{m['agent']['name']} {m['agent']['version']}".strip()),
            Text(
                f"{m['suite']['name']} @{m['suite']['digest'][:8]}"
                + (" (holdout)" if m.get("holdout") else "")
            ),
            str(s.get("trials", "—")),
            "—" if rate is None else f"{100 * rate:.1f}%",
            str((s.get("safety_violations") or {}).get("total", "—")),
            r["status"],
        )
    Console().print(table)


@main.command()
@click.argument("run_id")
@click.option("--store", "store_path", default=str(DEFAULT_PATH), show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the stored summary as JSON.")
@click.option("--task", "task_id", default=None, help="Print this task's trace instead.")
@click.option("--trial", default=None, type=click.IntRange(min=0), help="Trial number (0).")
def show(
    run_id: str, store_path: str, as_json: bool, task_id: str | None, trial: int | None
) -> None:
    """Show the summary of a stored run (RUN_ID, a unique prefix, or `latest`).

    With --task (and --trial, default 0): one trial's trace, step by step, and its checks.
    """
    from rich.console import Console

    from proctor.report.terminal import print_summary
    from proctor.store import RunNotFound

    if trial is not None and task_id is None:
        _fail("--trial needs --task: proctor show RUN --task ID --trial N")
    if not Path(store_path).exists():
        _fail(f"{store_path}: no store yet (run `proctor run` first)")
    store = _open_store(store_path)
    try:
        run_row = store.run(run_id)
    except RunNotFound as exc:
        _fail(str(exc))
    if task_id is not None:
        _show_trace(store, run_row["run_id"], task_id, trial or 0, as_json)
        return
    summary = run_row["summary"]
    if summary is None:
        _fail(f"run {run_row['run_id']} has no summary (status {run_row['status']})", EXIT_INVALID)
    if as_json:
        click.echo(json.dumps({**summary, "manifest": run_row["manifest"]}, indent=2, default=str))
        return
    print_summary(summary, Console())


def _show_trace(store: Any, run_id: str, task_id: str, trial: int, as_json: bool) -> None:
    """One trial's trace, readable in the terminal (or as JSON)."""
    from rich.console import Console

    from proctor.report.trace_text import print_trace
    from proctor.store import RunNotFound

    try:
        trace, _, _ = store.trace(run_id, task_id, trial)
    except RunNotFound as exc:
        _fail(str(exc))
    result = next(
        r for r in store.trial_results(run_id) if r.task_id == task_id and r.trial == trial
    )
    if as_json:
        out = {**result.to_dict(), "events": [e.to_dict() for e in trace.events]}
        click.echo(json.dumps(out, indent=2, default=str))
        return
    print_trace(result, trace, Console())


# -- release decisions: compare, gate, power, export ------------------------------------


def _maybe_store(path: str) -> Any:
    """The store if there is one: a run reference may also be an exported file."""
    return _open_store(path) if Path(path).exists() else None


def _run_data(ref: str, store: Any) -> Any:
    from proctor.store.export import RunInputError, load_run

    try:
        return load_run(ref, store)
    except RunInputError as exc:
        _fail(str(exc))


def _gate_verdict(run: Any, rules: list[Any], baseline: Any, *, as_json: bool) -> bool:
    """Evaluate, print (table or JSON) and return whether the gate passed."""
    from rich.console import Console

    from proctor.compare import CompareError
    from proctor.gate import Gate
    from proctor.report.decision import print_gate

    try:
        result = Gate(run, baseline).evaluate(rules)
    except CompareError as exc:
        _fail(str(exc))
    if as_json:
        click.echo(json.dumps(result, indent=2, default=str))
    else:
        print_gate(result, Console())
    return bool(result["passed"])


@main.command()
@click.argument("baseline")
@click.argument("candidate")
@click.option("--store", "store_path", default=str(DEFAULT_PATH), show_default=True)
@click.option("--margin", default=0.02, show_default=True, type=click.FloatRange(min=0))
@click.option("--resamples", default=2000, show_default=True, type=click.IntRange(min=1))
@click.option("--seed", default=0, show_default=True, type=int, help="Bootstrap seed.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
def compare(
    baseline: str,
    candidate: str,
    store_path: str,
    margin: float,
    resamples: int,
    seed: int,
    as_json: bool,
) -> None:
    """Compare two runs task by task (run ids, prefixes, `latest`, or exported files)."""
    from rich.console import Console

    from proctor.compare import CompareError, holdout_looks
    from proctor.compare import compare as compare_runs
    from proctor.report.decision import print_comparison

    store = _maybe_store(store_path)
    base, cand = _run_data(baseline, store), _run_data(candidate, store)
    looks = holdout_looks(store.runs(limit=-1), cand) if store is not None else 0
    try:
        report = compare_runs(
            base, cand, margin=margin, resamples=resamples, seed=seed, looks=looks
        )
    except CompareError as exc:
        _fail(str(exc))
    if as_json:
        click.echo(json.dumps(report, indent=2, default=str))
    else:
        print_comparison(report, Console())


@main.command()
@click.argument("run_ref", required=False)
@click.option("--rules", "rules_path", type=click.Path(), help="The gates file (YAML/JSON).")
@click.option("--baseline", default=None, help="Run or exported file for relative rules.")
@click.option("--store", "store_path", default=str(DEFAULT_PATH), show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON.")
@click.option("--list-metrics", is_flag=True, help="List every metric a rule can use.")
def gate(
    run_ref: str | None,
    rules_path: str | None,
    baseline: str | None,
    store_path: str,
    as_json: bool,
    list_metrics: bool,
) -> None:
    """Gate RUN with the rules file: exit 0 all pass, 1 a rule fails, 2 bad input."""
    from proctor.gate import list_metrics as metric_list
    from proctor.gate import load_rules
    from proctor.spec import SpecError

    if list_metrics:
        for name, meaning in metric_list():
            click.echo(f"{name:34} {meaning}")
        return
    if run_ref is None or rules_path is None:
        _fail("usage: proctor gate RUN --rules FILE [--baseline RUN] (or --list-metrics)")
    try:
        rules = load_rules(rules_path)
    except SpecError as exc:
        _fail(exc.lines())
    relative = [r for r in rules if r.kind != "test"]
    if relative and baseline is None:
        _fail(
            f"{rules_path}: {len(relative)} rule(s) compare with a baseline "
            f"({relative[0].source}); pass --baseline RUN"
        )
    store = _maybe_store(store_path)
    run_data = _run_data(run_ref, store)
    base = _run_data(baseline, store) if baseline else None
    if not _gate_verdict(run_data, rules, base, as_json=as_json):
        sys.exit(EXIT_INVALID)


@main.command()
@click.option("--baseline", "rate", required=True, type=click.FloatRange(0, 1), help="Rate now.")
@click.option("--effect", required=True, type=float, help="Change to detect (-0.05: a drop).")
@click.option("--trials", default=1, show_default=True, type=click.IntRange(min=1))
@click.option("--icc", default=0.0, show_default=True, type=click.FloatRange(0, 1))
@click.option(
    "--alpha",
    default=0.05,
    show_default=True,
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
)
@click.option(
    "--power",
    "power_",
    default=0.8,
    show_default=True,
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
)
def power(rate: float, effect: float, trials: int, icc: float, alpha: float, power_: float) -> None:
    """How many tasks two runs need to tell RATE from RATE + EFFECT apart."""
    from proctor import stats

    try:
        tasks = stats.tasks_needed(rate, effect, trials, icc=icc, alpha=alpha, power=power_)
    except ValueError as exc:
        _fail(str(exc))
    de = stats.design_effect(trials, icc)
    click.echo(
        f"{tasks} tasks per run detect {rate:.1%} -> {rate + effect:.1%} with {trials} "
        f"trials per task at {power_:.0%} power, two-sided alpha {alpha:g} "
        f"(ICC {icc:g}, design effect {de:.2f})"
    )
    if icc == 0 and trials > 1:
        click.echo(
            "note: ICC 0 treats a task's trials as independent; tasks differ in difficulty, "
            "so pass --icc (a run's summary has its estimate: `proctor show RUN --json`)"
        )


@main.command()
@click.argument("run_ref")
@click.option("--out", "out_path", required=True, type=click.Path(), help="JSON lines file.")
@click.option("--store", "store_path", default=str(DEFAULT_PATH), show_default=True)
def export(run_ref: str, out_path: str, store_path: str) -> None:
    """Write a stored run (manifest, summary, trial results) to a file for compare/gate."""
    from proctor.store.export import export_run

    if not Path(store_path).exists():
        _fail(f"{store_path}: no store yet (run `proctor run` first)")
    run_data = _run_data(run_ref, _open_store(store_path))
    count = export_run(run_data, out_path)
    click.echo(f"run {run_data.run_id}: {count} trials written to {out_path}")


# -- reports for people: HTML, Markdown, review queue -----------------------------------


def _review_config(sample_rate: float, seed: int) -> Any:
    from proctor.review import ReviewConfig

    return ReviewConfig(sample_rate=sample_rate, seed=seed)


_sample_rate = click.option(
    "--sample-rate",
    default=0.05,
    show_default=True,
    type=click.FloatRange(0, 1),
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
@click.option("--store", "store_path", default=str(DEFAULT_PATH), show_default=True)
def report(
    run_ref: str,
    html_path: str | None,
    md_path: str | None,
    baseline: str | None,
    rules_path: str | None,
    task_paths: tuple[str, ...],
    sample_rate: float,
    review_seed: int,
    store_path: str,
) -> None:
    """Write the HTML report (with every trace) and/or the Markdown one-pager of a run."""
    from proctor.compare import CompareError
    from proctor.gate import load_rules
    from proctor.report.inputs import gather
    from proctor.spec import SpecError
    from proctor.store.export import RunInputError, store_run

    if not html_path and not md_path:
        _fail("nothing to write: pass --html PATH and/or --md PATH")
    if not Path(store_path).exists():
        _fail(f"{store_path}: no store yet (run `proctor run` first)")
    try:
        rules = load_rules(rules_path) if rules_path else None
    except SpecError as exc:
        _fail(exc.lines())
    suite = _load_suite(task_paths) if task_paths else None
    store = _open_store(store_path)
    try:
        run_data = store_run(store, run_ref)
    except RunInputError as exc:
        _fail(str(exc))
    base = _run_data(baseline, store) if baseline else None
    try:
        inputs = gather(
            run_data,
            baseline=base,
            rules=rules,
            suite=suite,
            review=_review_config(sample_rate, review_seed),
        )
    except CompareError as exc:
        _fail(str(exc))
    except ValueError as exc:
        _fail(str(exc), EXIT_INVALID)
    from proctor.report.html import write_html
    from proctor.report.markdown import write_markdown

    written = []
    try:
        if html_path:
            size = write_html(
                html_path, inputs, lambda task, trial: store.trace(run_data.run_id, task, trial)[0]
            )
            written.append(f"HTML {html_path} ({size / 1e6:.1f} MB)")
        if md_path:
            write_markdown(md_path, inputs)
            written.append(f"Markdown {md_path}")
    except OSError as exc:
        _fail(f"cannot write the report: {exc}")
    click.echo(f"report of run {run_data.run_id}: " + "; ".join(written))


@main.command("review-queue")
@click.argument("run_ref")
@click.option("--baseline", default=None, help="Run or exported file: route flipped verdicts.")
@_sample_rate
@click.option("--seed", default=0, show_default=True, type=int, help="Sampling seed.")
@click.option("--store", "store_path", default=str(DEFAULT_PATH), show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the queue as JSON.")
def review_queue(
    run_ref: str,
    baseline: str | None,
    sample_rate: float,
    seed: int,
    store_path: str,
    as_json: bool,
) -> None:
    """The trials of RUN a person should read, each with why (see proctor.review)."""
    from proctor.compare import CompareError
    from proctor.review import review_queue as route

    store = _maybe_store(store_path)
    run_data = _run_data(run_ref, store)
    base = _run_data(baseline, store) if baseline else None
    try:
        queue = route(run_data, base, _review_config(sample_rate, seed))
    except CompareError as exc:
        _fail(str(exc))
    if as_json:
        click.echo(json.dumps(queue, indent=2, default=str))
        return
    from rich.console import Console

    from proctor.report.review_table import print_queue

    print_queue(queue, Console())


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
def regrade(
    run_ref: str,
    paths: tuple[str, ...],
    store_path: str,
    json_path: str | None,
    scorecard_path: str | None,
    quiet: bool,
) -> None:
    """Grade RUN's stored traces again (after a grader or expectation change) as a new run.

    The tasks and domains come from PATHS, by default the paths the run was made with.
    """
    from rich.console import Console

    from proctor.report.terminal import print_summary
    from proctor.run.regrade import RegradeError
    from proctor.run.regrade import regrade as regrade_run
    from proctor.scorecard import load_scorecard
    from proctor.spec import SpecError
    from proctor.store import RunNotFound

    if not Path(store_path).exists():
        _fail(f"{store_path}: no store yet (run `proctor run` first)")
    store = _open_store(store_path)
    try:
        source = store.run(run_ref)
        card = load_scorecard(scorecard_path) if scorecard_path else None
    except RunNotFound as exc:
        _fail(str(exc))
    except SpecError as exc:
        _fail(exc.lines())
    if not paths:
        paths = tuple(source["manifest"]["suite"].get("paths") or ())
        if not paths or not all(Path(p).exists() for p in paths):
            _fail(
                f"run {source['run_id']}'s suite paths {list(paths)} are not found here "
                "(they are relative to where it ran): pass PATHS"
            )
    suite = _load_suite(paths)
    started = time.perf_counter()
    try:
        done = regrade_run(store, source["run_id"], suite, scorecard=card)
    except RegradeError as exc:
        _fail(str(exc))
    elapsed = time.perf_counter() - started
    summary = done.summary
    if done.changed_tasks:
        listed = ", ".join(done.changed_tasks)
        click.echo(f"warning: tasks changed since the run, graded as they are now: {listed}")
    if json_path:
        out = {**summary, "manifest": done.manifest}
        Path(json_path).parent.mkdir(parents=True, exist_ok=True)
        Path(json_path).write_text(json.dumps(out, indent=2, default=str) + "\n")
    if not quiet:
        print_summary(summary, Console())
    flips = ", ".join(f"{a} -> {b}: {n}" for (a, b), n in sorted(done.flips.items()))
    rate = summary["trials"] / elapsed if elapsed > 0 else 0.0
    click.echo(
        f"run {done.run_id}: {summary['trials']} trials of run {done.source_id} regraded in "
        f"{elapsed:.2f} s ({rate:,.0f}/s); verdicts changed: {flips or 'none'}"
    )
    store.close()


# -- real traces: grade, replay, export-otel (proctor.traces, proctor.replay) ------------

_TRACE_FORMATS = "auto (default), openai, otel (GenAI spans, proctor's export), openinference"


def _sessions(traces: str, fmt: str, map_path: str | None) -> tuple[list[Any], Any]:
    from proctor.traces import TraceInputError, load_sessions
    from proctor.traces.grading import load_mapping

    try:
        return load_sessions(traces, fmt), load_mapping(map_path) if map_path else None
    except (TraceInputError, ValueError) as exc:
        _fail(str(exc))


@main.command()
@click.argument("traces", type=click.Path())
@click.option("--suite", "suite_paths", multiple=True, required=True, help="Tasks to grade by.")
@click.option("--map", "map_path", type=click.Path(), help="YAML/JSON {session id: task id}.")
@click.option("--format", "fmt", default="auto", help=_TRACE_FORMATS)
@click.option("--store", "store_path", default=str(DEFAULT_PATH), show_default=True)
@click.option("--redact", "redact_path", type=click.Path(), help="Redaction config file.")
@click.option("--max-error-rate", default=0.05, show_default=True, type=float)
@click.option("--json", "json_path", type=click.Path(), help="Write the summary here.")
@click.option("--quiet", "-q", is_flag=True, help="No tables.")
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
) -> None:
    """Grade recorded sessions in TRACES against the tasks of --suite; stored as a run.

    A session meets its task by the task id it carries or by --map.
    """
    from rich.console import Console

    from proctor.report.terminal import print_summary
    from proctor.traces.grading import grade_sessions

    suite = _load_suite(suite_paths)
    sessions, mapping = _sessions(traces, fmt, map_path)
    store = _open_store(store_path, redact_path)
    try:
        graded = grade_sessions(
            sessions,
            suite,
            store=store,
            mapping=mapping,
            source=traces,
            fmt=fmt,
            max_error_rate=max_error_rate,
        )
    except ValueError as exc:
        _fail(str(exc))
    store.close()
    summary = graded.summary
    if json_path:
        Path(json_path).parent.mkdir(parents=True, exist_ok=True)
        out = {**summary, "manifest": graded.manifest}
        Path(json_path).write_text(json.dumps(out, indent=2, default=str) + "\n")
    if not quiet:
        print_summary(summary, Console())
    if graded.unmatched:
        shown = ", ".join(graded.unmatched[:5]) + (" ..." if len(graded.unmatched) > 5 else "")
        click.echo(f"warning: {len(graded.unmatched)} sessions match no task: {shown}", err=True)
    click.echo(
        f"run {graded.run_id}: {summary['trials']} sessions graded against "
        f"{summary['tasks']} tasks, status {summary['status']}; stored in {store_path}"
    )
    if summary["status"] == "invalid":
        sys.exit(EXIT_INVALID)


@main.command()
@click.argument("traces", type=click.Path())
@click.option("--agent", "agent_ref", required=True, help="FILE.py:NAME, MODULE:NAME, chat:MODEL")
@click.option("--suite", "suite_paths", multiple=True, help="Tasks the sessions belong to.")
@click.option("--map", "map_path", type=click.Path(), help="YAML/JSON {session id: task id}.")
@click.option("--format", "fmt", default="auto", help=_TRACE_FORMATS)
@click.option("--store", "store_path", default=str(DEFAULT_PATH), show_default=True)
@click.option("--redact", "redact_path", type=click.Path(), help="Redaction config file.")
@click.option("--timeout", "timeout_s", default=60.0, show_default=True, type=float)
@click.option("--concurrency", "-j", default=4, show_default=True, type=click.IntRange(min=1))
@click.option("--json", "json_path", type=click.Path(), help="Write the replay report here.")
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
) -> None:
    """Re-run an agent on the sessions in TRACES, tool calls answered from the recording.

    A call the recording lacks is a divergence; the replay is stored as a run.
    """
    from rich.console import Console
    from rich.table import Table

    from proctor.agents import AgentNotFound, load_agent
    from proctor.replay import replay as replay_sessions

    suite = _load_suite(suite_paths) if suite_paths else None
    sessions, mapping = _sessions(traces, fmt, map_path)
    try:
        agent = load_agent(agent_ref)
    except AgentNotFound as exc:
        _fail(str(exc))
    store = _open_store(store_path, redact_path)
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
        )
    except ValueError as exc:
        _fail(str(exc))
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
    from proctor.store import RunNotFound
    from proctor.traces.otel_export import EndpointError, ExportError, export_run

    if not Path(store_path).exists():
        _fail(f"{store_path}: no store yet (run `proctor run` first)")
    pairs = [h.partition("=") for h in headers]
    if any(not sep or not key for key, sep, _ in pairs):
        _fail("--header takes KEY=VALUE")
    try:
        run_id, count = export_run(
            _open_store(store_path),
            run_ref,
            out=out_path,
            endpoint=endpoint,
            include_content=include_content,
            redactor=_redactor(redact_path),
            headers={k: v for k, _, v in pairs} or None,
        )
    except EndpointError as exc:
        _fail(str(exc), EXIT_INVALID)
    except (RunNotFound, ExportError) as exc:
        _fail(str(exc))
    click.echo(f"run {run_id}: {count} spans exported to {out_path or endpoint}")


if __name__ == "__main__":
    main()
