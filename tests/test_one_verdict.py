"""One verdict on every screen, read at 80 columns (issue 29 items 2-4).

`make demo` printed "scorecard ... PASSED" just before "gate FAILED"; an all-n/a scorecard
printed "0.0 / 100 — PASSED"; `gate` exited 0 under "Recommendation: do not release";
efficiency and robustness scored 100% with nothing measured; rule and check names were
cut with an ellipsis at 80 columns, and a failed threshold rule had no reason. Every
command here runs through the real command line, at the width a newcomer's terminal has.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SUPPORT = ROOT / "examples" / "support"
MINI = Path(__file__).parent / "fixtures" / "mini"
FIXTURES = Path(__file__).parent / "fixtures"


def cli(*args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    """The real command line at `columns` wide (conftest's `proctor` is 200 wide)."""
    return subprocess.run(
        [sys.executable, "-m", "proctor.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": str(columns)},
    )


def column(text: str, index: int) -> str:
    """The cells of table column `index` joined without spaces: a folded name reads whole."""
    cells = [line.split("│")[index + 1] for line in text.splitlines() if line.startswith("│")]
    return "".join("".join(cell.split()) for cell in cells)


def flat(text: str) -> str:
    return " ".join(text.split())


def last_line(text: str) -> str:
    """The last printed statement, its wrapped lines joined."""
    return " ".join(text.strip().split("Recommendation:")[-1].split())


@pytest.fixture(scope="module")
def careless(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with the careless support agent's run: a high violation, no success."""
    db = tmp_path_factory.mktemp("careless") / "p.db"
    agent = f"{SUPPORT / 'agents.py'}:careless"
    done = cli("run", str(SUPPORT), "--suite", "regression", "--agent", agent, "--store", str(db))
    assert done.returncode == 0, done.stderr
    # the scorecard is labelled as an input, and never says PASSED beside a failed gate
    assert "PASSED" not in done.stdout
    assert "scorecard (one input to the recommendation)" in flat(done.stdout)
    assert last_line(done.stdout.split("\nrun ")[-2]).startswith("do not release")
    return db


def test_a_passed_rule_set_with_a_blocking_violation_exits_1(
    careless: Path, tmp_path: Path
) -> None:
    rules = tmp_path / "g.yaml"
    rules.write_text("- errors == 0\n")
    done = cli("gate", "latest", "--rules", str(rules), "--store", str(careless))
    assert done.returncode == 1, done.stdout + done.stderr  # it exited 0 before
    assert "gate PASSED" not in done.stdout
    assert last_line(done.stdout).startswith("do not release")
    as_json = cli("gate", "latest", "--rules", str(rules), "--store", str(careless), "--json")
    verdict = json.loads(as_json.stdout)
    assert verdict["passed"] is True  # the rules passed ...
    assert verdict["exit_code"] == as_json.returncode == 1  # ... the recommendation did not


def test_failed_rules_have_reasons_and_are_named_last_unabridged(
    careless: Path, tmp_path: Path
) -> None:
    rules = tmp_path / "g.yaml"
    rules.write_text(
        "- critical_policy_violations == 0\n"
        "- high_policy_violations == 0\n"
        "- {rule: task_success_rate >= 0.9, where: {suite: regression}}\n"
        "- (task_success_rate >= 0.5) or (high_policy_violations == 0)\n"
    )
    done = cli("gate", "latest", "--rules", str(rules), "--store", str(careless))
    assert done.returncode == 1
    assert "…" not in done.stdout
    names = column(done.stdout, 0)
    for rule in ("critical_policy_violations==0", "(suite=regression)"):
        assert rule in names
    verdict = json.loads(
        cli("gate", "latest", "--rules", str(rules), "--store", str(careless), "--json").stdout
    )
    failed = [row for row in verdict["rules"] if row["status"] == "fail"]
    assert len(failed) == 3 and all(row["reason"] for row in failed)
    assert failed[0]["reason"] == "1 is not == 0"
    last = last_line(done.stdout)
    assert "high_policy_violations == 0" in last
    assert "task_success_rate >= 0.9 (suite=regression)" in last
    assert "(task_success_rate >= 0.5) or (high_policy_violations == 0)" in last


def test_show_all_checks_folds_check_names_at_80_columns(careless: Path) -> None:
    done = cli("show", "latest", "--all-checks", "--store", str(careless))
    assert done.returncode == 0, done.stderr
    assert "…" not in done.stdout
    summary = json.loads(cli("show", "latest", "--json", "--store", str(careless)).stdout)
    checks = {name for row in summary["per_task"] for name in row["failed_checks"]}
    failing = column(done.stdout.split("root causes")[0], 5)
    assert checks and all("".join(name.split()) in failing for name in checks)


def test_nothing_measured_is_not_measured_never_a_pass(tmp_path: Path) -> None:
    card = tmp_path / "card.yaml"
    card.write_text(
        "categories:\n"
        "  nowhere: {weight: 1, metric: task_success_rate, where: {tag: nowhere}}\n"
        "gates:\n"
        "  - {rule: task_success_rate >= 0.5, where: {tag: nowhere}}\n"
    )
    agent = f"{FIXTURES / 'exec_agents.py'}:flaky"
    db = str(tmp_path / "p.db")
    done = cli("run", str(MINI), "--agent", agent, "--store", db, "--scorecard", str(card))
    assert "0.0 / 100" not in done.stdout and "PASSED" not in done.stdout
    assert "not measured, no category had anything to measure" in flat(done.stdout)
    default = cli("run", str(MINI), "--agent", agent, "--store", db)
    assert default.returncode in (0, 1), default.stderr
    summary = json.loads(cli("show", "latest", "--json", "--store", db).stdout)
    # the mini suite has no budget: the share of budget checks passed is not measured
    # (it was 1.0 before), and seed 004's "defined and measured budget" gate fails
    assert summary["quality"]["budget"] is None
    [budget] = [g for g in summary["scorecard"]["gates"] if "budget" in g["rule"]]
    assert budget["status"] == "fail" and budget["value"] == summary["valid_trials"]
    budgets = tmp_path / "budgets.yaml"
    budgets.write_text("categories:\n  efficiency: {weight: 1, metric: budget_score}\n")
    shown = cli("run", str(MINI), "--agent", agent, "--store", db, "--scorecard", str(budgets))
    rows = {line.split("│")[1].strip(): line for line in shown.stdout.splitlines() if "│" in line}
    assert rows["efficiency"].split("│")[4].strip() == "not measured"  # the score column


CRASHING_GRADER = """

from proctor import grader


@grader("explodes", applies=lambda task: True, replace=True)
def explodes(ctx):
    raise ZeroDivisionError("a grader bug")
"""


def test_an_invalid_run_shows_no_passing_scorecard(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "domain.py").write_text((MINI / "domain.py").read_text() + CRASHING_GRADER)
    (suite / "read-item.yaml").write_text((MINI / "tasks" / "read-item.yaml").read_text())
    agent = f"{FIXTURES / 'exec_agents.py'}:flaky"
    done = cli("run", str(suite), "--agent", agent, "--store", str(tmp_path / "p.db"))
    assert done.returncode == 1
    assert "PASSED" not in done.stdout and "/ 100" not in done.stdout
    assert "no score, the run is invalid" in flat(done.stdout)
    assert last_line(done.stdout.split("\nrun ")[-2]).startswith("re-run before deciding")
