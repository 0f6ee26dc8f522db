"""Run KYC example tasks with the analyst agent and a judge, through the real gateway."""

from __future__ import annotations

import dataclasses
from functools import cache
from pathlib import Path
from typing import Any

from proctor.env.suite import Suite, load_suite
from proctor.judge.cache import JudgeCache
from proctor.judge.calibration_records import CalibrationPolicy
from proctor.judge.grader import Judging
from proctor.judge.panel import JudgePanel
from proctor.run import Runner
from proctor.run.runner import RunReport
from proctor.store import Store
from proctor.tasks.rubrics import Rubric

REPO = Path(__file__).resolve().parents[1]
KYC = REPO / "examples" / "kyc"
RUBRIC = KYC / "rubrics" / "document-request.yaml"
#: Missing-documents cases: the agent writes a request the rubric judges.
REQUEST_TASKS = ("kyc-case-03", "kyc-case-11")


@cache
def kyc_suite() -> Suite:
    return load_suite(KYC / "tasks" / "cases.yaml")


def kyc_agents() -> Any:
    from proctor.env.domain_finder import load_module_from_path

    return load_module_from_path(KYC / "agents.py")


def suite_of(task_ids: tuple[str, ...], rubric: Rubric | None = None) -> Suite:
    """The KYC tasks named, with `rubric` in place of their own when given."""
    suite = kyc_suite()
    members = [t for t in suite.tasks if t.id in task_ids]
    if rubric is not None:
        members = [dataclasses.replace(t, rubrics=(rubric,)) for t in members]
    return Suite(suite.name, suite.roots, members)


def judged_run(
    judges: list[Any],
    store: Store,
    *,
    tasks: tuple[str, ...] = REQUEST_TASKS,
    trials: int = 1,
    agent: Any = None,
    rubric: Rubric | None = None,
    combine: str = "mean",
    policy: CalibrationPolicy | None = None,
    seed: int = 0,
    suite: Suite | None = None,
) -> RunReport:
    """A run of `tasks` (or of `suite`) judged by a panel of `judges`, stored in `store`."""
    suite = suite or suite_of(tasks, rubric)
    agent = agent or kyc_agents().hasty
    panel = JudgePanel(judges, combine, JudgeCache(store))  # type: ignore[arg-type]
    rubrics = [r for t in suite.tasks for r in t.rubrics]
    judging = Judging.prepare(
        panel, [j.name for j in judges], rubrics, store, policy or CalibrationPolicy(), "m"
    )
    runner = Runner(suite, agent, trials=trials, store=store, judging=judging, seed=seed)
    report = runner.run()
    assert report.results is not None  # read back now: the caller may close the store
    return report


def judge_checks(report: RunReport) -> list[Any]:
    return [c for r in report.results for c in r.checks if c.kind == "judge"]


def calibrate_for_test(store: Store, judge: Any, rubric_path: Path = RUBRIC) -> None:
    """A calibration record on which `judge` decides: 80 items people agreed on, all
    judged as they were."""
    from proctor.judge.calibration import verdict_figures
    from proctor.store.calibrations import save_record
    from proctor.tasks.rubrics import load_rubric

    rubric = load_rubric(rubric_path)
    agreed = [True] * 40 + [False] * 40
    figures = {**verdict_figures(agreed, agreed), "judge_error_rate": 0.0}
    save_record(store, rubric.id, rubric.version, judge.name, judge.fingerprint, figures)
