"""The options that place work on more cores or on a Ray cluster, shared by `run` and
`regrade` (docs/architecture.md, Regrade at scale)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from proctor.cli.common import fail

_F = Callable[..., Any]


def executor_options(fn: _F) -> _F:
    """`--executor`, `--address` and `--working-dir`."""
    for option in reversed(
        [
            click.option(
                "--executor",
                "executor_name",
                type=click.Choice(["local", "ray"]),
                default="local",
                show_default=True,
                help="ray: on a Ray cluster, as Ray tasks (pip install 'proctor[ray]').",
            ),
            click.option(
                "--address", default=None, help="Ray cluster: HOST:PORT, auto or ray://HOST:PORT."
            ),
            click.option(
                "--working-dir",
                default=None,
                type=click.Path(exists=True, file_okay=False),
                help="Ship this folder (holding the suite and agent files) to the Ray cluster.",
            ),
        ]
    ):
        fn = option(fn)
    return fn


def workers_option(fn: _F) -> _F:
    """`--workers N`: grade in N local processes."""
    return click.option(
        "--workers",
        default=1,
        show_default=True,
        type=click.IntRange(min=1),
        help="Grade in this many local processes (1: in this one).",
    )(fn)


def check_executor(executor_name: str, address: str | None, working_dir: str | None) -> None:
    """Exit 2 when Ray's options are given without `--executor ray`."""
    from proctor.api import InputError
    from proctor.api.evaluation import check_executor as check

    try:
        check(executor_name, address, working_dir)
    except InputError as exc:
        fail(str(exc))


def pool_or_exit(
    workers: int, executor_name: str, address: str | None, working_dir: str | None
) -> Any:
    """The grading pool the options name (run/pool.py); exit 2 when it cannot start."""
    from proctor.run.pool import open_pool
    from proctor.run.worker_source import ExecutorError

    check_executor(executor_name, address, working_dir)
    if executor_name == "ray" and workers != 1:
        fail("--workers is for local processes: on Ray, every CPU of the cluster grades")
    try:
        return open_pool(workers, executor=executor_name, address=address, working_dir=working_dir)
    except ExecutorError as exc:
        fail(str(exc))
