"""`proctor review serve | add-reviewer | remove-reviewer | list-reviewers | export`: the
review desk (proctor.review.server)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import click

from proctor.cli.app import main
from proctor.cli.common import DEFAULT_PATH, RATE, Finite, fail, open_store, run_data_or_exit

DEFAULT_URL = "http://127.0.0.1:8765"
#: What the desk imports, as (module, package to install).
_EXTRA = (("starlette", "starlette"), ("uvicorn", "uvicorn"), ("python_multipart", "multipart"))


def _need_extra() -> None:
    missing = [
        name
        for name, old in _EXTRA
        if importlib.util.find_spec(name) is None and importlib.util.find_spec(old) is None
    ]
    if missing:
        fail(
            f"the review desk needs {', '.join(missing)}: "
            "pip install 'proctor[review]' (the `review` extra)"
        )


def _existing_store(path: str) -> Any:
    if not Path(path).exists():
        fail(f"{path}: no store yet (run `proctor run` first)")
    return open_store(path)


@main.group()
def review() -> None:
    """The review desk: people label trials in a browser (the `review` extra)."""


@review.command()
@click.option("--store", "store_path", default=str(DEFAULT_PATH), show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8765, show_default=True, type=click.IntRange(1, 65535))
@click.option(
    "--allow-remote", is_flag=True, help="Allow a --host other than loopback (warns: exposed)."
)
@click.option("--run", "runs", multiple=True, help="Queue this run's review items (repeatable).")
@click.option("--baseline", default=None, help="Route flips, slice drift and grader changes.")
@click.option("--pairs", is_flag=True, help="With --baseline: blinded pairs of trials.")
@click.option("--sample-rate", default=0.05, show_default=True, type=RATE)
@click.option("--drift", default=0.1, show_default=True, type=Finite(0, 1, min_open=True))
@click.option(
    "--seed",
    default=None,
    type=int,
    help="Seed of the sample, the doubles and the pairs' order (default: sample 0, the "
    "pairs' order from the desk's secret seed).",
)
@click.option("--double-share", type=RATE, help="Share labelled twice (0.2).")
@click.option("--config", "config_path", type=click.Path(), help="Rubric and settings (YAML).")
@click.option("--tasks", "task_paths", multiple=True, type=click.Path(), help="Task files.")
def serve(
    store_path: str,
    host: str,
    port: int,
    allow_remote: bool,
    runs: tuple[str, ...],
    baseline: str | None,
    pairs: bool,
    sample_rate: float,
    drift: float,
    seed: int | None,
    double_share: float | None,
    config_path: str | None,
    task_paths: tuple[str, ...],
) -> None:
    """Serve the review desk on the store (http://127.0.0.1:8765 by default)."""
    _need_extra()
    from proctor.core.documents import SpecError
    from proctor.decide.compare import CompareError
    from proctor.labels.desk_settings import DeskSettings, load_settings
    from proctor.review.assignment import enqueue
    from proctor.review.queue import ReviewConfig, review_queue
    from proctor.review.server import LOOPBACK_NAMES, create_app, is_loopback
    from proctor.review.server import serve as run_server

    if not is_loopback(host):
        if not allow_remote:
            fail(
                f"--host {host}: not a loopback address, so the desk would be reachable from "
                "other machines; pass --allow-remote to do that on purpose"
            )
        click.echo(
            f"warning: serving on {host}: anyone who can reach port {port} can try sign-in "
            "links, and the desk speaks plain HTTP (put it behind TLS)"
            + ("; any host name is answered" if host in ("0.0.0.0", "::") else ""),
            err=True,
        )
    if pairs and baseline is None:
        fail("--pairs needs --baseline RUN: a blinded pair is a baseline and a candidate trial")
    try:
        settings = load_settings(config_path) if config_path else DeskSettings()
    except SpecError as exc:
        fail(exc.lines())
    if double_share is not None:
        settings = settings.model_copy(update={"double_share": double_share})
    store = _existing_store(store_path)
    base = run_data_or_exit(baseline, store) if baseline else None
    config = ReviewConfig(sample_rate=sample_rate, seed=seed or 0, drift=drift)
    for ref in runs:
        run = run_data_or_exit(ref, store)
        try:
            queue = review_queue(run, base, config)
        except CompareError as exc:
            fail(str(exc))
        added, items = enqueue(
            store,
            run,
            queue,
            double_share=settings.double_share,
            seed=seed,
            baseline=base if pairs else None,
        )
        twice = sum(item.needed == 2 for item in items)
        kind = "blinded pairs" if pairs else "items"
        click.echo(
            f"run {run.run_id}: {len(items)} {kind} routed ({added} new), {twice} for two reviewers"
        )
    # bound to every address, the desk cannot know the names it is reached by
    hosts = ["*"] if host in ("0.0.0.0", "::") else sorted({*LOOPBACK_NAMES, host})
    app = create_app(store_path, settings, task_paths, hosts)
    url_host = f"[{host}]" if ":" in host else host
    click.echo(f"review desk on http://{url_host}:{port} (rubric {settings.rubric_version})")
    click.echo("a reviewer signs in with the link `proctor review add-reviewer NAME` prints")
    sys.stdout.flush()
    run_server(app, host, port)


@review.command("add-reviewer")
@click.argument("name")
@click.option("--adjudicator", is_flag=True, help="May give final labels on disagreements.")
@click.option("--url", default=DEFAULT_URL, show_default=True, help="Where the desk is served.")
@click.option(
    "--link-hours",
    default=72,
    show_default=True,
    type=click.IntRange(1, 24 * 366),
    help="How long the sign-in link works.",
)
@click.option("--store", "store_path", default=str(DEFAULT_PATH), show_default=True)
def add_reviewer(name: str, adjudicator: bool, url: str, link_hours: int, store_path: str) -> None:
    """Add a reviewer (or give them a new link) and print their personal sign-in link."""
    from proctor.review.auth import add_reviewer as register

    store = _existing_store(store_path)
    try:
        link, new = register(store, name, url, adjudicator=adjudicator, link_hours=link_hours)
    except ValueError as exc:
        fail(str(exc))
    role = "adjudicator" if adjudicator else "reviewer"
    did = "added" if new else "given a new link (the old one and their sessions end)"
    click.echo(
        f"{role} {name} {did}; their personal sign-in link (shown once, works {link_hours} h):"
    )
    click.echo(link)


@review.command("remove-reviewer")
@click.argument("name")
@click.option("--store", "store_path", default=str(DEFAULT_PATH), show_default=True)
def remove_reviewer(name: str, store_path: str) -> None:
    """Take a reviewer off the desk: link and sessions end, unlabelled items go back."""
    from proctor.store import desk

    store = _existing_store(store_path)
    desk.migrate(store)
    if not desk.remove_reviewer(store, name):
        fail(f"no reviewer {name[:60]!r} on the desk (`proctor review list-reviewers`)")
    click.echo(
        f"reviewer {name} removed: their link and sessions no longer work, their unlabelled "
        "items are back in the queue, their labels stay"
    )


@review.command("list-reviewers")
@click.option("--store", "store_path", default=str(DEFAULT_PATH), show_default=True)
def list_reviewers(store_path: str) -> None:
    """The desk's reviewers: role, whether their link still works, labels, sessions."""
    import time

    from proctor.store import desk

    store = _existing_store(store_path)
    desk.migrate(store)
    rows = desk.reviewers(store)
    if not rows:
        click.echo("no reviewers yet: `proctor review add-reviewer NAME` adds one")
        return
    now = time.time()

    def when(at: float) -> str:
        return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at))

    click.echo(f"{'name':<40} {'role':<11} {'link':<32} {'items labelled':>14} {'sessions':>8}")
    for r in rows:
        if r.removed_at is not None:
            link = f"removed {when(r.removed_at)}"
        elif r.link_expires_at is None or r.link_expires_at <= now:
            link = "expired (add-reviewer again)"
        else:
            link = f"works until {when(r.link_expires_at)}"
        role = "adjudicator" if r.adjudicator else "reviewer"
        click.echo(f"{r.name:<40} {role:<11} {link:<32} {r.labels:>14} {r.sessions:>8}")


@review.command("export")
@click.argument("run_ref")
@click.option("--out", "out_path", required=True, type=click.Path(), help=".csv or .jsonl")
@click.option(
    "--slice-by",
    default="risk",
    show_default=True,
    type=click.Choice(["risk", "split", "suite", "tag"]),
    help="What the `slice` column holds.",
)
@click.option("--final", is_flag=True, help="One row per trial: its ground truth.")
@click.option("--store", "store_path", default=str(DEFAULT_PATH), show_default=True)
def export_labels(run_ref: str, out_path: str, slice_by: str, final: bool, store_path: str) -> None:
    """Write RUN's labels for `proctor calibrate` (item, label, labeller, slice, ...)."""
    from proctor.labels.ground_truth import (
        LabelError,
        export_rows,
        run_truth,
        slice_column,
        write_labels,
    )
    from proctor.store import desk

    store = _existing_store(store_path)
    run = run_data_or_exit(run_ref, store)
    desk.migrate(store)
    truth = run_truth(store, run.run_id)
    rows = export_rows(
        truth, slice_column(run.summary.task_infos() if run.summary else {}, slice_by), final=final
    )
    try:
        write_labels(out_path, rows)
    except (LabelError, OSError) as exc:
        fail(str(exc))
    click.echo(
        f"run {run.run_id}: {len(rows)} labels of {len({r['item'] for r in rows})} trials "
        f"written to {out_path}; {len(truth.final)} trials with ground truth, "
        f"{len(truth.disagreements)} awaiting adjudication, "
        f"{len(truth.flagged)} tasks flagged as ambiguous or broken (left out)"
    )
