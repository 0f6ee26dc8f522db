"""Judges on the command line: `proctor calibrate`, and the `--judge` options that
`run`, `regrade` and `compare` share."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from proctor.cli.app import main
from proctor.cli.common import DEFAULT_PATH, RATE, Finite, fail, open_store, say


@dataclass(frozen=True)
class JudgeOptions:
    refs: tuple[str, ...]
    combine: str
    min_kappa: float
    max_false_pass: float
    min_items: int = 50

    def policy(self) -> Any:
        from proctor.judge.calibration_records import CalibrationPolicy

        return CalibrationPolicy(self.min_kappa, self.max_false_pass, min_items=self.min_items)

    def panel(self, store: Any, refs: Sequence[str] | None = None) -> Any:
        """The panel of the references (exit 2 on a bad one), its cache in `store`."""
        from proctor.judge.cache import JudgeCache
        from proctor.judge.judge_refs import JudgeNotFound, load_panel

        try:
            return load_panel(list(refs or self.refs), self.combine, JudgeCache(store))  # type: ignore[arg-type]
        except JudgeNotFound as exc:
            fail(str(exc))

    def judging(
        self,
        store: Any,
        suite: Any,
        agent_model: str | None,
        refs: Sequence[str] = (),
        combine: str | None = None,
    ) -> Any:
        """The Judging of a run over `suite` (proctor.api.run_judges); notes go to stderr,
        a bad judge reference exits 2."""
        from proctor.api import InputError
        from proctor.api.run_judges import judging_for

        try:
            return judging_for(
                store,
                suite,
                agent_model,
                list(refs or self.refs),
                combine=combine or self.combine,  # type: ignore[arg-type]
                policy=self.policy(),
                say=say,
            )
        except InputError as exc:
            fail(str(exc))


def _with_judges(fn: Callable[..., Any], judge_help: str) -> Callable[..., Any]:
    """`--judge` and `--judge-combine` (and what else decorates `fn`) handed to the command
    as one `judges: JudgeOptions`; the calibration thresholds when the command has them."""

    @click.option("--judge", "judge_refs", multiple=True, help=judge_help)
    @click.option(
        "--judge-combine",
        type=click.Choice(["mean", "majority"]),
        default="mean",
        show_default=True,
        help="How an ensemble's verdicts combine.",
    )
    @functools.wraps(fn)
    def wrapper(*args: Any, judge_refs: tuple[str, ...], judge_combine: str, **kwargs: Any) -> Any:
        kappa, false_pass = kwargs.pop("min_kappa", 0.6), kwargs.pop("max_false_pass", 0.1)
        options = JudgeOptions(
            judge_refs, judge_combine, kappa, false_pass, kwargs.pop("min_items", 50)
        )
        return fn(*args, judges=options, **kwargs)

    return wrapper


def judge_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Adds `--judge`, `--judge-combine`, `--min-kappa`, `--max-false-pass`, `--min-items`."""
    calibrated = click.option(
        "--min-kappa",
        default=0.6,
        show_default=True,
        type=Finite(-1, 1),
        help="Calibration a judge needs before its checks count: kappa's 95% lower bound at least.",
    )(
        click.option(
            "--max-false-pass",
            default=0.10,
            show_default=True,
            type=RATE,
            help="... the false-pass rate's 95% upper bound at most.",
        )(
            click.option(
                "--min-items",
                default=50,
                show_default=True,
                type=click.IntRange(1),
                help="... on at least this many items two or more people agreed on.",
            )(fn)
        )
    )
    return _with_judges(
        calibrated, "chat:MODEL?base_url=... or FILE.py:NAME (several: an ensemble)."
    )


@main.command()
@click.argument("rubric_path", type=click.Path())
@click.option(
    "--labels",
    "labels_path",
    default=None,
    type=click.Path(),
    help="CSV/JSONL: item, label, labeller[, slice, rubric, note] (required unless --same-as).",
)
@click.option(
    "--items",
    "items_path",
    default=None,
    type=click.Path(),
    help="YAML/JSON/JSONL items: id, subject[, prompt, slice, ...].",
)
@click.option(
    "--same-as",
    "same_as",
    default=None,
    type=click.Path(),
    help="A calibration record (the JSON `calibrate --json` printed) of another endpoint "
    "that serves the same model: record --judge as that judge, without measuring.",
)
@click.option("--store", "store_path", default=str(DEFAULT_PATH), show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the record as JSON.")
@judge_options
def calibrate(
    rubric_path: str,
    labels_path: str | None,
    items_path: str | None,
    same_as: str | None,
    store_path: str,
    as_json: bool,
    judges: JudgeOptions,
) -> None:
    """Measure a judge against people's labels on RUBRIC and store the calibration.

    Its checks count (fail trials, feed gates) only while a calibration of this rubric
    version with this judge meets the bar: --min-items items two people agreed on,
    kappa's 95% lower bound at least --min-kappa, the false-pass rate's 95% upper bound
    at most --max-false-pass.
    """
    from rich.console import Console

    from proctor.core.documents import SpecError
    from proctor.report.judge_tables import print_calibration
    from proctor.store.calibrations import records, save_record
    from proctor.tasks.rubrics import load_rubric

    if not judges.refs:
        fail("calibrate needs --judge REF")
    if (labels_path is None) == (same_as is None):
        fail("calibrate needs --labels FILE (to measure) or --same-as FILE (to copy), not both")
    try:
        rubric = load_rubric(rubric_path)
    except SpecError as exc:
        fail(exc.lines())
    store = open_store(store_path)
    panel = judges.panel(store)
    if same_as is not None:
        figures, source = _copied(store, same_as, rubric, panel), str(same_as)
    else:
        assert labels_path is not None
        figures, source = (
            _measured(store, rubric, labels_path, items_path, panel, judges),
            str(labels_path),
        )
    previous = records(store, rubric.id)
    record = save_record(store, rubric.id, rubric.version, panel.name, panel.fingerprint, figures)
    refused = judges.policy().refusals(figures)
    out = {
        **record,
        "judge": panel.describe(),
        "labels": source,
        "accepted": not refused,
        "refusals": refused,
        "policy": judges.policy().to_dict(),
        "previous": _against(previous[0], figures, rubric.version, panel.fingerprint)
        if previous
        else None,
        "cache": {"hits": panel.cache.hits, "misses": panel.cache.misses},
    }
    store.close()
    if as_json:
        click.echo(json.dumps(out, indent=2, default=str))
    else:
        print_calibration(out, Console())


def _measured(
    store: Any,
    rubric: Any,
    labels_path: str,
    items_path: str | None,
    panel: Any,
    judges: JudgeOptions,
) -> dict[str, Any]:
    """The figures of `panel` against the labels (exit 2 with file:line on bad input)."""
    import asyncio

    from proctor.core.documents import SpecError
    from proctor.judge.calibration import LabelError
    from proctor.judge.calibration import calibrate as measure
    from proctor.judge.calibration_items import TRIAL_ITEM, Subject, read_items, trial_subject
    from proctor.labels.label_file import read_labels

    try:
        labels = read_labels(labels_path)
        items = read_items(items_path) if items_path else {}
    except SpecError as exc:
        fail(exc.lines())
    subjects: dict[str, Subject] = {}
    other: set[str] = set()  # items labelled on another rubric (the review desk's, say)
    for label in labels:
        if label.item in subjects:
            continue
        if label.rubric and label.rubric.split("@")[0] != rubric.id and label.item not in other:
            other.add(label.item)
        if label.item in items:
            item = items[label.item]
            subjects[label.item] = Subject(item.view(rubric), item.slice or label.slice)
        elif TRIAL_ITEM.match(label.item):
            try:
                found = trial_subject(store, label.item, rubric)
            except (LookupError, SpecError) as exc:
                fail(f"{labels_path}:{label.line}: item: {exc}")
            subjects[label.item] = Subject(found.view, label.slice)
        else:
            where = items_path or "no --items file"
            fail(f"{labels_path}:{label.line}: item: unknown item {label.item!r} ({where})")
    if other:
        click.echo(
            f"warning: {len(other)} items were labelled on another rubric than {rubric.id}; "
            "people and judge may not have answered the same question",
            err=True,
        )
    try:
        figures: dict[str, Any] = asyncio.run(
            measure(panel, rubric, subjects, labels, judges.min_items)
        )
    except LabelError as exc:
        fail(f"{labels_path}:{exc}")
    return figures


def _copied(store: Any, path: str, rubric: Any, panel: Any) -> dict[str, Any]:
    """The figures of the stored record FILE names, for `panel` stated to be the same
    model: the record must be in this store, of this rubric version, of another judge."""
    from proctor.store.calibrations import records

    try:
        stated = json.loads(Path(path).read_text(encoding="utf-8"))
        record_id, fingerprint = int(stated["id"]), str(stated["judge_fingerprint"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        fail(f"{path}:1: --same-as: not the JSON of `proctor calibrate --json` ({exc})")
    found = [r for r in records(store, rubric.id) if r["id"] == record_id]
    if not found or found[0]["judge_fingerprint"] != fingerprint:
        fail(f"{path}:1: id: calibration #{record_id} of this judge is not in the store")
    original = found[0]
    if original["rubric_version"] != rubric.version:
        fail(f"{path}:1: rubric_version: #{record_id} is of another version of {rubric.id}")
    if fingerprint == panel.fingerprint:
        fail(f"{path}:1: judge_fingerprint: #{record_id} is already this judge's calibration")
    figures = dict(original["figures"])
    figures["same_as"] = {
        "record": record_id,
        "judge": original["judge"],
        "judge_fingerprint": fingerprint,
        "statement": "a person stated that this judge serves the same model",
    }
    return figures


def _against(
    before: dict[str, Any], figures: dict[str, Any], version: str, fingerprint: str
) -> dict[str, Any]:
    """How this calibration compares with the rubric's previous one."""
    old = before["figures"]

    def change(key: str) -> float | None:
        a, b = old.get(key), figures.get(key)
        return None if a is None or b is None else b - a

    return {
        "id": before["id"],
        "date": before["date"],
        "judge": before["judge"],
        "same_judge": before["judge_fingerprint"] == fingerprint,
        "same_rubric_version": before["rubric_version"] == version,
        "kappa": old.get("kappa"),
        "false_pass_rate": old.get("false_pass_rate"),
        "kappa_change": change("kappa"),
        "false_pass_change": change("false_pass_rate"),
    }


def pairwise_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Adds `--judge`, `--judge-combine` and `--tasks` for a pairwise comparison."""
    with_tasks = click.option(
        "--tasks",
        "task_paths",
        multiple=True,
        type=click.Path(),
        help="Task files for the rubrics (default: the candidate run's paths).",
    )(fn)
    return _with_judges(with_tasks, "Pairwise A/B on the rubric tasks with this judge.")


def _views(store: Any, run: dict[str, Any], suite: Any) -> dict[tuple[str, str], list[Any]]:
    """(task id, rubric id) → the run's trials' views for that rubric, in trial order."""
    from proctor.judge.views import judge_entries, trial_view

    out: dict[tuple[str, str], list[Any]] = {}
    members = {t.id: t for t in suite.tasks if t.rubrics}
    for task_id, trial in sorted(store.trial_keys(run["run_id"])):
        member = members.get(task_id)
        if member is None:
            continue
        trace, _, outcome = store.trace(run["run_id"], task_id, trial)
        entries = judge_entries(member.task, member.rubrics)
        for rubric in member.rubrics:
            reference = entries[rubric.id].reference
            model = run["manifest"].get("model")
            view = trial_view(rubric, member.task, trace, outcome, model, reference)
            out.setdefault((task_id, rubric.id), []).append(view)
    return out


def pairwise_report(
    baseline: str,
    candidate: str,
    store: Any,
    judges: JudgeOptions,
    task_paths: Sequence[str],
    seed: int,
) -> dict[str, Any]:
    """The pairwise comparison of two stored runs with the judges (exit 2 on bad input)."""
    import asyncio

    from proctor.cli.common import suite_or_exit
    from proctor.judge.judgment import JudgeError
    from proctor.judge.pairwise import compare_pairwise
    from proctor.store import RunNotFound

    if store is None:
        fail("compare --judge reads the runs' traces: it needs the store (--store)")
    try:
        base, cand = store.run(baseline), store.run(candidate)
    except RunNotFound as exc:
        fail(f"compare --judge: {exc} (exported run files carry no traces)")
    paths = tuple(task_paths) or tuple(cand["manifest"]["suite"].get("paths") or ())
    suite = suite_or_exit(paths)
    rubrics = {t.id: list(t.rubrics) for t in suite.tasks if t.rubrics}
    if not rubrics:
        fail("compare --judge: no task of the suite has `expect.judge` rubrics")
    panel = judges.panel(store)
    try:
        report = asyncio.run(
            compare_pairwise(
                panel, rubrics, _views(store, base, suite), _views(store, cand, suite), seed=seed
            )
        )
    except JudgeError as exc:
        fail(f"compare --judge: the judge gave no verdict: {exc}")
    return {"baseline": base["run_id"], "candidate": cand["run_id"], **report}
