"""End to end through the real `proctor` entry point on both example suites."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import proctor

ROOT = Path(__file__).resolve().parents[1]
CLINICAL = ROOT / "examples" / "clinical"
SUPPORT = ROOT / "examples" / "support"


def run_json(tmp_path: Path, suite: Path, agent: str, *extra: str) -> dict:
    out = tmp_path / "summary.json"
    done = proctor(
        "run",
        str(suite),
        "--agent",
        f"{suite}/agents.py:{agent}",
        "--store",
        str(tmp_path / "p.db"),
        "--json",
        str(out),
        *extra,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return json.loads(out.read_text())


@pytest.mark.parametrize("suite", [CLINICAL, SUPPORT])
def test_validate_accepts_the_examples(suite: Path) -> None:
    done = proctor("validate", str(suite))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok: ")


def test_support_suite_scripted_agent_passes_everything(tmp_path: Path) -> None:
    summary = run_json(tmp_path, SUPPORT, "scripted", "--trials", "3")
    assert summary["tasks"] == 3 and summary["trials"] == 9
    assert summary["success_rate"] == 1.0
    assert summary["pass_hat_k"] == {"1": 1.0, "2": 1.0, "3": 1.0}
    assert summary["safety_violations"]["total"] == 0


def test_support_suite_careless_agent_fails_for_the_right_reasons(tmp_path: Path) -> None:
    summary = run_json(tmp_path, SUPPORT, "careless")
    rows = {row["id"]: row for row in summary["per_task"]}
    assert summary["success_rate"] == 0.0
    assert "order:orders.get<orders.cancel" in rows["cancel-eligible-order"]["failed_checks"]
    assert "forbidden:orders.cancel" in rows["do-not-cancel-shipped-order"]["failed_checks"]
    assert "mentions:could not find" in rows["handle-missing-order"]["failed_checks"]
    assert summary["safety_violations"]["by_check"]["forbidden:orders.cancel"] >= 1


def test_clinical_run_summary_has_the_promised_shape(tmp_path: Path) -> None:
    summary = run_json(tmp_path, CLINICAL, "scripted", "--trials", "5", "--seed", "7")
    for key in (
        "run_id",
        "tasks",
        "trials",
        "valid_trials",
        "success_rate",
        "success_ci",
        "pass_at_k",
        "pass_hat_k",
        "safety_violations",
        "errors",
        "per_task",
        "manifest",
    ):
        assert key in summary, key
    assert summary["trials"] == summary["tasks"] * 5
    assert set(summary["pass_hat_k"]) == {"1", "2", "3", "4", "5"}
    assert summary["pass_at_k"]["1"] == pytest.approx(summary["pass_hat_k"]["1"])
    # pass^k can only fall as k grows, pass@k only rise
    hats = [summary["pass_hat_k"][str(k)] for k in range(1, 6)]
    ats = [summary["pass_at_k"][str(k)] for k in range(1, 6)]
    assert hats == sorted(hats, reverse=True) and ats == sorted(ats)
    for row in summary["per_task"]:
        assert {"id", "n", "passed", "pass_hat_k", "failed_checks"} <= set(row)
        assert row["n"] == 5
    passed = sum(row["passed"] for row in summary["per_task"])
    assert summary["success_rate"] == pytest.approx(passed / summary["valid_trials"])
    assert summary["manifest"]["seed"] == 7
    assert summary["manifest"]["suite"]["tasks"] == summary["tasks"]


def test_same_seed_same_verdicts(tmp_path: Path) -> None:
    a = run_json(tmp_path / "a", CLINICAL, "scripted", "--trials", "3", "--seed", "11")
    b = run_json(tmp_path / "b", CLINICAL, "scripted", "--trials", "3", "--seed", "11")
    assert [r["passed"] for r in a["per_task"]] == [r["passed"] for r in b["per_task"]]
    assert a["pass_hat_k"] == b["pass_hat_k"]


def test_filters_runs_and_show(tmp_path: Path) -> None:
    summary = run_json(tmp_path, CLINICAL, "perfect", "--suite", "adversarial")
    assert summary["tasks"] == 3
    assert all("adversarial" in row["suites"] for row in summary["per_task"])
    store = str(tmp_path / "p.db")
    listed = proctor("runs", "--store", store)
    assert listed.returncode == 0 and summary["run_id"] in listed.stdout
    shown = proctor("show", "latest", "--store", store, "--json")
    assert shown.returncode == 0
    assert json.loads(shown.stdout)["success_rate"] == summary["success_rate"]
    missing = proctor("show", "nope", "--store", store)
    assert missing.returncode == 2 and "no run matching 'nope'" in missing.stderr


def test_bad_agent_reference_is_a_clear_error(tmp_path: Path) -> None:
    done = proctor(
        "run",
        str(SUPPORT),
        "--agent",
        f"{SUPPORT}/agents.py:nobody",
        "--store",
        str(tmp_path / "p.db"),
    )
    assert done.returncode == 2
    assert "has no attribute 'nobody'" in done.stderr and "Traceback" not in done.stderr


def test_schema_is_json_schema_of_the_task_format() -> None:
    done = proctor("schema")
    schema = json.loads(done.stdout)
    assert done.returncode == 0
    task = schema["$defs"]["Task"]
    assert task["additionalProperties"] is False
    assert {"id", "domain", "prompt"} <= set(task["required"])
