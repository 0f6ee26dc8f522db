"""`RunResult.report` and `proctor report`: a stored run's HTML report and Markdown one-pager.

Both show what a person deciding needs beside the run's figures (docs/architecture.md,
report/): the review queue, the gate's rules, the comparison with a baseline, the review
desk's labels (human-adjudicated success), the evaluation program's figures and the
suite's health as the store has it. The command parses its options, calls `write_report`
and prints the paths.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proctor.api.errors import InputError

if TYPE_CHECKING:
    from proctor.api.decisions import RunRef
    from proctor.core.runs import RunData
    from proctor.decide.gate import Rule
    from proctor.env.suite import Suite
    from proctor.interop.redact import Redactor
    from proctor.labels.ground_truth import GroundTruth
    from proctor.report.inputs import ReportInputs
    from proctor.review.queue import ReviewConfig
    from proctor.store.sqlite import Store


def write_report(
    run: RunRef,
    store: Store,
    *,
    html: str | Path | None = None,
    markdown: str | Path | None = None,
    baseline: RunRef | None = None,
    rules: Sequence[Rule] | str | Path | None = None,
    suite: Suite | None = None,
    review: ReviewConfig | None = None,
    redactor: Redactor | None = None,
    embed_limit: int | None = None,
    desk_url: str | None = None,
) -> list[Path]:
    """Write the HTML report (with the traces, from `store`) and/or the Markdown one-pager
    of `run` (a RunResult, a RunData, or a run id, prefix or `latest` in `store`) beside
    `baseline` (those, or an exported file); returns
    the paths written. `suite`: the run's tasks, for their prompts (else none are shown;
    the program figures reload the run's own task files when they are unchanged).
    `review`: how the review queue samples (its defaults). `redactor`: applied to the
    task texts shown. `embed_limit`: above this many trials only failed and queued traces
    are embedded, the rest linked to the review desk at `desk_url` (report/html.py's
    defaults). Raises InputError (nothing to write,
    no such run, an incomparable baseline), SpecError (a rules file), ValueError (a run
    without a summary) and OSError (a path that cannot be written)."""
    from proctor.api.decisions import rule_list, run_data
    from proctor.decide.compare import CompareError
    from proctor.labels.agreement import human_figures
    from proctor.labels.ground_truth import run_truth
    from proctor.report.html import write_html
    from proctor.report.inputs import gather
    from proctor.report.markdown import write_markdown

    if html is None and markdown is None:
        raise InputError("nothing to write: pass html=PATH and/or markdown=PATH")
    data = _stored(run, store)
    base = None if baseline is None else run_data(baseline, store)
    truth = run_truth(store, data.run_id)  # the desk's labels, read once for both uses
    human = human_figures(truth, data.results)
    try:
        inputs = gather(
            data,
            baseline=base,
            rules=None if rules is None else rule_list(rules),
            suite=suite,
            review=review,
            redactor=redactor,
            human=human if human["trials"] else None,
        )
    except CompareError as exc:
        raise InputError(str(exc)) from None
    _add_program_and_health(inputs, store, data, suite, truth)
    written = []
    if html is not None:
        page: dict[str, Any] = {"embed_limit": embed_limit, "desk_url": desk_url}
        write_html(
            html,
            inputs,
            lambda task, trial: store.trace(data.run_id, task, trial)[0],
            **{k: v for k, v in page.items() if v is not None},
        )
        written.append(Path(html))
    if markdown is not None:
        write_markdown(markdown, inputs)
        written.append(Path(markdown))
    return written


def _stored(ref: RunRef, store: Store) -> RunData:
    """The run `ref` names in `store` (its traces are read from there)."""
    from proctor.api.decisions import run_data
    from proctor.store.export import RunInputError, store_run

    if not isinstance(ref, str | Path):
        return run_data(ref)
    try:
        return store_run(store, str(ref))
    except RunInputError as exc:
        raise InputError(str(exc)) from None


def _add_program_and_health(
    inputs: ReportInputs, store: Store, run: RunData, suite: Suite | None, truth: GroundTruth
) -> None:
    """The evaluation program's figures and the suite's health, as the store has them."""
    from proctor.health.stored_reports import health_problems
    from proctor.report.health_html import health_view
    from proctor.store.health_reports import find_health, health_key

    inputs.program = _program(store, run, suite, truth)
    ref = run.manifest.suite
    health = find_health(store, ref.name, ref.digest)
    if health is not None and health_problems(health, health_key(store)):
        health = None  # edited, unsigned or self-contradicting: shown as never checked
    inputs.health = health_view(health, run)


def _program(store: Store, run: RunData, suite: Suite | None, truth: GroundTruth) -> dict[str, Any]:
    """The evaluation program's figures of a run: its wall time, judge-human agreement,
    the promoted tasks of its suite caught since (the run's task files when no suite is
    given and they are still here)."""
    from proctor.core.documents import SpecError
    from proctor.env.suite import load_suite
    from proctor.labels.final import human_verdicts
    from proctor.loop.program import program_figures

    if suite is None:
        paths = run.manifest.suite.paths
        if paths and all(Path(p).exists() for p in paths):
            try:
                suite = load_suite(paths)
            except SpecError:
                suite = None
    return program_figures(
        run_results=run.results,
        human=human_verdicts(truth),
        summary=run.summary,
        store=store,
        suite=suite,
    )
