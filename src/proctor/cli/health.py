"""`proctor health`: whether a suite can support a release decision (exit 0 healthy,
1 unhealthy, 2 bad input)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from proctor.cli.app import main
from proctor.cli.common import (
    DEFAULT_PATH,
    EXIT_INVALID,
    RATE,
    agent_or_exit,
    fail,
    open_store,
    run_data_or_exit,
    say,
    split_csv,
    suite_or_exit,
    write_json,
)
from proctor.cli.judges import JudgeOptions, judge_options


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--reference", "reference_ref", required=True, help="The reference agent (REF).")
@click.option("--noise-agent", "noise_ref", default=None, help="Agent of the noise floor.")
@click.option("--runs", "run_refs", multiple=True, help="Stored runs of other agents.")
@click.option("--rules", "rules_path", type=click.Path(), help="Gate rules to hold to the noise.")
@click.option("--trials", "-k", default=1, show_default=True, type=click.IntRange(min=1))
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--seeds", default=2, show_default=True, type=click.IntRange(min=1))
@click.option("--flip-threshold", default=0.1, show_default=True, type=RATE)
@click.option("--kinds", multiple=True, help="Only these mutation kinds (comma-separated).")
@click.option("--tags", multiple=True, help="Only tasks with any of these tags.")
@click.option("--suite", "suite_kind", default=None, help="Only tasks in this suite.")
@click.option("--task", "task_ids", multiple=True, help="Only these task ids.")
@click.option("--store", "store_path", default=str(DEFAULT_PATH), show_default=True)
@click.option("--no-save", is_flag=True, help="Do not keep the report in the store.")
@click.option("--json", "json_path", type=click.Path(), help="Write the report here.")
@click.option(
    "--user-model",
    "user_ref",
    default=None,
    help="A model user (as `run --user-model`): the reference plays the scenario tasks "
    "with it, a control of the simulator.",
)
@click.option(
    "--second-user-model",
    "second_user_ref",
    default=None,
    help="Another user model: the same agent on a sample with both, the simulator's noise.",
)
@click.option(
    "--user-sample",
    default=1.0,
    show_default=True,
    type=RATE,
    help="The share of scenario tasks the second user model plays (seeded by --seed).",
)
@judge_options
def health(
    paths: tuple[str, ...],
    reference_ref: str,
    noise_ref: str | None,
    run_refs: tuple[str, ...],
    rules_path: str | None,
    trials: int,
    seed: int,
    seeds: int,
    flip_threshold: float,
    kinds: tuple[str, ...],
    tags: tuple[str, ...],
    suite_kind: str | None,
    task_ids: tuple[str, ...],
    store_path: str,
    no_save: bool,
    json_path: str | None,
    user_ref: str | None,
    second_user_ref: str | None,
    user_sample: float,
    judges: JudgeOptions,
) -> None:
    """Suite health: controls, mutation score, noise floor, impossible and trivial tasks,
    simulated users, judges (`--judge`: the standing of the judge a run will use); a
    verdict per task and for the suite."""
    from rich.console import Console

    from proctor.core.documents import SpecError
    from proctor.decide.gate import load_rules
    from proctor.health.check import HealthOptions, check_health
    from proctor.health.judge_standing import NamedJudge
    from proctor.health.mutants import KINDS
    from proctor.health.stored_reports import save_health, sign_health
    from proctor.report.health_tables import print_health

    chosen = split_csv(kinds) or list(KINDS)
    unknown = sorted(set(chosen) - set(KINDS))
    if unknown:
        fail(f"unknown mutation kind {unknown[0]!r} (one of {', '.join(KINDS)})")
    try:
        rules = load_rules(rules_path) if rules_path else []
    except SpecError as exc:
        fail(exc.lines())
    loaded = suite_or_exit(paths)
    unknown = loaded.unknown(split_csv(task_ids))
    if unknown:  # a misspelt id would otherwise shrink what is checked without a word
        fail(f"no task {', '.join(map(repr, unknown))} in the suite")
    suite = loaded.select(tags=split_csv(tags), suite=suite_kind, ids=split_csv(task_ids))
    if not suite.tasks:
        fail("no task selected")
    store = None if no_save and not Path(store_path).exists() else open_store(store_path)
    runs = [run_data_or_exit(ref, store) for ref in run_refs]
    judge = None
    if judges.refs:
        panel = judges.panel(None)  # its name and fingerprint only: nothing is judged
        judge = NamedJudge(panel.name, panel.fingerprint)
    if second_user_ref is not None and user_ref is None:
        fail("--second-user-model goes with --user-model (the first of the two)")
    options = HealthOptions(
        seed=seed,
        trials=trials,
        seeds=seeds,
        flip_threshold=flip_threshold,
        kinds=chosen,
        runs=runs,
        rules=rules,
        store=store,
        judge=judge,
        policy=judges.policy(),
        user=_user(user_ref),
        second_user=_user(second_user_ref),
        user_sample=user_sample,
    )
    reference = agent_or_exit(reference_ref)
    noise = agent_or_exit(noise_ref) if noise_ref else None
    report = check_health(suite, reference, options, noise_agent=noise, progress=say).to_dict()
    if store is not None:  # signed: a gate takes only a report this store's health wrote
        report = sign_health(store, report)
    write_json(json_path, report)
    if store is not None and not no_save:
        number = save_health(store, report)
        say(f"health report #{number} kept in {store_path} (for gate --require-health)")
    print_health(report, Console())
    if report["suite_verdict"]["verdict"] != "healthy":
        sys.exit(EXIT_INVALID)


def _user(ref: str | None) -> Any:
    """The UserPlayer of a `--user-model` reference (None without one); exit 2 on a bad
    one."""
    if ref is None:
        return None
    from proctor.run.simulator import UserPlayer
    from proctor.run.usermodel import UserModelNotFound, load_user_model

    try:
        return UserPlayer(load_user_model(ref))
    except UserModelNotFound as exc:
        fail(str(exc))
