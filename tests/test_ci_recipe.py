"""The README's CI recipe, run command for command on the support example.

The baseline block and the workflow's gate step are taken from README.md as written and
run through bash in a scratch folder (with `examples/` linked in), so the documented
recipe cannot drift from what works: a good candidate passes, a careless one fails the
build through the gate's exit code.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def readme_blocks(lang: str) -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def baseline_script() -> str:
    [block] = [b for b in readme_blocks("bash") if "proctor export" in b]
    return block


def workflow() -> dict:
    [block] = [b for b in readme_blocks("yaml") if "proctor gate" in b]
    return yaml.safe_load(block)


def gate_step() -> tuple[dict[str, str], str]:
    job = workflow()["jobs"]["gate"]
    [script] = [step["run"] for step in job["steps"] if "proctor gate" in step.get("run", "")]
    return job["env"], script


def bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    return subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=cwd,
        env={**os.environ, **env, "PATH": path, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    done = bash(baseline_script(), tmp_path, {})
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "baselines" / "support.jsonl").is_file()
    return tmp_path


def test_the_workflow_gates_on_the_regression_suite() -> None:
    env, script = gate_step()
    assert env["BASELINE"] == "baselines/support.jsonl"
    commands = [line.split()[:2] for line in script.strip().splitlines()]
    assert commands == [["proctor", "run"], ["proctor", "compare"], ["proctor", "gate"]]
    assert "--suite regression" in script and "--junit reports/junit.xml" in script


def test_a_good_candidate_passes_the_gate(workdir: Path) -> None:
    env, script = gate_step()
    done = bash(script, workdir, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "gate PASSED" in done.stdout and "SKIP" not in done.stdout
    report = ET.parse(workdir / "reports" / "junit.xml").getroot()
    assert report.get("tests") == "2" and report.get("failures") == "0"


def test_a_careless_candidate_fails_the_build(workdir: Path) -> None:
    env, script = gate_step()
    done = bash(script, workdir, {**env, "AGENT": "examples/support/agents.py:careless"})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "gate FAILED" in done.stdout
    assert "regressed: cancel-eligible-order, do-not-cancel-shipped-order" in done.stdout
    # the comparison ran before the gate and named the regressed tasks
    assert "cancel-eligible-order 3/3→0/3" in done.stdout
    report = ET.parse(workdir / "reports" / "junit.xml").getroot()
    assert report.get("tests") == "2" and report.get("failures") == "2"
