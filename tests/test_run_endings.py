"""How `proctor run` ends: never 0 without a complete summary, and JUnit always says why.

An agent calling `sys.exit(0)` under `--gate --junit` (issue 18 item 2), a run stopped
with Ctrl-C, and a grader that crashes (issue 11 item 11): each run ends with an exit
code that is not 0 unless the run completed, and a JUnit file a CI job can read.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from conftest import proctor
from proctor import Store

FIXTURES = Path(__file__).parent / "fixtures"
MINI = FIXTURES / "mini"

EXITS = """
import sys


def agent(input, toolbox):
    toolbox.call("items.get", {"item_id": "a"})
    sys.exit(0)
"""


def junit_cases(path: Path) -> dict[str, ET.Element]:
    return {case.get("name", ""): case for case in ET.parse(path).getroot().iter("testcase")}


def test_an_agent_calling_sys_exit_under_a_gate_gives_verdicts_and_junit(tmp_path: Path) -> None:
    (tmp_path / "agents.py").write_text(EXITS)
    (tmp_path / "g.yaml").write_text("rules:\n  - task_success_rate >= 0.5\n")
    result = proctor(
        "run", str(MINI), "--agent", f"{tmp_path / 'agents.py'}:agent", "--trials", "2",
        "--store", str(tmp_path / "p.db"), "--gate", str(tmp_path / "g.yaml"),
        "--junit", str(tmp_path / "j.xml"), "-q",
    )  # fmt: skip
    assert result.returncode == 1, result.stderr  # the gate fails: no task succeeded
    assert "gate FAILED" in result.stdout and "status completed" in result.stdout
    cases = junit_cases(tmp_path / "j.xml")
    assert set(cases) == {"read-item", "paint-item", "dated-item", "count-item"}
    for case in cases.values():
        failure = case.find("failure")
        assert failure is not None and "agent_crashed" in failure.get("message", "")
    assert "SystemExit: 0" in ET.tostring(cases["read-item"], encoding="unicode")


STALLS = """
import asyncio, pathlib


async def agent(input, toolbox):
    if input.trial == 3:
        pathlib.Path({flag!r}).touch()
        await asyncio.sleep(600)
    got = await toolbox.call("items.get", {{"item_id": "a"}})
    return f"Item a is {{got.value['colour']}}."
"""


def test_a_run_stopped_with_ctrl_c_exits_130_and_junit_says_so(tmp_path: Path) -> None:
    flag = tmp_path / "stalled"
    (tmp_path / "agents.py").write_text(STALLS.format(flag=str(flag)))
    db, junit = tmp_path / "p.db", tmp_path / "j.xml"
    run = subprocess.Popen(
        [
            sys.executable, "-m", "proctor.cli", "run", str(MINI), "--task", "read-item",
            "--agent", f"{tmp_path / 'agents.py'}:agent", "--trials", "6", "-j", "1",
            "--timeout", "0", "--store", str(db), "--junit", str(junit), "-q",
        ],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not flag.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # let the trials before it be committed (group commits: 0.1 s)
    run.send_signal(signal.SIGINT)
    _, err = run.communicate(timeout=120)
    assert run.returncode == 130, err
    assert "stopped by the user" in err and "--resume" in err and "Traceback" not in err
    error = junit_cases(junit)["(run)"].find("error")
    assert error is not None and "stopped by the user" in error.get("message", "")
    with Store(db, readonly=True) as store:
        (row,) = store.runs()
        assert row["status"] == "interrupted"
        assert store.trial_keys(row["run_id"]) == {("read-item", i) for i in range(3)}


CRASHING_GRADER = """

from proctor import grader


@grader("explodes", applies=lambda task: task.id == "read-item", replace=True)
def explodes(ctx):
    if ctx.trace.trial_id.endswith("#0"):
        raise ZeroDivisionError("a grader bug")
    return []
"""


def test_a_crashing_grader_makes_the_run_invalid_and_every_report_says_so(
    tmp_path: Path,
) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "domain.py").write_text((MINI / "domain.py").read_text() + CRASHING_GRADER)
    (suite / "read-item.yaml").write_text((MINI / "tasks" / "read-item.yaml").read_text())
    db, junit = tmp_path / "p.db", tmp_path / "j.xml"
    agent = f"{FIXTURES / 'exec_agents.py'}:flaky"
    # 1 error in 20 trials is within the 5% limit: only the grader crash invalidates it.
    result = proctor(
        "run", str(suite), "--agent", agent, "--trials", "20", "--store", str(db),
        "--junit", str(junit), "--json", str(tmp_path / "s.json"),
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "RUN INVALID: graders crashed on 1 trial" in result.stdout
    assert "status invalid" in result.stdout
    with Store(db, readonly=True) as store:
        (run_row,) = store.runs()
        [broken] = [r for r in store.trial_results(run_row["run_id"]) if r.trial == 0]
    assert broken.status == "error"
    [check] = [c for c in broken.checks if c.name == "grader_error"]
    assert check.evidence["grader"] == "explodes"
    assert "ZeroDivisionError: a grader bug" in check.evidence["exception"]
    summary = run_row["summary"]
    assert (summary["grader_errors"], summary["errors"], summary["valid"]) == (1, 1, False)
    assert summary["invalid_reasons"] == ["graders crashed on 1 trial"]
    error = junit_cases(junit)["(run)"].find("error")
    assert error is not None and error.get("message") == "graders crashed on 1 trial"
    report = proctor(
        "report", "latest", "--store", str(db), "--md", str(tmp_path / "r.md"),
        "--html", str(tmp_path / "r.html"),
    )  # fmt: skip
    assert report.returncode == 0, report.stderr
    markdown = (tmp_path / "r.md").read_text()
    assert "re-run before deciding" in markdown and "graders crashed on 1 trial" in markdown
    page = (tmp_path / "r.html").read_text()
    assert "re-run before deciding: the run is invalid (graders crashed on 1 trial)" in page
    gate = tmp_path / "g.yaml"
    gate.write_text("rules:\n  - task_success_rate >= 0\n")
    gated = proctor("gate", "latest", "--rules", str(gate), "--store", str(db))
    assert gated.returncode == 1 and "graders crashed on 1 trial" in gated.stdout


def test_an_agent_module_exiting_as_it_loads_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "agents.py").write_text("import sys\nsys.exit(0)\n")
    result = proctor(
        "run", str(MINI), "--agent", f"{tmp_path / 'agents.py'}:agent",
        "--store", str(tmp_path / "p.db"),
    )  # fmt: skip
    assert result.returncode == 2
    assert "importing failed: SystemExit: 0" in result.stderr
    assert not (tmp_path / "p.db").exists()  # refused before any store was opened
