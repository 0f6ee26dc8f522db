"""The judges of a run: the panel of `--judge` references, ready for the run's rubrics.

Shared by `proctor.evaluate` and the commands that judge (`run`, `regrade`); notes a
person should see (tasks with rubrics but no judge, advisory judges, self-preference)
go to `say`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal

from proctor.api.errors import InputError

if TYPE_CHECKING:
    from proctor.env.suite import Suite
    from proctor.judge.calibration_records import CalibrationPolicy
    from proctor.judge.grader import Judging
    from proctor.run.fidelity import Fidelity
    from proctor.store.sqlite import Store

Combine = Literal["mean", "majority"]


def judging_for(
    store: Store | None,
    suite: Suite,
    agent_model: str | None,
    refs: Sequence[str],
    *,
    combine: Combine = "mean",
    policy: CalibrationPolicy | None = None,
    say: Callable[[str], None] = lambda line: None,
) -> Judging | None:
    """The Judging of a run over `suite`: None without judges, or without rubrics to judge
    (said). Raises InputError for a judge that cannot be found, or judges with no rubric."""
    from proctor.judge.cache import JudgeCache
    from proctor.judge.calibration_records import CalibrationPolicy
    from proctor.judge.grader import Judging
    from proctor.judge.judge_refs import JudgeNotFound, load_panel

    rubrics = [r for t in suite.tasks for r in t.rubrics]
    if not refs:
        if rubrics:
            say("note: tasks have rubrics but no --judge: their judge checks are not run")
        return None
    if not rubrics:
        raise InputError("--judge: no selected task has `expect.judge` rubrics to judge")
    try:
        panel = load_panel(list(refs), combine, JudgeCache(store))
    except JudgeNotFound as exc:
        raise InputError(str(exc)) from None
    judging = Judging.prepare(
        panel, refs, rubrics, store, policy or CalibrationPolicy(), agent_model
    )
    for rubric_id, row in judging.manifest()["rubrics"].items():
        if not row["calibrated"]:
            say(
                f"judge {judging.panel.name} on {rubric_id}: {row['reason']} "
                "(its checks are advisory)"
            )
    for warning in judging.warnings:
        say(f"warning: {warning}")
    return judging


def fidelity_for(
    store: Store | None,
    refs: Sequence[str],
    sample: float,
    *,
    policy: CalibrationPolicy | None = None,
    say: Callable[[str], None] = lambda line: None,
) -> Fidelity | None:
    """The judge of a run's simulated users (`--user-fidelity`): None without one; an
    uncalibrated judge is said (its checks are shown and decide nothing)."""
    from proctor.judge.cache import JudgeCache
    from proctor.judge.calibration_records import CalibrationPolicy
    from proctor.judge.judge_refs import JudgeNotFound, load_panel
    from proctor.run.fidelity import Fidelity

    if not refs:
        return None
    if not 0.0 <= sample <= 1.0:
        raise InputError(f"--fidelity-sample: {sample:g} is not a share from 0 to 1")
    try:
        panel = load_panel(list(refs), "mean", JudgeCache(store))
    except JudgeNotFound as exc:
        raise InputError(str(exc).replace("--judge", "--user-fidelity", 1)) from None
    fidelity = Fidelity.prepare(panel, refs, store, policy or CalibrationPolicy(), sample)
    if not fidelity.standing.calibrated:
        say(
            f"fidelity judge {panel.name}: {fidelity.standing.reason} (its checks are "
            "shown and never make a trial sim_error)"
        )
    return fidelity
