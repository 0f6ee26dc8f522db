"""`make real-model`'s table of steps (benchmarks/real_model/steps.py) reads what the run's
own JSON says: the agent step's passed trials and tokens, the judge step's calls and
verdicts, calibration's decision. Checked on real CLI runs of the examples with scripted
agents and judges, so no model is needed."""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from proctor.cli import main

ROOT = Path(__file__).resolve().parents[1]
KYC = ROOT / "examples" / "kyc"
STEPS = runpy.run_path(str(ROOT / "benchmarks" / "real_model" / "steps.py"))


def cli(*args: str) -> Any:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code in (0, 1), result.output
    return result


def test_the_agent_and_judge_rows_are_the_runs_summaries(tmp_path: Path) -> None:
    support = ROOT / "examples" / "support"
    out = tmp_path / "agent.json"
    cli("run", str(support), "--agent", f"{support}/agents.py:scripted", "-k", "2",
        "--store", str(tmp_path / "s.db"), "--json", str(out), "--quiet")  # fmt: skip
    summary = json.loads(out.read_text())
    agent = STEPS["agent_figures"](summary)
    assert (agent["trials"], agent["passed"]) == (summary["trials"], summary["passed_trials"])
    out = tmp_path / "judge.json"
    cli("run", str(KYC / "tasks" / "cases.yaml"), "--agent", f"{KYC}/agents.py:hasty",
        "--tags", "missing_docs", "--judge", f"{KYC / 'judges.py'}:careful",
        "--store", str(tmp_path / "s.db"), "--json", str(out), "--quiet")  # fmt: skip
    judged = json.loads(out.read_text())["judges"]
    judge = STEPS["judge_figures"](json.loads(out.read_text()))
    assert judge["checks"] == judged["checks"] > 0
    assert judge["passed"] == judged["by_rubric"]["judge:document-request"]["passed"]
    entry = {"date": "2026-12-05", "load": [1.0, 2.0]}
    block = STEPS["steps_block"](
        {
            "steps": {
                "agent": {**entry, "figures": agent, "s": 130.0},
                "judge": {**entry, "figures": judge, "s": 40.0},
            }
        }
    )
    assert f"{agent['passed']}/{agent['trials']} passed" in block
    assert f"{judge['passed']}/{judge['checks']} requests passed" in block
    assert "| server start | not run yet |" in block and "2.2 min" in block
    # an install found already made took no install's time: the row says so, with none
    cached = {**entry, "figures": {"model_mb": 291.0, "cached": True}, "s": 0.0}
    row = STEPS["steps_block"]({"steps": {"install": cached}}).splitlines()[2]
    assert row.startswith("| install (pip + npm) | 291 MB model (installed before")
    assert "| 0 s |" not in row and "|  |" in row


def test_the_calibration_row_says_what_calibrate_decided(tmp_path: Path) -> None:
    rubric, judge = KYC / "rubrics" / "document-request.yaml", f"{KYC / 'judges.py'}:careful"
    result = cli("calibrate", str(rubric), "--labels", str(KYC / "labels.csv"), "--items",
                 str(KYC / "messages.yaml"), "--judge", judge, "--store", str(tmp_path / "s.db"),
                 "--json")  # fmt: skip
    record = json.loads(result.output)
    found = STEPS["calibrate_figures"](record)
    block = STEPS["steps_block"](
        {"steps": {"calibrate": {"date": "d", "load": [1, 1], "figures": found, "s": 9.0}}}
    )
    assert f"{record['figures']['items']} agreed items" in block
    assert ("accepted" in block) == record["accepted"]


def test_no_run_yet_says_so() -> None:
    assert STEPS["steps_block"]({}) == "Not measured yet: `make real-model`.\n"
