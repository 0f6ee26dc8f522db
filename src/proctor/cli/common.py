"""What every command shares: exit codes, one-line failures, opening suites and stores."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

DEFAULT_PATH = (
    ".proctor/proctor.db"  # also proctor.store.DEFAULT_PATH; kept here so --help stays light
)

EXIT_INVALID = 1
EXIT_BAD_INPUT = 2


class Finite(click.FloatRange):
    """A number option: finite (NaN and infinities refused: NaN passes every comparison,
    so a range alone lets it through) and within the range given; click's exit 2 with
    the option named otherwise. Every float option of the CLI takes one."""

    name = "number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


#: A rate or a share: a finite number from 0 to 1.
RATE = Finite(0, 1)
#: Seconds, 0 or more, finite.
SECONDS = Finite(min=0)

#: The summary's per-task failures in full: every root cause and failing check.
all_checks_option = click.option(
    "--all-checks",
    is_flag=True,
    help="Per task, every root cause and failing check, and every tag slice (default: the "
    "most frequent checks and the six weakest tag slices).",
)


def fail(lines: list[str] | str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    for line in [lines] if isinstance(lines, str) else lines:
        click.echo(line, err=True)
    sys.exit(code)


def split_csv(values: tuple[str, ...]) -> list[str]:
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def suite_or_exit(paths: tuple[str, ...]) -> Any:
    from proctor.core.documents import SpecError
    from proctor.env.suite import SuiteLoadError, load_suite

    try:
        return load_suite(list(paths))
    except SpecError as exc:
        if isinstance(exc, SuiteLoadError):
            click.echo(files_line(exc.found, exc.loaded))
        fail(exc.lines())


def files_line(found: int, loaded: int) -> str:
    """How many task files a command found and loaded: none is ever left out unsaid."""
    return f"task files: {found} found, {loaded} loaded"


def open_store(path: str, redact_path: str | None = None, *, readonly: bool = False) -> Any:
    """The store; trials written to it are redacted per `redact_path` or $PROCTOR_REDACT.

    `readonly` for commands that only read: a read-only file will do, nothing is
    migrated. A write that waits for another process's lock says so on stderr.
    """
    from proctor.store import Store, StoreError

    redactor = None if readonly else redactor_for(redact_path)
    try:
        return Store(path, redactor=redactor, readonly=readonly, on_wait=say)
    except StoreError as exc:
        fail(str(exc))


def say(line: str) -> None:
    """A line for the user on stderr (progress and waits, not results)."""
    click.echo(line, err=True)


def redactor_for(path: str | None) -> Any:
    """The Redactor of `--redact FILE`, else of $PROCTOR_REDACT, else None."""
    from proctor.interop.redact import Redactor

    try:
        return Redactor.load(path) if path else Redactor.from_env()
    except ValueError as exc:
        fail(str(exc))


# -- release decisions: compare, gate, power, export ------------------------------------


def maybe_store(path: str, *, readonly: bool = True) -> Any:
    """The store if there is one: a run reference may also be an exported file. Read-only
    unless the command writes (a judge's cache)."""
    return open_store(path, readonly=readonly) if Path(path).exists() else None


def run_data_or_exit(ref: str, store: Any) -> Any:
    from proctor.store.export import RunInputError, load_run

    try:
        return load_run(ref, store)
    except RunInputError as exc:
        fail(str(exc))


def agent_or_exit(ref: str) -> Any:
    """The agent `--agent REF` names (loaded on use, so `--help` stays fast); exit 2 when
    it cannot be found."""
    from proctor.agents import AgentNotFound, load_agent

    try:
        return load_agent(ref)
    except AgentNotFound as exc:
        fail(str(exc))


def write_json(path: str | None, data: dict[str, Any]) -> None:
    """`--json PATH`: the report as JSON, folders made as needed; nothing when not asked."""
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
