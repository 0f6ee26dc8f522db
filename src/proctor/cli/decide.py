"""Commands that turn runs into decisions: compare, gate, power."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import click

from proctor.cli.app import main
from proctor.cli.common import (
    DEFAULT_PATH,
    RATE,
    Finite,
    fail,
    maybe_store,
    run_data_or_exit,
)
from proctor.cli.judges import JudgeOptions, pairwise_options


def prices_or_exit(prices_path: str | None) -> Any:
    """The price table of `--prices FILE`, else of $PROCTOR_PRICES."""
    from proctor.api import InputError
    from proctor.api.evaluation import price_table

    try:
        return price_table(prices_path)
    except InputError as exc:
        fail(str(exc))


def check_rules(rules_path: str, rules: list[Any], *, baseline: bool, currency: Any) -> None:
    """Exit 2 before anything runs when the rules cannot be evaluated as asked
    (proctor.api.decisions.check_rules)."""
    from proctor.api import InputError
    from proctor.api.decisions import check_rules as check

    try:
        check(rules_path, rules, baseline=baseline, currency=currency)
    except InputError as exc:
        fail(str(exc))


def gate_verdict(
    run: Any,
    rules: list[Any],
    baseline: Any,
    *,
    as_json: bool,
    currency: Any = None,
    health: dict[str, Any] | None = None,
) -> int:
    """Evaluate (proctor.gate), print (table or JSON, with the recommendation) and return
    the exit code the recommendation gives: 0 only when the release may proceed, so a
    passed rule set with a blocking violation (or a failed scorecard gate) still exits 1.
    `health`: the health part of the verdict (`--require-health`); a refusal fails the gate."""
    from rich.console import Console

    from proctor.api import InputError
    from proctor.api import gate as evaluate_gate
    from proctor.report.decision import print_gate

    try:
        verdict = evaluate_gate(run, rules, baseline, currency=currency, health=health)
    except InputError as exc:
        fail(str(exc))
    if as_json:
        click.echo(json.dumps(verdict.report, indent=2, default=str))
    else:
        if health is not None:
            from proctor.report.health_tables import print_health_gate

            print_health_gate(health, Console())
        print_gate(verdict.report, Console())
    return verdict.exit_code


@main.command()
@click.argument("baseline")
@click.argument("candidate")
@click.option("--store", "store_path", default=str(DEFAULT_PATH), show_default=True)
@click.option(
    "--margin",
    default=0.02,
    show_default=True,
    type=Finite(0, 1, max_open=True),
    help="Non-inferiority margin on the success rate (0.02: 2 points).",
)
@click.option("--resamples", default=2000, show_default=True, type=click.IntRange(min=1))
@click.option("--seed", default=0, show_default=True, type=int, help="Bootstrap seed.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@click.option(
    "--human", is_flag=True, help="Human-adjudicated success (review desk labels) beside."
)
@pairwise_options
def compare(
    baseline: str,
    candidate: str,
    store_path: str,
    margin: float,
    resamples: int,
    seed: int,
    as_json: bool,
    human: bool,
    judges: JudgeOptions,
    task_paths: tuple[str, ...],
) -> None:
    """Compare two runs task by task (run ids, prefixes, `latest`, or exported files);
    with --judge, also a pairwise A/B of their rubric tasks' text."""
    from rich.console import Console

    from proctor.api import InputError
    from proctor.api import compare as compare_runs
    from proctor.report.decision import print_comparison

    store = maybe_store(store_path, readonly=not judges.refs)  # judges cache their verdicts
    base, cand = run_data_or_exit(baseline, store), run_data_or_exit(candidate, store)
    try:
        report = compare_runs(
            base, cand, margin=margin, resamples=resamples, seed=seed, store=store
        )
    except InputError as exc:
        fail(str(exc))
    if human:
        if store is None:
            fail(f"--human reads the review desk's labels from the store; {store_path} is missing")
        from proctor.labels.agreement import human_figures
        from proctor.labels.ground_truth import run_truth

        report["human"] = {
            "baseline": human_figures(run_truth(store, base.run_id), base.results),
            "candidate": human_figures(run_truth(store, cand.run_id), cand.results),
        }
    if judges.refs:
        from proctor.cli.judges import pairwise_report

        report["pairwise"] = pairwise_report(baseline, candidate, store, judges, task_paths, seed)
    if as_json:
        click.echo(json.dumps(report, indent=2, default=str))
        return
    print_comparison(report, Console())
    if human:
        from proctor.report.human import human_table

        Console().print(human_table(report["human"]))
    if judges.refs:
        from proctor.report.judge_tables import print_pairwise

        print_pairwise(report["pairwise"], Console())


def health_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """`--require-health` and `--health FILE`: for `gate`, and for `run --gate`."""
    command = click.option(
        "--health",
        "health_path",
        default=None,
        type=click.Path(),
        help="With --require-health: a health report file (`proctor health --json`) "
        "instead of the store's.",
    )(command)
    return click.option(
        "--require-health",
        is_flag=True,
        help="Fail the gate unless the suite's health report (`proctor health`) is healthy "
        "for every gated slice.",
    )(command)


def check_health_options(require_health: bool, health_path: str | None) -> None:
    if health_path and not require_health:
        fail("--health goes with --require-health")


@main.command()
@click.argument("run_ref", required=False)
@click.option("--rules", "rules_path", type=click.Path(), help="The gates file (YAML/JSON).")
@click.option("--baseline", default=None, help="Run or exported file for relative rules.")
@click.option("--store", "store_path", default=str(DEFAULT_PATH), show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON.")
@click.option("--list-metrics", is_flag=True, help="List every metric a rule can use.")
@click.option(
    "--prices",
    "prices_path",
    default=None,
    type=click.Path(),
    help="Price table whose `currency:` converts *_usd metrics (default: the run's own).",
)
@health_options
def gate(
    run_ref: str | None,
    rules_path: str | None,
    baseline: str | None,
    store_path: str,
    as_json: bool,
    list_metrics: bool,
    prices_path: str | None,
    require_health: bool,
    health_path: str | None,
) -> None:
    """Gate RUN with the rules file: exit 0 when the recommendation lets the release
    proceed, 1 when it does not (a rule, a scorecard gate or a blocking violation), 2 bad
    input."""
    from proctor.core.documents import SpecError
    from proctor.core.results import Currency
    from proctor.decide.gate import load_rules
    from proctor.decide.metrics import list_metrics as metric_list

    if list_metrics:
        for name, meaning in metric_list():
            click.echo(f"{name:34} {meaning}")
        return
    if run_ref is None or rules_path is None:
        fail("usage: proctor gate RUN --rules FILE [--baseline RUN] (or --list-metrics)")
    try:
        rules = load_rules(rules_path)
    except SpecError as exc:
        fail(exc.lines())
    store = maybe_store(store_path)
    run_data = run_data_or_exit(run_ref, store)
    recorded = run_data.manifest.currency
    if prices_path or not recorded:
        currency = prices_or_exit(prices_path).currency
    else:
        currency = Currency.parse(recorded)
    check_rules(rules_path, rules, baseline=baseline is not None, currency=currency)
    base = run_data_or_exit(baseline, store) if baseline else None
    check_health_options(require_health, health_path)
    health = required_health(run_data, rules, store, health_path) if require_health else None
    code = gate_verdict(run_data, rules, base, as_json=as_json, currency=currency, health=health)
    if code:
        sys.exit(code)


def required_health(
    run: Any, rules: list[Any], store: Any, health_path: str | None
) -> dict[str, Any]:
    """The health part of a gate: the report from `--health FILE`, else the store's."""
    from proctor.api import InputError
    from proctor.api.decisions import required_health as health_part

    try:
        return health_part(run, rules, store, health_path)
    except InputError as exc:
        fail(str(exc))


@main.command()
@click.option("--baseline", "rate", required=True, type=RATE, help="Rate now.")
@click.option(
    "--effect", required=True, type=Finite(-1, 1), help="Change to detect (-0.05: a drop)."
)
@click.option("--trials", default=1, show_default=True, type=click.IntRange(min=1))
@click.option("--icc", default=0.0, show_default=True, type=RATE)
@click.option(
    "--alpha",
    default=0.05,
    show_default=True,
    type=Finite(0, 1, min_open=True, max_open=True),
)
@click.option(
    "--power",
    "power_",
    default=0.8,
    show_default=True,
    type=Finite(0, 1, min_open=True, max_open=True),
)
def power(rate: float, effect: float, trials: int, icc: float, alpha: float, power_: float) -> None:
    """Tasks two runs on the same tasks need for compare to find RATE -> RATE + EFFECT."""
    from proctor.stats import rates as stats

    try:
        tasks = stats.tasks_needed(rate, effect, trials, icc=icc, alpha=alpha, power=power_)
    except ValueError as exc:
        fail(str(exc))
    click.echo(
        f"{tasks} tasks per run (the same tasks in both) detect {rate:.1%} -> "
        f"{rate + effect:.1%} with {trials} trials per task at {power_:.0%} power, two-sided "
        f"alpha {alpha:g}, in compare's paired interval (ICC {icc:g})"
    )
    if icc == 0:
        click.echo(
            "note: ICC 0 treats every task as equally hard; tasks differ in difficulty (which "
            "pairing removes), so pass --icc (a run's summary has its estimate: "
            "`proctor show RUN --json`)"
        )
