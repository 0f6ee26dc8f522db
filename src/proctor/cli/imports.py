"""`proctor import ...`: other tools' evaluation sets as proctor task files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from proctor.cli.app import main
from proctor.cli.common import fail


@main.group("import")
def import_group() -> None:
    """Turn evaluation sets of other tools into task files (all of them, or none)."""


def _domain_or_exit(name: str, out: str) -> Any:
    """The domain as `validate` will find it for the tasks written to `out`: from that
    folder up to the suite's root, the working folder when `out` is inside it (a new
    folder anywhere in a suite finds the suite's domain), else the folder above a
    `tasks/` folder or `out` itself."""
    from proctor.env.domain_finder import DomainNotFound, resolve_domain

    folder = Path(out).absolute()
    here = Path.cwd()
    outside = folder.parent if folder.name == "tasks" else folder
    root = here if here in folder.parents else outside
    try:
        return resolve_domain(name, folder / "task.yaml", root)
    except DomainNotFound as exc:
        fail(f"--domain {name}: {exc} (looked in {out} up to {root}, then as a dotted path)")


RUBRIC_DIR = click.option(
    "--rubric-dir",
    type=click.Path(),
    default=None,
    help="Also judge what the source judges with a model: write its rubrics here "
    "(outside --out) and name them in the tasks' expect.judge.",
)


def _rubric_folder(rubric_dir: str | None, out: str) -> Any:
    """The RubricFolder of `--rubric-dir` (None without it); exit 2 inside `--out`."""
    from proctor.core.documents import SpecError
    from proctor.interop.rubric_import import RubricFolder

    try:
        return RubricFolder.beside(Path(rubric_dir), Path(out)) if rubric_dir else None
    except SpecError as exc:
        fail(exc.lines())


def _import(read: Callable[[], list[Any]], out: str, source: str, rubrics: Any = None) -> None:
    """Read the tasks and write them all (with the rubrics they use), or exit 2 with
    every problem, nothing written."""
    from proctor.core.documents import SpecError
    from proctor.interop.task_import import write_tasks

    try:
        written = write_tasks(read(), Path(out), rubrics)
    except SpecError as exc:
        fail(exc.lines())
    except OSError as exc:
        fail(f"{out}: {exc}")
    click.echo(f"imported {len(written)} tasks from {source} into {out}")
    if rubrics is not None and rubrics.used:
        click.echo(f"judged on rubrics {', '.join(sorted(rubrics.used))} in {rubrics.path}")


@import_group.command("cases")
@click.argument("file", type=click.Path())
@click.option("--out", required=True, type=click.Path(), help="Folder for the task files.")
@click.option("--domain", "domain_name", required=True, help="The domain the cases run in.")
@click.option(
    "--state-map",
    "state_map_path",
    default=None,
    type=click.Path(),
    help="Where the cases' flat state keys live in the domain's state (YAML: ids, paths).",
)
def import_cases(file: str, out: str, domain_name: str, state_map_path: str | None) -> None:
    """Cases shaped like the course's dataset (case_id, user_input, initial_state,
    expected_outcome, trajectory_constraints, faults, tags)."""
    from proctor.core.documents import SpecError
    from proctor.interop.cases import import_cases as read_cases
    from proctor.interop.cases import load_state_map

    domain = _domain_or_exit(domain_name, out)
    try:
        state_map = load_state_map(Path(state_map_path)) if state_map_path else None
    except SpecError as exc:
        fail(exc.lines())
    _import(lambda: read_cases(Path(file), domain, state_map), out, file)


@import_group.command("tau2")
@click.argument("folder", type=click.Path())
@click.option("--out", required=True, type=click.Path(), help="Folder for the task files.")
@RUBRIC_DIR
def import_tau2(folder: str, out: str, rubric_dir: str | None) -> None:
    """tau2-bench's mock domain (tasks.json, db.json, user_db.json in FOLDER) as tasks of
    the domain proctor.bench.tau2:mock."""
    from proctor.interop.tau2_tasks import import_tau2 as read_tau2

    rubrics = _rubric_folder(rubric_dir, out)
    _import(lambda: read_tau2(Path(folder), rubrics), out, folder, rubrics)


@import_group.command("adk")
@click.argument("file", type=click.Path())
@click.option("--out", required=True, type=click.Path(), help="Folder for the task files.")
@click.option("--domain", "domain_name", required=True, help="The domain the cases run in.")
@click.option(
    "--match-type",
    type=click.Choice(["EXACT", "IN_ORDER", "ANY_ORDER"], case_sensitive=False),
    default=None,
    help="How expected tool calls match (default: test_config.json beside FILE, or EXACT).",
)
@RUBRIC_DIR
def import_adk(
    file: str, out: str, domain_name: str, match_type: str | None, rubric_dir: str | None
) -> None:
    """A Google ADK eval set (FILE.evalset.json or FILE.test.json)."""
    from proctor.interop.adk import import_adk as read_adk
    from proctor.interop.adk import match_type_of

    domain = _domain_or_exit(domain_name, out)
    kind = match_type_of(match_type) if match_type else None
    rubrics = _rubric_folder(rubric_dir, out)
    _import(lambda: read_adk(Path(file), domain, kind, rubrics), out, file, rubrics)
