"""Worker processes that die (issue 11 item 14): in the agent's turn it is the agent's
failure, while grading it is the harness's. Agents are written here, loaded by reference."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from proctor import Runner, Store, load_agent, load_suite
from proctor.run.process import ProcessExecutor

MINI = Path(__file__).parent / "fixtures" / "mini"

AGENTS = """
import ctypes, multiprocessing, os

from proctor import grader


async def dies(input, toolbox):
    got = await toolbox.call("items.get", {"item_id": "a"})
    if input.trial == 0:
        os._exit(7)
    if input.trial == 1:
        ctypes.string_at(0)  # a crash in native code: SIGSEGV
    return f"Item a is {got.value['colour']}."


async def reads(input, toolbox):
    got = await toolbox.call("items.get", {"item_id": "a"})
    return f"Item a is {got.value['colour']}."


@grader("dies-while-grading", applies=lambda task: task.id == "read-item", replace=True)
def dies_while_grading(ctx):
    if multiprocessing.parent_process() is not None and ctx.trace.trial_id.endswith("#1"):
        os._exit(9)  # only in a worker: a harness crash after the agent's turn
    return []
"""


#: An agent whose workers never die (no grader that kills them).
PLAIN = """
async def reads(input, toolbox):
    got = await toolbox.call("items.get", {"item_id": "a"})
    return f"Item a is {got.value['colour']}."
"""


def suite_with_agents(tmp_path: Path, agents: str = AGENTS) -> tuple[Any, str]:
    folder = tmp_path / "suite"
    shutil.copytree(MINI, folder)
    (tmp_path / "agents.py").write_text(agents)
    return load_suite(folder).select(ids=["read-item"]), str(tmp_path / "agents.py")


def run(tmp_path: Path, name: str, agents: str = AGENTS) -> tuple[Any, Store]:
    suite, agents = suite_with_agents(tmp_path, agents)
    ref = f"{agents}:{name}"
    store = Store(tmp_path / "p.db")
    runner = Runner(
        suite, load_agent(ref), trials=4, concurrency=1, timeout_s=20, store=store,
        agent_ref=ref, executor=ProcessExecutor(),
    )  # fmt: skip
    return runner.run(), store


def test_a_worker_dying_in_the_agents_turn_is_the_agents_failure(tmp_path: Path) -> None:
    report, store = run(tmp_path, "dies")
    trials = {r.trial: r for r in report.results}
    assert {t: r.status for t, r in trials.items()} == {
        0: "failed",
        1: "failed",
        2: "passed",
        3: "passed",
    }
    codes = {}
    for trial in (0, 1):
        [crash] = [c for c in trials[trial].checks if c.name == "agent_crashed"]
        codes[trial] = crash.evidence["exit_code"]
        assert "died in its turn" in crash.evidence["exception"]
    assert codes == {0: 7, 1: -11}
    summary = report.summary
    assert (summary.status, summary.errors, summary.valid_trials) == ("completed", 0, 4)
    stored = {r.trial: r.checks for r in store.trial_results(report.run_id)}
    assert [c.name for c in stored[0]] == ["agent_crashed"]


def test_a_worker_dying_while_grading_is_the_harnesss_error(tmp_path: Path) -> None:
    report, _ = run(tmp_path, "reads")
    trials = {r.trial: r for r in report.results}
    assert trials[1].status == "error"
    assert "died while grading" in (trials[1].error or "")
    assert {trials[t].status for t in (0, 2, 3)} == {"passed"}


def test_a_trial_sent_to_a_worker_that_already_ended_goes_to_a_fresh_one(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """A worker can die after its last answer, while the next trial is being sent ahead:
    the broken pipe is not the run's end, the trial never reached a worker and is played
    by a fresh one (the trial before it is read from the pipe as usual)."""
    from proctor.run import process

    real_send = process.Worker.send
    broken: list[int] = []

    def send(worker: Any, fn: Any, job: Any) -> None:
        if job[0] == 2 and not broken:  # the second trial finds the pipe closed
            broken.append(job[0])
            raise BrokenPipeError(32, "Broken pipe")
        real_send(worker, fn, job)

    monkeypatch.setattr(process.Worker, "send", send)
    report, _ = run(tmp_path, "reads", PLAIN)
    assert broken == [2]
    assert sorted((r.trial, r.status) for r in report.results) == [(t, "passed") for t in range(4)]


def test_regrading_keeps_the_crash_of_a_lost_trial(tmp_path: Path) -> None:
    from proctor.run.regrade import regrade

    report, store = run(tmp_path, "dies")
    suite, _ = suite_with_agents(tmp_path / "again")
    done = regrade(store, report.run_id, suite)
    again = {r.trial: r for r in store.trial_results(done.run_id)}
    assert again[0].status == "failed"
    assert [c.name for c in again[0].checks] == ["agent_crashed"]
