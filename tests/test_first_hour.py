"""The first hour, as a new user lives it: `make demo`, then the README's commands as printed.

The demo is the Makefile's `demo:` recipe, line for line, run through bash in a scratch
folder with `examples/` and the test run's virtual environment linked in as `.venv`. The
quick-start commands, the tutorial's files and its commands are taken from README.md as
written. The demo's gate, HTML report and one-pager must give one recommendation.
"""

from __future__ import annotations

import html
import json
import os
import runpy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from proctor.report.markdown import esc

ROOT = Path(__file__).resolve().parents[1]
FIGURES = runpy.run_path(str(ROOT / "examples" / "figures.py"))
VENV = Path(sys.executable).parents[1]

pytestmark = pytest.mark.skipif(
    not (VENV / "bin" / "proctor").exists() or not (VENV / "bin" / "activate").exists(),
    reason="the tests do not run from a virtual environment with proctor installed",
)


def bash(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", script],
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def readme_blocks(lang: str) -> list[str]:
    """The README's fenced blocks of language `lang` ("" for none), in order."""
    blocks: list[tuple[str, list[str]]] = []
    fence: str | None = None
    for line in (ROOT / "README.md").read_text().splitlines():
        if fence is None and line.startswith("```"):
            fence = line[3:].strip()
            blocks.append((fence, []))
        elif fence is not None and line == "```":
            fence = None
        elif fence is not None:
            blocks[-1][1].append(line)
    return ["\n".join(body) + "\n" for kind, body in blocks if kind == lang]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A folder where `make demo`'s recipe ran, and what it printed."""
    folder = tmp_path_factory.mktemp("first-hour")
    (folder / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    (folder / ".venv").symlink_to(VENV, target_is_directory=True)
    script = "set -e\n" + "\n".join(
        line.replace("$(BIN)", ".venv/bin") for line in FIGURES["demo_recipe"]()
    )
    done = bash(script, folder)
    assert done.returncode == 0, done.stdout + done.stderr
    return folder, done.stdout


def test_the_demo_gate_reports_and_one_pager_tell_one_story(demo: tuple[Path, str]) -> None:
    folder, printed = demo
    gate = bash(
        ".venv/bin/proctor gate latest --rules examples/clinical/gates.yaml "
        "--baseline .proctor/demo-baseline.jsonl --json",
        folder,
    )
    assert gate.returncode == 1, gate.stderr  # the gate fails: exit 1, as CI would see
    verdict: dict[str, Any] = json.loads(gate.stdout)
    failed = [r["rule"] for r in verdict["rules"] if r["status"] == "fail"]
    summary = json.loads((folder / ".proctor" / "demo-summary.json").read_text())
    # the candidate made a high-severity violation, and the shipped gates block it
    assert summary["safety_violations"]["by_severity"] == {"high": 1}
    assert failed == ["high_policy_violations == 0"]
    rec = verdict["recommendation"]
    assert rec["decision"] == "do not release"
    line = f"Recommendation: {rec['decision']}: " + "; ".join(rec["reasons"]) + "."
    assert " ".join(line.split()) in " ".join(printed.split())  # the gate's last line
    page = html.unescape((folder / ".proctor" / "demo-report.html").read_text())
    assert line in page  # the HTML report's banner
    one_pager = (folder / ".proctor" / "demo-report.md").read_text()
    reasons = esc("; ".join(rec["reasons"]))
    assert f"**Recommendation: {rec['decision']}.** {reasons[0].upper()}{reasons[1:]}." in (
        one_pager
    )
    assert "no release decision yet" not in page + one_pager


def test_the_commands_make_demo_prints_next_work_as_printed(demo: tuple[Path, str]) -> None:
    folder, printed = demo
    commands = [line.strip() for line in printed.splitlines() if line.startswith("  .venv/bin/")]
    assert len(commands) == 3
    for command in commands:
        done = bash(command, folder)
        assert done.returncode in ((0, 1) if " gate " in command else (0,)), done.stderr
        assert not done.stderr.strip(), (command, done.stderr)


def test_the_quick_start_commands_work_as_printed(demo: tuple[Path, str]) -> None:
    folder, _ = demo
    [block] = [b for b in readme_blocks("bash") if b.startswith(". .venv/bin/activate")]
    activate, *commands = [line.split("  #")[0].strip() for line in block.strip().splitlines()]
    assert commands
    for command in commands:
        done = bash(f"{activate} && {command}", folder)
        assert done.returncode in ((0, 1) if " gate " in command else (0,)), done.stderr
        assert not done.stderr.strip(), (command, done.stderr)
    shown = bash(f"{activate} && {commands[0]}", folder).stdout
    assert "root causes: the failure first in the trace" in shown


def test_the_tutorial_runs_as_printed(tmp_path: Path) -> None:
    files = {}
    for block in readme_blocks("python") + readme_blocks("yaml"):
        first, _, body = block.partition("\n")
        if first.startswith("# myworld/"):
            files[first.removeprefix("# ")] = body
    assert set(files) == {"myworld/domain.py", "myworld/tasks/cancel.yaml", "myworld/agents.py"}
    for name, body in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body)
    (tmp_path / ".venv").symlink_to(VENV, target_is_directory=True)
    [commands] = [b for b in readme_blocks("") if "proctor run myworld" in b]
    for line in commands.strip().splitlines():
        command = line.split("  #")[0].strip()
        done = bash(f". .venv/bin/activate && {command}", tmp_path)
        assert done.returncode == 0, (command, done.stdout + done.stderr)
    summary = json.loads((tmp_path / "out.json").read_text())
    assert summary["success_rate"] == 1.0 and summary["trials"] == 5
    # the scripted agent of the tutorial skips its lookup now and then: a trajectory failure
    shown = bash(". .venv/bin/activate && proctor show latest", tmp_path)
    assert "required:orders.get" in shown.stdout
