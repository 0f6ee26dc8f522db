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


def _open_store(path: str) -> Any:
    from proctor.store import Store

    try:
        return Store(path)
    except Exception as exc:  # sqlite3.DatabaseError, OSError
        _fail(f"{path}: cannot open store: {exc}")


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
    store = _open_store(store_path)
    runner = Runner(
        selected,
        agent,
        trials=trials,
        concurrency=concurrency,
        timeout_s=timeout_s or None,
        seed=seed,
        store=store,
        agent_ref=agent_ref,
        filters=filters,
        max_error_rate=max_error_rate,
        faults=faults,
        scorecard=card,
    )
    console = Console(stderr=True)
    started = time.perf_counter()
    report = _with_progress(runner, len(selected.tasks) * trials, console, quiet)
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
    store.close()
    if junit_path:
        from proctor.report.junit import write_junit

        task_ids = [t.id for t in selected.tasks]
        write_junit(junit_path, report.run_id, selected.name, task_ids, report.results)
    if rules is not None:
        from proctor.store.export import RunData

        data = RunData(report.run_id, report.manifest, summary, report.results, summary["status"])
        if not _gate_verdict(data, rules, None, as_json=False):
            sys.exit(EXIT_INVALID)
    if summary["status"] == "invalid":
        sys.exit(EXIT_INVALID)


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
def show(run_id: str, store_path: str, as_json: bool) -> None:
    """Show the summary of a stored run (RUN_ID, a unique prefix, or `latest`)."""
    from rich.console import Console

    from proctor.report.terminal import print_summary
    from proctor.store import RunNotFound

    if not Path(store_path).exists():
        _fail(f"{store_path}: no store yet (run `proctor run` first)")
    store = _open_store(store_path)
    try:
        run_row = store.run(run_id)
    except RunNotFound as exc:
        _fail(str(exc))
    summary = run_row["summary"]
    if summary is None:
        _fail(f"run {run_row['run_id']} has no summary (status {run_row['status']})", EXIT_INVALID)
    if as_json:
        click.echo(json.dumps({**summary, "manifest": run_row["manifest"]}, indent=2, default=str))
        return
    print_summary(summary, Console())


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


if __name__ == "__main__":
    main()
