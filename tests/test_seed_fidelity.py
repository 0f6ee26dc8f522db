"""The sources, to the letter (issue 29 items 8-10).

Seed 001's release gate compares the candidate with the baseline (at most 1 point less
task success, 2 less argument accuracy): `baseline_` metrics in a rule read the baseline
run, and the support example's gates.yaml ships it so. Seed 003's `optimal_steps` and
`difficulty` are used in the support and incident examples, and its customer-service
weights by the support example's tasks.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import proctor
from proctor import load_suite
from proctor.decide.gate import load_rules
from proctor.decide.scorecard import load_scorecard

ROOT = Path(__file__).resolve().parents[1]
SUPPORT = ROOT / "examples" / "support"
AGENTS = SUPPORT / "agents.py"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A store with the scripted agent's baseline (exported), a second scripted run and
    a careless one; their run ids."""
    where = tmp_path_factory.mktemp("seed001")
    db = str(where / "p.db")
    ids = []
    for agent in ("scripted", "scripted", "careless"):
        done = proctor("run", str(SUPPORT), "--agent", f"{AGENTS}:{agent}", "--trials", "3",
                       "--store", db, "-q")  # fmt: skip
        assert done.returncode in (0, 1), done.stderr
        ids.append(done.stdout.split("run ", 1)[1].split(":", 1)[0])
        if not (where / "baseline.jsonl").exists():
            proctor("export", "latest", "--out", str(where / "baseline.jsonl"), "--store", db)
    return where, ids


def gate_json(where: Path, run: str, rules: Path) -> dict[str, Any]:
    baseline, db = str(where / "baseline.jsonl"), str(where / "p.db")
    done = proctor(
        "gate", run, "--rules", str(rules), "--baseline", baseline, "--store", db, "--json"
    )
    verdict: dict[str, Any] = json.loads(done.stdout)
    return verdict


def test_the_support_gate_compares_with_the_baseline(runs: tuple[Path, list[str]]) -> None:
    where, ids = runs
    rules = SUPPORT / "gates.yaml"
    texts = [r.text for r in load_rules(rules)]
    assert "task_success_rate >= baseline_task_success_rate - 0.01" in texts
    assert "arg_accuracy >= baseline_arg_accuracy - 0.02" in texts
    rows = {r["rule"]: r for r in gate_json(where, ids[2], rules)["rules"]}
    versus = rows["task_success_rate >= baseline_task_success_rate - 0.01"]
    # the baseline passed everything: the threshold is its rate less one point
    assert versus["threshold"] == ">= 0.99" and versus["status"] == "fail"
    assert versus["value"] == 0
    # without the baseline the rules cannot be read: bad input, never a pass
    done = proctor("gate", ids[2], "--rules", str(rules), "--store", str(where / "p.db"))
    assert done.returncode == 2 and "compare with a baseline" in done.stderr


def test_a_baseline_rule_follows_the_baseline_not_a_fixed_number(
    runs: tuple[Path, list[str]], tmp_path: Path
) -> None:
    where, ids = runs
    rules = tmp_path / "g.yaml"
    rules.write_text(
        "- task_success_rate >= baseline_task_success_rate - 0.01\n"
        "- arg_accuracy >= baseline_arg_accuracy - 0.02\n"
    )
    assert gate_json(where, ids[1], rules)["passed"] is True  # the same agent again
    assert gate_json(where, ids[2], rules)["passed"] is False  # the careless one


def test_a_scorecard_refuses_baseline_metrics(tmp_path: Path) -> None:
    card = tmp_path / "card.yaml"
    card.write_text("gates:\n  - task_success_rate >= baseline_task_success_rate\n")
    with pytest.raises(Exception, match="a scorecard has no baseline"):
        load_scorecard(card)


def test_optimal_steps_and_difficulty_in_support_and_incident() -> None:
    for name in ("support", "incident"):
        tasks = load_suite(ROOT / "examples" / name).tasks
        assert all(t.task.optimal_steps and t.task.difficulty for t in tasks), name


def test_the_support_tasks_carry_the_customer_service_kinds() -> None:
    config = load_scorecard(ROOT / "examples" / "scorecards" / "customer-service.yaml")
    kinds = {tag for c in config.categories.values() for tag in c.where.get("tag", [])}
    for task in load_suite(SUPPORT).tasks:
        assert kinds & set(task.task.tags), task.id
    readme = (SUPPORT / "README.md").read_text()
    assert "--scorecard examples/scorecards/customer-service.yaml" in readme
    assert yaml.safe_load((SUPPORT / "gates.yaml").read_text())


def test_one_command_prints_seed_001s_six_figures(runs: tuple[Path, list[str]]) -> None:
    """Issue 29 item 8: the source's six lines came from three commands assembled by
    examples/figures.py; the gate prints them beside its verdict."""
    where, ids = runs
    rules, baseline = str(SUPPORT / "gates.yaml"), str(where / "baseline.jsonl")
    done = proctor("gate", ids[1], "--rules", rules, "--baseline", baseline,
                   "--store", str(where / "p.db"))  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    start = lines.index("task success: 100.0%")
    assert lines[start : start + 5] == [
        "task success: 100.0%",
        "tool precision: 100.0%",
        "tool recall: 100.0%",
        "argument accuracy: 100.0%",
        lines[start + 4],
    ]
    # the source's review line, with the random sample counted apart
    assert re.fullmatch(r"human review: cancel-eligible-order( \(\+\d+ sampled trials?\))?",
                        lines[start + 4])  # fmt: skip
    assert lines[start + 5].startswith("gate PASSED")
    careless = proctor("gate", ids[2], "--rules", rules, "--baseline", baseline,
                       "--store", str(where / "p.db"))  # fmt: skip
    assert "task success: 0.0%" in careless.stdout and "gate FAILED" in careless.stdout
