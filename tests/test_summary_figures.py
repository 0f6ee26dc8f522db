"""One meaning for each headline figure, wherever it is read (issue 11, items 2, 3 and 5;
issue 16, item 15): success is the mean over tasks, pass@k covers every task or is not
given, cost per passed trial says what it divides by, pass@1 is printed once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.console import Console

from proctor.core.results import TaskInfo
from proctor.core.summary import RunSummary
from proctor.decide.compare import compare_runs
from proctor.decide.gate import Gate, load_rules
from proctor.report.decision import print_comparison
from proctor.report.terminal import headline
from test_compare import make_run


def printed(summary: dict) -> str:
    console = Console(record=True, width=200)
    console.print(headline(RunSummary.new(summary)))
    return console.export_text()


def test_success_is_the_mean_over_tasks_everywhere(tmp_path: Path) -> None:
    # The case: unequal trial counts make pooled (5/6 = 0.83) and per task (0.5)
    # disagree. Task a passed 5 of 5, task b failed its one valid trial.
    run = make_run("r", {"a": "ppppp", "b": "feeee"})
    s = Gate(run).summary(None)
    assert s is not None
    assert s["success_rate"] == pytest.approx(0.5) == s["pass_at_k"]["1"]
    assert s["pooled_success_rate"] == pytest.approx(5 / 6)
    rules = tmp_path / "gates.yaml"
    rules.write_text("- task_success_rate == 0.5\n- pooled_success_rate > 0.8\n")
    assert Gate(run).evaluate(load_rules(rules))["rules"][1]["status"] == "pass"
    assert Gate(run).evaluate(load_rules(rules))["rules"][2]["status"] == "pass"
    text = printed(s)
    assert re.search(r"task success \(pass@1\) +│ 50\.0% ", text)
    assert "pooled 5/6 valid trials = 83.3%" in text
    # compare reads the same figure: per task, then over tasks.
    base = make_run("b", {"a": "ppppp", "b": "ppppp"})
    success = compare_runs(base, run)["metrics"][0]
    assert (success["baseline"], success["candidate"]) == (1.0, 0.5)


def test_pass_k_stops_where_a_task_runs_out_of_valid_trials(tmp_path: Path) -> None:
    # Task b lost one trial to the harness: pass^3 would be task a's alone.
    run = make_run("r", {"a": "ppp", "b": "fpe", "c": "ppp"})
    s = Gate(run).summary(None)
    assert s is not None
    assert set(s["pass_hat_k"]) == set(s["pass_at_k"]) == {"1", "2"}
    assert s["pass_k"] == {"complete_up_to": 2, "tasks": 3, "incomplete": {"3": 2}}
    assert RunSummary.new(s).headline_k == 2
    rules = tmp_path / "gates.yaml"
    rules.write_text("- pass_hat_k[3] >= 0.5\n- pass_hat_k[2] >= 0.5\n")
    _, three, two = Gate(run).evaluate(load_rules(rules))["rules"]
    assert three["status"] == "fail"
    assert three["reason"] == "pass_hat_k[3] is incomplete: 2 of 3 tasks have 3 valid trials"
    assert two["status"] == "pass"
    text = printed(s)
    assert "pass^2" in text and "pass^3 is not reported: only 2 of 3 tasks have 3" in text


def test_pass_at_1_is_printed_once_with_one_trial() -> None:
    s = Gate(make_run("r", {"a": "p", "b": "f"})).summary(None)
    assert s is not None
    text = printed(s)
    assert text.count("pass@1") == 1 and "pass^1" not in text


def test_cost_per_passed_trial_divides_every_trial_s_cost_by_the_passed_ones() -> None:
    run = make_run("r", {"a": "pp", "b": "ff"}, cost=0.03)
    s = Gate(run).summary(None)
    assert s is not None
    assert s["cost"]["per_passed_trial_usd"] == pytest.approx(4 * 0.03 / 2)
    assert "per_successful_task_usd" not in s["cost"]
    nothing = Gate(make_run("n", {"a": "ff"})).summary(None)
    assert nothing is not None and nothing["cost"]["per_passed_trial_usd"] is None


def test_slice_intervals_stay_in_the_possible_range() -> None:
    infos = {f"t{i}": TaskInfo(f"t{i}", tags=["x"]) for i in range(8)}
    base = make_run("b", {t: "pp" for t in infos}, infos)
    cand = make_run("c", {t: "ff" for t in infos}, infos)
    report = compare_runs(base, cand)
    for figure in [*report["slices"], report["metrics"][0]]:
        low, high = figure["ci"]
        assert -1.0 <= low <= figure["difference"] <= high <= 1.0


def test_identical_two_task_runs_are_too_few_to_conclude() -> None:
    base = make_run("b", {"a": "ppp", "b": "fff"})
    same = make_run("s", {"a": "ppp", "b": "fff"})
    report = compare_runs(base, same)
    success = report["metrics"][0]
    assert success["difference"] == 0.0 and success["ci"] == [-1.0, 1.0]
    assert not success["conclusive"] and not success["significant"]
    assert report["non_inferiority"]["passed"] is False
    console = Console(record=True, width=200)
    print_comparison(report, console)
    text = console.export_text()
    assert "too few tasks to conclude (fewer than 6): nothing here is significant" in text
    assert "non-inferiority of task success at margin 2.0 pts: FAIL" in text


def test_the_interval_says_what_it_is_about_and_the_mde_when_there_is_none() -> None:
    # Issue 27, items 3 and 4: one task's interval is about that task; two tasks are too
    # few for an interval; below the tasks compare needs, no drop is detectable.
    one = Gate(make_run("r", {"a": "ppfpp"})).summary(None)
    two = Gate(make_run("r", {"a": "ppfpp", "b": "ppppp"})).summary(None)
    many = Gate(make_run("r", {t: "pppfp" if t < "f" else "ffpff" for t in "abcdefghijkl"}))
    assert one is not None and two is not None
    text = printed(one)
    assert "for this one task's trials, not for a suite" in text
    assert "clustered by task" not in text
    assert "too few tasks to detect any drop" in text
    assert one["success_interval"]["method"] == "task"
    text = printed(two)
    assert "95% CI: too few tasks (2) for one" in text and two["success_ci"] == [0.0, 1.0]
    assert "too few tasks to detect any drop" in text
    summary = many.summary(None)
    assert summary is not None and summary["mde"] is not None
    text = printed(summary)
    assert "clustered by task" in text and "too few tasks" not in text
    assert f"{100 * summary['mde']:.1f}% in success (80% power" in text
