"""The Runner: isolated trials, who-broke-what statuses, timeouts, seeds, the summary.

Agents here are small hand-written classes and functions; the fixture domain's tools
return live state objects, so isolation is proven by the gateway's copies, not assumed.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import enum
import gc
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from proctor import (
    AgentInput,
    AgentResult,
    Domain,
    InfrastructureError,
    Misbehaviour,
    Plan,
    Runner,
    ScriptedAgent,
    Step,
    Store,
    SyncToolbox,
    Task,
    Toolbox,
    load_suite,
)
from proctor.env import Environment
from proctor.run import TrialSpec, run_trial, runner, trial_seed
from proctor.store.sqlite import EncodedTrial

MINI = Path(__file__).parent / "fixtures" / "mini"
SUITE = load_suite(MINI)
READ = SUITE.select(ids=["read-item"])

PRISTINE_A = {"colour": "red", "tags": ["x"]}
PRISTINE_IDENTITY = {"user": "u1", "tenant": "t1", "scopes": ["items:read"], "role": None}


def run(suite: Any, agent: Any, tmp_path: Path | None = None, **kwargs: Any) -> Any:
    store = Store(tmp_path / "p.db") if tmp_path is not None else None
    kwargs.setdefault("timeout_s", 5.0)
    report = Runner(suite, agent, store=store, **kwargs).run()
    return report, store


def statuses(report: Any) -> dict[int, str]:
    return {r.trial: r.status for r in report.results}


def by_trial(report: Any) -> dict[int, Any]:
    return {r.trial: r for r in report.results}


async def read_a(toolbox: Toolbox) -> str:
    got = await toolbox.call("items.get", {"item_id": "a"})
    return f"Item a is {got.value['colour']}."


def read_a_sync(toolbox: SyncToolbox) -> str:
    got = toolbox.call("items.get", {"item_id": "a"})
    return f"Item a is {got.value['colour']}."


# -- isolation ---------------------------------------------------------------------------------


class Mutator:
    """Trial 0 vandalises everything it was handed; later trials report what they see."""

    name = "mutator"

    def __init__(self) -> None:
        self.mutated = asyncio.Event()
        self.seen: dict[int, dict[str, Any]] = {}

    async def run(self, input: AgentInput, toolbox: Toolbox) -> str:
        if input.trial != 0:
            await self.mutated.wait()
        got = await toolbox.call("items.get", {"item_id": "a"})
        listing = await toolbox.call("items.list")
        self.seen[input.trial] = copy.deepcopy(
            {
                "identity": input.identity,
                "tools": input.tools,
                "toolbox_tools": toolbox.tools,
                "item": got.value,
                "listing": listing.value,
            }
        )
        answer = f"Item a is {got.value['colour']}."
        if input.trial == 0:
            got.value["colour"] = "hacked"
            got.value["tags"].append("evil")
            listing.value["b"]["colour"] = "hacked"
            listing.value["intruder"] = {"colour": "black"}
            input.identity["scopes"].append("items:write")
            input.identity["tenant"] = "evil"
            input.tools[0]["parameters"]["properties"].clear()
            input.tools.clear()
            toolbox.tools[0]["name"] = "renamed"
            self.mutated.set()
        return answer


@pytest.mark.parametrize("concurrency", [1, 3])
def test_a_trial_cannot_change_another_trials_world(tmp_path: Path, concurrency: int) -> None:
    agent = Mutator()
    report, store = run(READ, agent, tmp_path, trials=3, concurrency=concurrency)
    assert statuses(report) == {0: "passed", 1: "passed", 2: "passed"}
    first = agent.seen[0]
    assert first["identity"] == PRISTINE_IDENTITY
    assert {t["name"] for t in first["tools"]} == set(READ.tasks[0].domain.tools)
    for trial in (1, 2):
        seen = agent.seen[trial]
        assert seen["item"] == PRISTINE_A
        assert seen["listing"] == {"a": PRISTINE_A, "b": {"colour": "blue", "tags": []}}
        assert seen["identity"] == PRISTINE_IDENTITY
        assert seen["tools"] == first["tools"]
        assert seen["toolbox_tools"] == first["tools"]
        _, answer, outcome = store.trace(report.run_id, "read-item", trial)
        assert answer == "Item a is red."
        assert outcome is not None
        assert outcome.final_state["items"]["a"] == PRISTINE_A
    # Not even the vandal's own world changed: it only touched copies.
    _, _, outcome0 = store.trace(report.run_id, "read-item", 0)
    assert outcome0.final_state["items"] == {"a": PRISTINE_A, "b": {"colour": "blue", "tags": []}}
    assert READ.tasks[0].task.initial_state["items"]["a"] == PRISTINE_A
    assert READ.tasks[0].task.identity.scopes == ["items:read"]


def test_what_an_agent_is_given_is_its_own_copy_to_the_last_nested_setting() -> None:
    """A task's identity, tools and settings are made once and loaded per trial: a trial
    changing them, however deep, changes neither the task nor what a later trial gets."""
    member = READ.tasks[0]
    task = member.task.model_copy(
        update={"metadata": {"agent": {"system": "be brief", "limits": {"steps": [3, 5]}}}}
    )
    seen: list[dict[str, Any]] = []

    def vandal(input: AgentInput, toolbox: SyncToolbox) -> str:
        seen.append(copy.deepcopy({"settings": input.settings, "tools": input.tools}))
        input.settings["limits"]["steps"].append(99)
        input.settings["system"] = "leak"
        input.identity["scopes"].append("items:write")
        input.tools[0]["parameters"]["properties"].clear()
        return read_a_sync(toolbox)

    for trial in range(2):
        spec = TrialSpec("isolation", task, member.domain, trial, seed=trial)
        record = asyncio.run(run_trial(spec, vandal, 5.0))
        assert record.result.status == "passed"
    assert seen[1] == seen[0]
    assert seen[0]["settings"] == {"system": "be brief", "limits": {"steps": [3, 5]}}
    assert task.metadata["agent"]["limits"]["steps"] == [3, 5]
    assert task.identity.scopes == ["items:read"]


class Mode(enum.StrEnum):
    """A setting's value marshal cannot write (a subclass of str)."""

    FAST = "fast"


def test_settings_marshal_cannot_write_are_still_each_trials_own_copy() -> None:
    """The bytes a task's givens load from cannot hold an enum member: those trials get
    copies made for them, as isolated as the others."""
    member = READ.tasks[0]
    task = member.task.model_copy(
        update={"metadata": {"agent": {"mode": Mode.FAST, "limits": {"steps": [3]}}}}
    )
    seen: list[dict[str, Any]] = []

    def vandal(input: AgentInput, toolbox: SyncToolbox) -> str:
        seen.append(copy.deepcopy(input.settings))
        input.settings["limits"]["steps"].append(99)
        input.settings["mode"] = "leak"
        return read_a_sync(toolbox)

    for trial in range(2):
        spec = TrialSpec("isolation", task, member.domain, trial, seed=trial)
        record = asyncio.run(run_trial(spec, vandal, 5.0))
        assert record.result.status == "passed"
    assert seen[0] == seen[1] == {"mode": Mode.FAST, "limits": {"steps": [3]}}
    assert task.metadata["agent"] == {"mode": Mode.FAST, "limits": {"steps": [3]}}


def test_tools_named_by_an_enum_member_are_offered_as_fresh_copies() -> None:
    """A tool whose name marshal cannot write is offered from schemas made per trial."""
    domain = Domain("enum-tools")

    @domain.tool(Mode.FAST)
    def fast(state: dict[str, Any], n: int) -> int:
        """Echo."""
        return n

    task = Task.model_validate({"id": "t", "domain": "enum-tools", "prompt": "p"})
    first = Environment.fresh(task, domain, seed=1).gateway.schemas()
    first[0]["parameters"]["properties"].clear()
    again = Environment.fresh(task, domain, seed=1).gateway.schemas()
    assert again[0]["name"] == "fast" and "n" in again[0]["parameters"]["properties"]


# -- who broke: agent crash, infrastructure, environment ---------------------------------------


class SyncCrasher:
    def run(self, input: AgentInput, toolbox: SyncToolbox) -> str:
        answer = read_a_sync(toolbox)
        if input.trial == 0:
            raise ValueError("boom")
        return answer


async def async_crasher(input: AgentInput, toolbox: Toolbox) -> str:
    answer = await read_a(toolbox)
    if input.trial == 0:
        raise ValueError("boom")
    return answer


@pytest.mark.parametrize("agent", [SyncCrasher(), async_crasher], ids=["sync", "async"])
def test_agent_exception_is_a_failed_trial_with_agent_crashed(tmp_path: Path, agent: Any) -> None:
    report, store = run(READ, agent, tmp_path, trials=2)
    assert statuses(report) == {0: "failed", 1: "passed"}
    crashed = by_trial(report)[0]
    [check] = [c for c in crashed.checks if c.name == "agent_crashed"]
    assert check.passed is False
    assert check.evidence["exception"] == "ValueError: boom"
    assert "ValueError" in crashed.error
    assert not any(c.name == "agent_crashed" for c in by_trial(report)[1].checks)
    summary = report.summary
    assert summary.status == "completed"
    assert (summary.valid_trials, summary.passed_trials, summary.errors) == (2, 1, 0)
    assert summary.per_task[0].failed_checks["agent_crashed"] == 1
    assert store.run(report.run_id)["status"] == "completed"
    # The call made before the crash is kept in the trace.
    trace, _, _ = store.trace(report.run_id, "read-item", 0)
    assert [e.data["tool"] for e in trace.of_kind("tool_proposal")] == ["items.get"]


class Flaky:
    """A provider outage on trial 0: the harness's problem, not the agent's."""

    async def run(self, input: AgentInput, toolbox: Toolbox) -> str:
        if input.trial == 0:
            raise InfrastructureError("HTTP 503 from the provider")
        return await read_a(toolbox)


def test_infrastructure_error_is_excluded_from_the_denominator(tmp_path: Path) -> None:
    report, store = run(READ, Flaky(), tmp_path, trials=4)
    assert statuses(report) == {0: "error", 1: "passed", 2: "passed", 3: "passed"}
    assert "HTTP 503" in by_trial(report)[0].error
    s = report.summary
    assert (s.trials, s.valid_trials, s.passed_trials, s.errors) == (4, 3, 3, 1)
    assert s.success_rate == 1.0
    assert s.error_rate == 0.25
    assert s.per_task[0].n == 3
    assert s.per_task[0].errors == 1
    # 25% errors > the default 5%: the run is invalid, in the report and in the store.
    assert (s.valid, s.status) == (False, "invalid")
    assert store.run(report.run_id)["status"] == "invalid"


def test_error_rate_within_the_threshold_keeps_the_run_valid() -> None:
    report, _ = run(READ, Flaky(), trials=4, max_error_rate=0.25)
    assert report.summary.errors == 1
    assert (report.summary.valid, report.summary.status) == (True, "completed")


class FaultSwallower:
    async def run(self, input: AgentInput, toolbox: Toolbox) -> str:
        with contextlib.suppress(Exception):  # the agent hides the environment's fault
            await toolbox.call("items.crash")
        return await read_a(toolbox)


def test_swallowed_environment_fault_still_gives_error() -> None:
    report, _ = run(READ, FaultSwallower(), trials=2)
    assert statuses(report) == {0: "error", 1: "error"}
    assert "EnvironmentFault" in by_trial(report)[0].error
    assert report.summary.valid_trials == 0
    assert report.summary.status == "invalid"


# -- timeouts ----------------------------------------------------------------------------------


async def hangs_on_trial_0(input: AgentInput, toolbox: Toolbox) -> str:
    if input.trial == 0:
        await asyncio.sleep(1000)
    return await read_a(toolbox)


def test_hanging_async_agent_times_out_and_the_run_completes() -> None:
    report, _ = run(READ, hangs_on_trial_0, trials=3, concurrency=3, timeout_s=0.2)
    assert statuses(report) == {0: "timeout", 1: "passed", 2: "passed"}
    assert "0.2" in by_trial(report)[0].error
    s = report.summary
    # A timeout is the agent's failure: a valid trial, not an error.
    assert (s.status, s.timeouts, s.errors, s.valid_trials) == ("completed", 1, 0, 3)


async def slow_then_hangs(input: AgentInput, toolbox: Toolbox) -> str:
    """Trials 0 and 1 take 0.6 s of their 1 s; trial 2 never ends."""
    await asyncio.sleep(1000 if input.trial == 2 else 0.6)
    return await read_a(toolbox)


def test_each_turn_on_a_lane_is_timed_from_its_own_start() -> None:
    """One timer keeps a lane's limits: set during trial 0 for trial 0's limit, it fires
    0.4 s into trial 1, which still has 0.6 s (timed from trial 0's start, trial 1 would
    be a timeout); and it is set again, so trial 2 still times out."""
    report, _ = run(READ, slow_then_hangs, trials=3, concurrency=1, timeout_s=1.0)
    assert statuses(report) == {0: "passed", 1: "passed", 2: "timeout"}


class BlockingSync:
    """A sync agent stuck in its thread on trial 0 (a blocking call that never returns)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.finished = threading.Event()

    def run(self, input: AgentInput, toolbox: SyncToolbox) -> str:
        if input.trial == 0:
            self.release.wait(30)
            self.finished.set()
            return "too late"
        return read_a_sync(toolbox)


def test_hanging_sync_agent_times_out_and_the_run_completes() -> None:
    agent = BlockingSync()
    try:
        report, _ = run(READ, agent, trials=3, concurrency=3, timeout_s=0.2)
        assert statuses(report) == {0: "timeout", 1: "passed", 2: "passed"}
        assert report.summary.status == "completed"
        assert not agent.finished.is_set()  # the run did not wait for the stuck thread
    finally:
        agent.release.set()
    assert agent.finished.wait(5)


class LateCaller:
    """Trial 0 wakes after its timeout and tries to change the world."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.done = threading.Event()
        self.late: list[str] = []

    def run(self, input: AgentInput, toolbox: SyncToolbox) -> str:
        if input.trial != 0:
            return read_a_sync(toolbox)
        self.release.wait(30)
        try:
            toolbox.call("items.get", {"item_id": "a"})
            toolbox.call("items.bump", {"item_id": "a"})
            self.late.append("accepted")
        except Exception as exc:
            self.late.append(type(exc).__name__)
        finally:
            self.done.set()
        return "late"


class WakeBeforeWrite(Store):
    """Lets the stuck agent loose after its trial ended but before the trial is stored
    (encoded: what is inserted then is that text)."""

    def __init__(self, path: Path, agent: LateCaller) -> None:
        super().__init__(path)
        self.agent = agent

    def encoded_trial(self, result: Any, trace: Any, answer: str, outcome: Any) -> EncodedTrial:
        if result.status == "timeout":
            self.agent.release.set()
            assert self.agent.done.wait(10)
        return super().encoded_trial(result, trace, answer, outcome)


def test_calls_after_the_timeout_cannot_reach_the_stored_trace(tmp_path: Path) -> None:
    agent = LateCaller()
    store = WakeBeforeWrite(tmp_path / "p.db", agent)
    try:
        report = Runner(READ, agent, trials=2, timeout_s=0.2, store=store).run()
    finally:
        agent.release.set()
    assert agent.late == ["GatewayClosed"]
    assert statuses(report) == {0: "timeout", 1: "passed"}
    trace, answer, outcome = store.trace(report.run_id, "read-item", 0)
    assert [e.kind for e in trace.events] == ["message", "answer"]  # the prompt, then the answer
    assert answer == ""
    assert outcome.ledger == []
    assert outcome.final_state["items"]["a"] == PRISTINE_A


class IgnoresCancellation:
    async def run(self, input: AgentInput, toolbox: Toolbox) -> str:
        with contextlib.suppress(asyncio.CancelledError):  # it carries on past its limit
            await asyncio.sleep(1000)
        return await read_a(toolbox)


def test_agent_swallowing_cancellation_still_times_out() -> None:
    report, _ = run(READ, IgnoresCancellation(), trials=1, timeout_s=0.2)
    assert statuses(report) == {0: "timeout"}


# -- agent shapes ------------------------------------------------------------------------------


class SyncReader:
    name = "sync-reader"

    def run(self, input: AgentInput, toolbox: SyncToolbox) -> AgentResult:
        return AgentResult(answer=read_a_sync(toolbox))


class AsyncReader:
    async def run(self, input: AgentInput, toolbox: Toolbox) -> str:
        return await read_a(toolbox)


def plain_sync(input: AgentInput, toolbox: SyncToolbox) -> str:
    return read_a_sync(toolbox)


async def plain_async(input: AgentInput, toolbox: Toolbox) -> str:
    return await read_a(toolbox)


@pytest.mark.parametrize(
    "agent",
    [SyncReader(), AsyncReader(), plain_sync, plain_async],
    ids=["sync-class", "async-class", "sync-function", "async-function"],
)
def test_every_agent_shape_passes(agent: Any) -> None:
    report, _ = run(READ, agent, trials=2, concurrency=2)
    assert statuses(report) == {0: "passed", 1: "passed"}
    assert report.results[0].metrics["tool_calls"] == 1


def test_a_wrong_answer_fails_so_shapes_are_really_graded() -> None:
    def wrong(input: AgentInput, toolbox: SyncToolbox) -> str:
        toolbox.call("items.get", {"item_id": "a"})
        return "Item a is blue."

    report, _ = run(READ, wrong)
    assert statuses(report) == {0: "partial"}  # the call was made, the answer is wrong
    assert [c.name for c in report.results[0].failed_checks] == ["mentions:red"]


# -- seeds -------------------------------------------------------------------------------------

PLANS = {
    "read-item": Plan(steps=(Step("items.get", {"item_id": "a"}),), answer="Item a is red."),
}


def test_same_seed_same_verdicts_and_seeds() -> None:
    def verdicts(seed: int) -> list[tuple[int, int, str]]:
        agent = ScriptedAgent(PLANS, Misbehaviour(skip_lookup=0.5), latency_s=0.0)
        report, _ = run(READ, agent, trials=10, concurrency=4, seed=seed)
        return sorted((r.trial, r.seed, r.status) for r in report.results)

    first, second = verdicts(3), verdicts(3)
    assert first == second
    assert [s for _, s, _ in first] == [trial_seed(3, "read-item", i) for i in range(10)]
    # The seed really drives the agent's behaviour: both verdicts occur...
    assert {v for _, _, v in first} == {"passed", "failed"}
    # ...and another run seed gives other trial seeds.
    other = verdicts(4)
    assert {s for _, s, _ in other}.isdisjoint({s for _, s, _ in first})


# -- the summary -------------------------------------------------------------------------------


class HalfRight:
    """Always right on read-item; right on dated-item only in trial 0."""

    async def run(self, input: AgentInput, toolbox: Toolbox) -> str:
        if input.task_id == "read-item":
            return await read_a(toolbox)
        got = await toolbox.call("items.get", {"item_id": "d"})
        return f"Made on {got.value['made']}." if input.trial == 0 else "I do not know."


@pytest.mark.parametrize("young", [700, 0])
def test_young_collections_are_rarer_only_while_a_run_lasts(young: int) -> None:
    """The young generation's threshold is raised for the run and restored after, and a
    collector switched off by threshold 0 stays off."""
    before = gc.get_threshold()
    gc.set_threshold(young, *before[1:])
    during: list[tuple[int, int, int]] = []
    try:
        runner_ = Runner(SUITE.select(ids=["read-item"]), HalfRight(), trials=2)
        runner_.run(lambda _: during.append(gc.get_threshold()))
        after = gc.get_threshold()
    finally:
        gc.set_threshold(*before)
    raised = runner.YOUNG_COLLECTION_EVERY if young else 0
    assert during == [(raised, *before[1:])] * 2
    assert after == (young, *before[1:])


def test_summary_fields() -> None:
    suite = SUITE.select(ids=["read-item", "dated-item"])
    report, _ = run(suite, HalfRight(), trials=3, concurrency=2)
    s = report.summary
    # short: asyncio.run writes its task's repr, this report, as it ends
    assert repr(report) == f"RunReport({report.run_id!r}, completed, 6 trials)"
    assert (s.tasks, s.trials, s.expected_trials, s.missing_trials) == (2, 6, 6, 0)
    assert (s.valid_trials, s.passed_trials) == (6, 4)
    assert s.success_rate == pytest.approx(4 / 6)
    assert s.statuses == {
        "passed": 4,
        "partial": 0,
        "failed": 2,
        "timeout": 0,
        "error": 0,
        "needs_review": 0,
        "sim_error": 0,
    }
    assert list(s.pass_at_k) == ["1", "2", "3"]
    assert list(s.pass_hat_k) == ["1", "2", "3"]
    # Per task (c of n): read-item 3/3, dated-item 1/3.
    assert s.pass_at_k["1"] == pytest.approx((1 + 1 / 3) / 2)
    assert s.pass_at_k["2"] == pytest.approx((1 + 2 / 3) / 2)
    assert s.pass_at_k["3"] == pytest.approx(1.0)
    assert s.pass_hat_k["1"] == pytest.approx((1 + 1 / 3) / 2)
    assert s.pass_hat_k["2"] == pytest.approx(0.5)
    assert s.pass_hat_k["3"] == pytest.approx(0.5)
    per_task = {t.id: t for t in s.per_task}
    assert set(per_task) == {"read-item", "dated-item"}
    read, dated = per_task["read-item"], per_task["dated-item"]
    assert (read.n, read.passed, read.failed_checks) == (3, 3, {})
    assert read.pass_hat_k == {"1": 1.0, "2": 1.0, "3": 1.0}
    assert (dated.n, dated.passed) == (3, 1)
    assert dated.pass_hat_k == pytest.approx({"1": 1 / 3, "2": 0.0, "3": 0.0})
    assert dated.failed_checks == {"mentions:2024-01-05": 2}
    assert s.slices["tag:read"].valid_trials == 6
    assert s.status == "completed"


class RefusesTrialOne(Store):
    """A store whose insert of trial 1 fails alone, as a trial stored already does."""

    def insert_trial(self, encoded: EncodedTrial) -> None:
        if encoded.row[2] == 1:
            raise sqlite3.IntegrityError("UNIQUE constraint failed: trials.run_id")
        super().insert_trial(encoded)


def test_a_trial_that_fails_alone_ends_the_run_and_its_group_is_kept(tmp_path: Path) -> None:
    """The group's trials are inserted at its commit: the one that fails is raised after
    the others are committed, and the run is stored as interrupted."""
    store = RefusesTrialOne(tmp_path / "p.db")
    runner = Runner(READ, plain_async, trials=3, store=store)
    with pytest.raises(sqlite3.IntegrityError):
        runner.run()
    store.close()
    with Store(tmp_path / "p.db") as kept:  # a connection of its own: committed rows only
        assert sorted(r.trial for r in kept.trial_results(runner.run_id)) == [0, 2]
        assert kept.select("run", "SELECT status FROM runs") == [("interrupted",)]
