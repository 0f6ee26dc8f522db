"""The overhead benchmark's varied answers (benchmarks/workload.py, `overhead.py
--varied-answers`): each trial of a task answers in other words, and grading gives each
trial the checks and verdicts the repeated answer gets, so the figure measures reading
new answers, not different work."""

from __future__ import annotations

import runpy
from pathlib import Path

from proctor import Runner

ROOT = Path(__file__).resolve().parents[1]
BENCH = runpy.run_path(str(ROOT / "benchmarks" / "workload.py"))


def test_each_trial_of_a_task_answers_in_other_words() -> None:
    answers = [BENCH["varied_answer"](i, trial) for i in range(3) for trial in range(256)]
    assert len(set(answers)) == len(answers)


def test_varied_answers_get_the_checks_and_verdicts_of_the_repeated_one() -> None:
    def verdicts(varied: bool) -> list[tuple[str, int, list[tuple[str, bool]]]]:
        suite, agent = BENCH["workload"](4, varied)
        report = Runner(suite, agent, trials=20, seed=1).run()
        return sorted(
            (r.task_id, r.trial, sorted((c.name, c.passed) for c in r.checks))
            for r in report.results
        )

    repeated, varied = verdicts(False), verdicts(True)
    assert varied == repeated
    assert all(passed for *_, checks in varied for _, passed in checks)
    assert {name for *_, checks in varied for name, _ in checks} >= {
        "false_success:cancelled",
        "grounded",
        "mentions:cancelled",
    }
