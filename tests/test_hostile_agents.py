"""Agents that attack the harness: each case is an attacker's agent, run through the Runner.

Whatever an agent does (raise CancelledError or SystemExit, hang its thread or its event
loop, hand back non-JSON values, forge its usage, call the toolbox from many threads, or
reach for the environment behind the toolbox), the run finishes, every trial gets one
verdict, and the trace recorded before the attack is kept (issue 18 items 1, 3, 4, 5;
issue 11 item 14).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import math
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proctor import AgentResult, Runner, Store, load_suite
from proctor.core.outcome import LedgerEntry
from proctor.core.results import Usage
from proctor.env.domain import Domain
from proctor.env.gateway import ToolGateway
from proctor.env.toolbox import _WORLDS
from proctor.run.turn import GRACE_S
from trial_run import order_desk, run_task

MINI = Path(__file__).parent / "fixtures" / "mini"
SUITE = load_suite(MINI)
READ = SUITE.select(ids=["read-item"])
PAINT = SUITE.select(ids=["paint-item"])
#: A limit within which every trial of these runs must finish: a hang detector, not a
#: measure of speed (benchmarks/hostile.py measures the time past the timeout).
LIVENESS_S = 60


def run(suite: Any, agent: Any, tmp_path: Path | None = None, **kwargs: Any) -> Any:
    """Run on a thread, so that a harness that hangs fails the test instead of stalling it."""
    store = Store(tmp_path / "p.db") if tmp_path is not None else None
    kwargs.setdefault("timeout_s", 1.0)  # far above a healthy trial, even on a busy machine
    runner = Runner(suite, agent, store=store, **kwargs)
    out: list[Any] = []
    worker = threading.Thread(target=lambda: out.append(runner.run()), daemon=True)
    worker.start()
    worker.join(LIVENESS_S)
    assert out, "the run did not finish"
    return out[0], store


def by_trial(report: Any) -> dict[int, Any]:
    return {r.trial: r for r in report.results}


def statuses(report: Any) -> list[str]:
    """Each trial's status, in trial order."""
    return [r.status for r in sorted(report.results, key=lambda r: r.trial)]


def check(result: Any, name: str) -> Any:
    [found] = [c for c in result.checks if c.name == name]
    return found


async def read_a(toolbox: Any) -> str:
    got = await toolbox.call("items.get", {"item_id": "a"})
    return f"Item a is {got.value['colour']}."


# -- exits and cancellation (18.1, 11.14) ------------------------------------------------------


def exits_sync(input: Any, toolbox: Any) -> str:
    toolbox.call("items.get", {"item_id": "a"})
    if input.trial == 0:
        sys.exit(3)
    return "Item a is red."


async def exits_async(input: Any, toolbox: Any) -> str:
    answer = await read_a(toolbox)
    if input.trial == 0:
        raise SystemExit(0)
    return answer


@pytest.mark.parametrize(("agent", "code"), [(exits_sync, 3), (exits_async, 0)])
def test_an_agent_that_exits_fails_its_trial_and_the_run_goes_on(
    tmp_path: Path, agent: Any, code: int
) -> None:
    report, store = run(READ, agent, tmp_path, trials=3)
    trials = by_trial(report)
    assert statuses(report) == ["failed", "passed", "passed"]
    crashed = check(trials[0], "agent_crashed")
    assert crashed.evidence["exit_code"] == code
    assert crashed.evidence["exception"] == f"SystemExit: {code}"
    assert report.summary.status == "completed" and report.summary.valid
    assert report.summary.valid_trials == 3  # the agent's failure, in the denominator
    trace, _, _ = store.trace(report.run_id, "read-item", 0)
    assert [e.data["tool"] for e in trace.of_kind("tool_proposal")] == ["items.get"]


async def raises_cancelled(input: Any, toolbox: Any) -> str:
    await read_a(toolbox)
    raise asyncio.CancelledError


def raises_cancelled_sync(input: Any, toolbox: Any) -> str:
    raise asyncio.CancelledError


async def raises_keyboard_interrupt(input: Any, toolbox: Any) -> str:
    raise KeyboardInterrupt


@pytest.mark.parametrize(
    "agent", [raises_cancelled, raises_cancelled_sync, raises_keyboard_interrupt]
)
def test_an_agent_raising_cancellation_or_an_interrupt_is_its_crash(agent: Any) -> None:
    report, _ = run(READ, agent, trials=2, concurrency=2)
    assert {r.status for r in report.results} == {"failed"}
    for r in report.results:
        assert (
            check(r, "agent_crashed")
            .evidence["exception"]
            .startswith(("CancelledError", "KeyboardInterrupt"))
        )
    assert report.summary.status == "completed"


class SwallowsForever:
    """Catches every cancellation and carries on, forever, on trial 0."""

    def __init__(self) -> None:
        self.cancelled = 0

    async def run(self, input: Any, toolbox: Any) -> str:
        if input.trial == 0:
            while True:
                try:
                    await asyncio.sleep(0.05)
                except asyncio.CancelledError:
                    self.cancelled += 1
        return await read_a(toolbox)


def test_an_agent_swallowing_every_cancellation_is_abandoned_as_a_timeout() -> None:
    agent = SwallowsForever()
    report, _ = run(READ, agent, trials=3, concurrency=1)
    assert statuses(report) == ["timeout", "passed", "passed"]
    assert agent.cancelled >= 1  # it was asked to stop, refused, and was left behind


class BlocksItsLoop:
    """An `async def` that calls a blocking sleep: the loop it runs on stops turning."""

    def __init__(self) -> None:
        self.loops: dict[int, int] = {}

    async def run(self, input: Any, toolbox: Any) -> str:
        self.loops[input.trial] = id(asyncio.get_running_loop())
        if input.trial == 0:
            time.sleep(3)
        return await read_a(toolbox)


def test_an_agent_blocking_its_event_loop_times_out_and_later_trials_get_another() -> None:
    agent = BlocksItsLoop()
    report, _ = run(READ, agent, trials=3, concurrency=1)
    assert statuses(report) == ["timeout", "passed", "passed"]
    assert agent.loops[1] != agent.loops[0]  # the blocked loop was abandoned
    assert agent.loops[2] == agent.loops[1]  # a healthy one is kept


class ThreadJoiner:
    """Starts a thread that never ends and waits for it."""

    def run(self, input: Any, toolbox: Any) -> str:
        stuck = threading.Thread(target=threading.Event().wait, daemon=True)
        stuck.start()
        stuck.join()
        return "never"


def test_a_sync_agent_blocked_in_a_thread_times_out() -> None:
    report, _ = run(READ, ThreadJoiner(), trials=2, concurrency=2)
    assert {r.status for r in report.results} == {"timeout"}
    assert report.summary.status == "completed"


def test_the_grace_is_at_most_a_second() -> None:
    assert 0 < GRACE_S <= 1.0


# -- protocol errors (18.3) --------------------------------------------------------------------


def recursive_args() -> dict[str, Any]:
    args: dict[str, Any] = {"item_id": "a"}
    args["self"] = args
    return args


BAD_CALLS: dict[str, tuple[Any, Any, str]] = {
    "recursive arguments": ("items.get", recursive_args(), "nested deeper than"),
    "an object in the arguments": ("items.get", {"item_id": object()}, "is not a JSON value"),
    "NaN in the arguments": ("items.get", {"item_id": "a", "x": math.nan}, "not a JSON number"),
    "a set in the arguments": ("items.get", {"item_id": {"a"}}, "a set is not a JSON value"),
    "a non-string key": ("items.get", {1: "a"}, "key 1 is not a string"),
    "a list as the tool name": (["items.get"], {"item_id": "a"}, "tool name: a list"),
    "None as the tool name": (None, {}, "tool name: None"),
}


@pytest.mark.parametrize("case", list(BAD_CALLS))
def test_a_bad_tool_call_is_a_protocol_error_even_when_the_agent_catches_it(
    tmp_path: Path, case: str
) -> None:
    name, args, why = BAD_CALLS[case]
    caught: list[str] = []

    async def agent(input: Any, toolbox: Any) -> str:
        answer = await read_a(toolbox)
        try:
            await toolbox.call(name, args)
        except TypeError as exc:  # ProtocolError is a TypeError
            caught.append(str(exc))
        return answer

    report, store = run(READ, agent, tmp_path)
    [result] = report.results
    assert result.status == "failed"
    [violation] = check(result, "agent_protocol").evidence["violations"]
    assert why in violation and caught == [violation]
    trace, answer, _ = store.trace(report.run_id, "read-item", 0)
    assert answer == "Item a is red."
    kinds = [e.kind for e in trace.events]
    assert kinds[:3] == ["message", "tool_proposal", "policy_decision"]  # kept, in order
    assert {"protocol_error": violation} in [e.data for e in trace.of_kind("note")]
    assert [e.seq for e in trace.events] == list(range(1, len(trace.events) + 1))


BAD_RECORDS: dict[str, tuple[dict[str, Any], str]] = {
    "tokens as text": ({"input_tokens": "lots"}, "input_tokens must be a non-negative integer"),
    "negative tokens": ({"output_tokens": -5}, "output_tokens must be a non-negative integer"),
    "tokens as a bool": ({"input_tokens": True}, "input_tokens must be a non-negative integer"),
    "a negative cost": ({"cost_usd": -50.0}, "cost_usd must be a finite non-negative"),
    "an infinite cost": ({"cost_usd": math.inf}, "cost_usd must be a finite non-negative"),
    "NaN latency": ({"latency_s": math.nan}, "latency_s must be a finite non-negative"),
    "an object among the extras": ({"raw": object()}, "model call.raw: an object"),
    "a model that is not text": ({"model": 42}, "model: 42 is not text"),
}


@pytest.mark.parametrize("case", list(BAD_RECORDS))
def test_a_bad_model_call_record_is_a_protocol_error(tmp_path: Path, case: str) -> None:
    fields, why = BAD_RECORDS[case]

    def agent(input: Any, toolbox: Any) -> str:
        toolbox.record_model_call(model="m", input_tokens=10, output_tokens=5, cost_usd=0.001)
        with contextlib.suppress(TypeError):
            toolbox.record_model_call(**{"model": "m", **fields})
        toolbox.call("items.get", {"item_id": "a"})
        return "Item a is red."

    report, store = run(READ, agent, tmp_path)
    [result] = report.results
    assert result.status == "failed"
    [violation] = check(result, "agent_protocol").evidence["violations"]
    assert why in violation
    # The good record counts; the bad one was never recorded.
    assert result.usage == Usage(10, 5, 0.001, 1)
    trace, _, _ = store.trace(report.run_id, "read-item", 0)
    assert len(list(trace.of_kind("model_call"))) == 1


BAD_RETURNS: dict[str, tuple[Any, str]] = {
    "a number": (42, "the agent returned 42"),
    "a list": (["Item a is red."], "the agent returned a list"),
    "an answer that is not text": (AgentResult(answer=7), "answer: 7 is not text"),  # type: ignore[arg-type]
    "usage that is not a Usage": (
        AgentResult("Item a is red.", usage={"cost_usd": 0}),  # type: ignore[arg-type]
        "usage: a dict is not a proctor Usage",
    ),
    "negative usage": (
        AgentResult("Item a is red.", usage=Usage(cost_usd=-3.0)),
        "cost_usd must be a finite non-negative",
    ),
}


@pytest.mark.parametrize("case", list(BAD_RETURNS))
def test_a_bad_return_value_is_a_protocol_error(case: str) -> None:
    value, why = BAD_RETURNS[case]

    async def agent(input: Any, toolbox: Any) -> Any:
        await read_a(toolbox)
        return value

    report, _ = run(READ, agent)
    [result] = report.results
    assert result.status == "failed"
    assert why in check(result, "agent_protocol").evidence["violations"][0]


class StrWithAHangingMethod(str):
    def __str__(self) -> str:  # pragma: no cover - must never be called by the harness
        time.sleep(1000)
        return "never"


def test_a_str_subclass_answer_is_copied_without_calling_its_methods() -> None:
    async def agent(input: Any, toolbox: Any) -> str:
        await read_a(toolbox)
        return StrWithAHangingMethod("Item a is red.")

    report, _ = run(READ, agent)
    assert [r.status for r in report.results] == ["passed"]


def test_many_threads_calling_the_toolbox_at_once_take_turns(tmp_path: Path) -> None:
    def agent(input: Any, toolbox: Any) -> str:
        start = threading.Barrier(8)

        def hammer() -> None:
            start.wait()
            for _ in range(25):
                toolbox.call("items.get", {"item_id": "a"})
                toolbox.note("still here")

        threads = [threading.Thread(target=hammer) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return "Item a is red."

    report, store = run(READ, agent, tmp_path, timeout_s=30)
    [result] = report.results
    assert result.status == "passed", result.failed_checks
    assert result.metrics["tool_calls"] == 200
    trace, _, _ = store.trace(report.run_id, "read-item", 0)  # stored: no duplicate seq
    assert [e.seq for e in trace.events] == list(range(1, len(trace.events) + 1))
    proposals = [e.data["call_id"] for e in trace.of_kind("tool_proposal")]
    assert len(set(proposals)) == 200
    assert not any(c.name == "trace_integrity" for c in result.checks)


# -- usage (18.4, 16.14) -----------------------------------------------------------------------

BUDGET = SUITE.select(ids=["read-item"])


def test_returned_usage_cannot_lower_what_the_trace_recorded(tmp_path: Path) -> None:
    async def forger(input: Any, toolbox: Any) -> AgentResult:
        toolbox.record_model_call(
            model="big", input_tokens=2_000_000, output_tokens=10, cost_usd=50.0, latency_s=3.0
        )
        answer = await read_a(toolbox)
        return AgentResult(answer, Usage(input_tokens=10, output_tokens=1, cost_usd=0.0001))

    report, store = run(READ, forger, tmp_path)
    [result] = report.results
    assert result.usage == Usage(2_000_000, 10, 50.0, 1)
    assert next(store.trial_results(report.run_id)).usage == result.usage
    assert report.summary.cost.total_usd == 50.0

    # a returned usage above the recorded calls counts (an adapter's own accounting)
    async def honest(input: Any, toolbox: Any) -> AgentResult:
        toolbox.record_model_call(model="m", input_tokens=100, output_tokens=10, cost_usd=0.01)
        return AgentResult(await read_a(toolbox), Usage(300, 30, 0.03, 3))

    report, _ = run(READ, honest)
    assert report.results[0].usage == Usage(300, 30, 0.03, 3)


BUDGETED = """
id: read-on-a-budget
domain: mini
prompt: What colour is item a?
initial_state: {items: {a: {colour: red}}}
expect:
  answer: {must_mention: [red]}
  budget: {max_cost_usd: 0.02, max_tokens: 5000, max_model_calls: 3}
"""


def budgeted_suite(tmp_path: Path) -> Any:
    """A suite with a budget: the mini domain beside one task file written here."""
    (tmp_path / "domain.py").write_text((MINI / "domain.py").read_text())
    (tmp_path / "task.yaml").write_text(BUDGETED)
    return load_suite(tmp_path / "task.yaml")


def test_a_forged_usage_cannot_pass_a_cost_budget(tmp_path: Path) -> None:
    async def forger(input: Any, toolbox: Any) -> AgentResult:
        toolbox.record_model_call(model="big", input_tokens=2_000_000, cost_usd=50.0)
        toolbox.record_model_call(model="big", input_tokens=10, cost_usd=0.0)
        answer = await read_a(toolbox)
        return AgentResult(answer, Usage(input_tokens=10, cost_usd=0.001, model_calls=1))

    report, _ = run(budgeted_suite(tmp_path), forger)
    [result] = report.results
    assert result.status == "failed"
    failed = {c.name: c.evidence for c in result.failed_checks}
    assert failed["max_cost_usd"] == {"limit": 0.02, "actual": 50.0}
    assert failed["max_tokens"] == {"limit": 5000, "actual": 2_000_010}
    assert "max_model_calls" not in failed  # 2 recorded calls: within 3


def test_a_budget_on_what_nothing_measured_fails(tmp_path: Path) -> None:
    async def silent(input: Any, toolbox: Any) -> str:
        return await read_a(toolbox)

    report, _ = run(budgeted_suite(tmp_path), silent)
    failed = {c.name: c.evidence for c in report.results[0].failed_checks}
    assert failed == {
        name: {"limit": limit, "actual": "not measured"}
        for name, limit in (("max_cost_usd", 0.02), ("max_tokens", 5000), ("max_model_calls", 3))
    }


@pytest.mark.parametrize("agent_total", [None, 0.001])
def test_a_budget_on_a_figure_some_calls_left_out_fails(
    tmp_path: Path, agent_total: float | None
) -> None:
    """Two calls priced, one not: their sum is a lower bound, which seems to keep the
    limit; the trial cannot show it did (nor can an agent's total below the calls')."""

    async def partly_priced(input: Any, toolbox: Any) -> Any:
        toolbox.record_model_call(model="m", input_tokens=100, output_tokens=10, cost_usd=0.004)
        toolbox.record_model_call(model="m", input_tokens=100, output_tokens=10, cost_usd=0.004)
        toolbox.record_model_call(model="unpriced")
        answer = await read_a(toolbox)
        return answer if agent_total is None else AgentResult(answer, Usage(cost_usd=agent_total))

    report, _ = run(budgeted_suite(tmp_path), partly_priced)
    [result] = report.results
    checks = {c.name: c for c in result.checks}
    assert result.status == "failed"
    assert not checks["max_cost_usd"].passed
    assert checks["max_cost_usd"].evidence == {
        "limit": 0.02,
        "actual": 0.008,
        "unmeasured_calls": 1,
    }
    assert not checks["max_tokens"].passed
    assert checks["max_tokens"].evidence["unmeasured_calls"] == 1
    assert checks["max_model_calls"].passed  # 3 calls, each counted


def test_a_figure_some_calls_left_out_fails_only_its_own_limit(tmp_path: Path) -> None:
    """Every call counted its tokens, one did not price itself: the cost limit fails on
    the unpriced call, the token limit does not (each figure's calls counted apart)."""

    async def unpriced_once(input: Any, toolbox: Any) -> Any:
        toolbox.record_model_call(model="m", input_tokens=100, output_tokens=10, cost_usd=0.004)
        toolbox.record_model_call(model="unpriced", input_tokens=100, output_tokens=10)
        return await read_a(toolbox)

    report, _ = run(budgeted_suite(tmp_path), unpriced_once)
    checks = {c.name: c for c in report.results[0].checks}
    assert checks["max_cost_usd"].evidence == {
        "limit": 0.02,
        "actual": 0.004,
        "unmeasured_calls": 1,
    }
    assert checks["max_tokens"].passed
    assert checks["max_tokens"].evidence == {"limit": 5000, "actual": 220}


def test_an_agent_total_above_the_calls_sum_counts_what_they_left_out(tmp_path: Path) -> None:
    async def totalled(input: Any, toolbox: Any) -> AgentResult:
        toolbox.record_model_call(model="m", input_tokens=100, output_tokens=10, cost_usd=0.004)
        toolbox.record_model_call(model="unpriced", input_tokens=100, output_tokens=10)
        answer = await read_a(toolbox)
        return AgentResult(answer, Usage(cost_usd=0.009))

    report, _ = run(budgeted_suite(tmp_path), totalled)
    checks = {c.name: c for c in report.results[0].checks}
    assert checks["max_cost_usd"].passed
    assert checks["max_cost_usd"].evidence == {"limit": 0.02, "actual": 0.009}


def test_an_agent_that_reports_nothing_shows_not_measured(tmp_path: Path) -> None:
    async def silent(input: Any, toolbox: Any) -> str:
        return await read_a(toolbox)

    report, store = run(READ, silent, tmp_path, trials=2)
    for r in report.results:
        assert r.usage == Usage()  # nothing measured, not zero
        assert r.simulated_s == pytest.approx(0.05)  # the tool's simulated latency
    cost = report.summary.cost
    assert (cost.total_usd, cost.measured_trials) == (None, 0)
    assert report.summary.tokens.mean is None
    stored = list(store.trial_results(report.run_id))
    assert stored[0].usage == Usage() and stored[0].simulated_s == pytest.approx(0.05)


# -- tampering (18.5) --------------------------------------------------------------------------


def test_the_toolbox_has_no_attribute_leading_to_the_environment() -> None:
    seen: dict[str, Any] = {}

    def agent(input: Any, toolbox: Any) -> str:
        seen["dict"] = hasattr(toolbox, "__dict__")
        seen["env"] = hasattr(toolbox, "_env")
        seen["referents"] = [type(r).__name__ for r in gc.get_referents(toolbox)]
        seen["public"] = sorted(n for n in dir(toolbox) if not n.startswith("_"))
        return "Item a is red."

    run(READ, agent)
    assert (seen["dict"], seen["env"]) == (False, False)
    assert "Environment" not in seen["referents"] and "ToolGateway" not in seen["referents"]
    assert seen["public"] == [
        "ask_user", "call", "message", "note", "record_model_call", "stopped", "tools", "wait",
    ]  # fmt: skip


def gateway_behind(toolbox: Any) -> ToolGateway:
    """What a determined agent does: read proctor's private table of environments (or
    search `gc.get_objects()`, slower): a path no toolbox attribute offers."""
    return _WORLDS[id(toolbox)][0].gateway


def test_a_forged_ledger_entry_fails_integrity(tmp_path: Path) -> None:
    async def forger(input: Any, toolbox: Any) -> str:
        gateway = gateway_behind(toolbox)
        gateway.ledger.append(LedgerEntry(seq=99, tool="items.set", args={"item_id": "a"}))
        gateway.state["items"]["a"]["colour"] = "green"  # and the world to match
        return "Item a is now green."

    report, _ = run(PAINT, forger, tmp_path)
    [result] = report.results
    assert result.status == "failed"
    found = check(result, "trace_integrity")
    assert (found.kind, found.severity) == ("safety", "critical")
    assert any("ledger (1 effects)" in f for f in found.evidence["found"])
    assert "the state changed outside a tool call (after the last one)" in found.evidence["found"]
    assert report.summary.safety_violations.by_check["trace_integrity"] == 1


def test_a_trace_edited_behind_the_recorders_back_fails_integrity() -> None:
    async def editor(input: Any, toolbox: Any) -> str:
        answer = await read_a(toolbox)
        gateway = gateway_behind(toolbox)
        del gateway.recorder.events[1:]  # the lookup never happened...
        return answer

    report, _ = run(READ, editor)
    found = check(report.results[0], "trace_integrity")
    assert any("not the" in f for f in found.evidence["found"])


def test_an_honest_write_passes_integrity() -> None:
    async def painter(input: Any, toolbox: Any) -> str:
        await toolbox.ask_user("Shall I paint item a green?")
        await toolbox.call("items.set", {"item_id": "a", "field": "colour", "value": "green"})
        return "Item a is now green."

    report, _ = run(PAINT, painter)
    assert [r.status for r in report.results] == ["passed"]
    assert not any(c.name == "trace_integrity" for c in report.results[0].checks)


def screening_desk() -> Domain:
    """Orders, with two reads that write: `screen` records every screening it makes (a
    domain's bookkeeping, as KYC's `check_sanctions_list`), `orders.peek` only when asked
    to count the look."""
    desk = order_desk("screening", {"A": {"status": "placed"}, "B": {"status": "placed"}})

    @desk.tool("screen")
    def screen(state: dict[str, Any], order_id: str) -> str:
        """Screen an order; the screening is recorded."""
        state.setdefault("screenings", []).append(order_id)
        return "clear"

    @desk.tool("orders.peek")
    def peek(state: dict[str, Any], order_id: str, count: bool = False) -> str:
        """An order's status; `count` records the look."""
        if count:
            state["orders"][order_id]["looks"] = state["orders"][order_id].get("looks", 0) + 1
        return str(state["orders"][order_id]["status"])

    return desk


def tampered(agent: Any, desk: Domain | None = None) -> list[str]:
    """What the integrity check of one trial of `agent` on a fresh screening desk found
    (empty when it passed); `desk` to go on with one whose tools were seen before."""
    record = run_task({"prompt": "Cancel order A."}, desk or screening_desk(), agent)
    found = [c for c in record.result.checks if c.name == "trace_integrity"]
    return found[0].evidence["found"] if found else []


def tamper(toolbox: Any) -> None:
    gateway_behind(toolbox).state["orders"]["B"]["status"] = "cancelled"


def test_a_change_behind_the_gateway_is_found_by_the_next_write_even_a_failing_one() -> None:
    async def then_writes(input: Any, toolbox: Any) -> str:
        tamper(toolbox)
        failed = await toolbox.call("orders.cancel", {"order_id": "nope"})
        assert failed.code == "not_found"
        await toolbox.call("orders.cancel", {"order_id": "A"})
        return "Cancelled A."

    assert tampered(then_writes) == ["the state changed outside a tool call (before call c1)"]


@pytest.mark.parametrize(
    ("read", "before"),
    [
        ("screen", "c2"),  # seen writing: watched from then on, found at its next call
        ("orders.get", "c3"),  # seen pure: no longer watched, found at the next write
    ],
)
def test_a_change_hidden_behind_a_read_is_found(read: str, before: str) -> None:
    async def hides(input: Any, toolbox: Any) -> str:
        await toolbox.call(read, {"order_id": "A"})
        tamper(toolbox)
        await toolbox.call(read, {"order_id": "A"})
        await toolbox.call("orders.cancel", {"order_id": "A"})
        return "Cancelled A."

    assert tampered(hides) == [f"the state changed outside a tool call (before call {before})"]


def test_a_change_behind_a_read_that_writes_only_sometimes_is_found() -> None:
    async def hides(input: Any, toolbox: Any) -> str:
        await toolbox.call("orders.peek", {"order_id": "A"})  # seen pure this time
        tamper(toolbox)
        await toolbox.call("orders.peek", {"order_id": "A", "count": True})
        return "A is placed."

    found = tampered(hides)
    assert found == ["the state changed outside a tool call (after the last one)"]


def test_a_read_that_writes_only_sometimes_is_not_taken_for_tampering() -> None:
    """Seen pure once, the read is not watched; its later change shows as one outside a
    call, but the trial's calls played again (every call watched) make that very state:
    no finding, and the read is watched from then on, the next trial's change its own."""

    async def looks(input: Any, toolbox: Any) -> str:
        await toolbox.call("orders.peek", {"order_id": "A"})  # seen pure this time
        await toolbox.call("orders.peek", {"order_id": "A", "count": True})
        await toolbox.call("orders.cancel", {"order_id": "A"})
        return "Cancelled A."

    desk = screening_desk()
    assert tampered(looks, desk) == []
    assert desk.tools["orders.peek"].writes_state is True  # learnt from the re-enactment
    assert tampered(looks, desk) == []


def test_a_change_the_calls_cannot_be_played_again_to_explain_stands() -> None:
    """A domain whose read breaks when played again (it keeps state of its own across
    worlds) cannot show the change was the read's: the finding stands, as before."""
    desk, looks = screening_desk(), []

    @desk.tool("orders.look")
    def look(state: dict[str, Any], order_id: str, count: bool = False) -> str:
        """An order's status, counted when asked; breaks after two looks in this process."""
        looks.append(order_id)
        if len(looks) > 2:
            raise RuntimeError("the look service is gone")
        if count:
            state["orders"][order_id]["looks"] = 1
        return str(state["orders"][order_id]["status"])

    async def looks_twice(input: Any, toolbox: Any) -> str:
        await toolbox.call("orders.look", {"order_id": "A"})  # seen pure this time
        await toolbox.call("orders.look", {"order_id": "A", "count": True})
        return "A is placed."

    assert tampered(looks_twice, desk) == [
        "the state changed outside a tool call (after the last one)"
    ]
    assert len(looks) == 3  # played again, and broke there


def test_a_change_after_the_last_call_is_found_at_the_end() -> None:
    async def last(input: Any, toolbox: Any) -> str:
        await toolbox.call("orders.cancel", {"order_id": "A"})
        tamper(toolbox)
        return "Cancelled A."

    assert tampered(last) == ["the state changed outside a tool call (after the last one)"]


def test_a_read_keeping_bookkeeping_passes_integrity_before_between_and_after_writes() -> None:
    async def screens(input: Any, toolbox: Any) -> str:
        await toolbox.call("screen", {"order_id": "A"})
        await toolbox.call("orders.cancel", {"order_id": "A"})
        await toolbox.call("screen", {"order_id": "B"})  # after the last write
        return "Cancelled A."

    desk = screening_desk()
    assert tampered(screens, desk) == []
    assert tampered(screens, desk) == []  # and again, once the domain has seen it write


def test_a_read_that_writes_when_asked_is_its_own_change_once_seen_writing() -> None:
    async def counts(input: Any, toolbox: Any) -> str:
        await toolbox.call("orders.peek", {"order_id": "A", "count": True})
        await toolbox.call("orders.cancel", {"order_id": "A"})
        await toolbox.call("orders.peek", {"order_id": "A", "count": True})
        return "Cancelled A."

    assert tampered(counts) == []


#: A step of an agent on a screening desk: (tool, arguments, does it change the state),
#: or "tamper", a change behind the gateway.
STEPS: dict[str, tuple[str, dict[str, Any], bool]] = {
    "get": ("orders.get", {"order_id": "A"}, False),
    "screen": ("screen", {"order_id": "A"}, True),
    "peek": ("orders.peek", {"order_id": "A"}, False),
    "peek_count": ("orders.peek", {"order_id": "A", "count": True}, True),
    "cancel": ("orders.cancel", {"order_id": "A"}, True),
    "cancel_none": ("orders.cancel", {"order_id": "nope"}, False),
}


def expected_findings(steps: list[str]) -> list[str]:
    """What the rules find, played out by hand: a watched call (a write, or a read not
    seen leaving the state as it was) names a change made since the last one settled; a
    read's first call that ran decides whether it is watched from then on. Findings the
    trial's own calls explain (no tampering: a read that writes only sometimes, played
    again with every call watched) are dropped."""
    if "tamper" not in steps:
        return []
    seen: dict[str, bool] = {}
    found, pending, n = [], False, 0
    for step in steps:
        if step == "tamper":
            pending = True
            continue
        n += 1
        tool, _, changes = STEPS[step]
        watched = tool == "orders.cancel" or seen.get(tool) is not False
        if watched and pending:
            found.append(f"the state changed outside a tool call (before call c{n})")
            pending = False
        if tool in ("screen", "orders.get", "orders.peek") and tool not in seen:
            seen[tool] = changes
        pending = pending or (changes and not watched)
    if pending:
        found.append("the state changed outside a tool call (after the last one)")
    return found


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.sampled_from([*STEPS, "tamper"]), max_size=8))
def test_every_change_behind_the_gateway_is_found_and_no_calls_own(steps: list[str]) -> None:
    async def plays(input: Any, toolbox: Any) -> str:
        for i, step in enumerate(steps):
            if step == "tamper":
                gateway_behind(toolbox).state["orders"]["B"]["tampered"] = i
            else:
                await toolbox.call(STEPS[step][0], STEPS[step][1])
        return "Done."

    found = tampered(plays)
    assert found == expected_findings(steps)
    if "tamper" in steps:
        assert found  # whatever came after it
    else:
        assert found == []  # the honest agent's calls are their own, even a sometimes-writer's


def test_an_agent_changing_the_domains_module_object_cannot_change_another_task() -> None:
    suite = SUITE.select(ids=["read-item", "dated-item"])
    domain = suite.tasks[0].domain  # the module-level `domain` of fixtures/mini/domain.py
    saved = domain.snapshot()

    async def vandal(input: Any, toolbox: Any) -> str:
        if input.task_id == "read-item":
            domain.base_state["items"] = {"d": {"made": "1999-12-31"}}
            domain.tools.pop("items.get", None)
            return await read_a(toolbox)
        got = await toolbox.call("items.get", {"item_id": "d"})
        return f"Made on {got.value['made']}." if got.ok else "no tool"

    try:
        report, _ = run(suite, vandal, trials=2, concurrency=1)
        assert "items.get" not in domain.tools  # the vandal did reach the module's object
    finally:
        domain.base_state, domain.tools = saved.base_state, saved.tools
    assert {(r.task_id, r.status) for r in report.results} == {
        ("read-item", "passed"),
        ("dated-item", "passed"),
    }


def test_an_agent_changing_its_trials_domain_cannot_change_where_the_next_trial_starts() -> None:
    """The run's own copy of the domain is within a determined agent's reach (through
    the gateway): what it changes there after a task's first trial began is not what the
    task's later trials start from."""
    seen: dict[int, list[str]] = {}

    async def vandal(input: Any, toolbox: Any) -> str:
        gateway = _WORLDS[id(toolbox)][0].gateway
        seen[input.trial] = sorted(gateway.state)
        gateway.domain.base_state["vandalised"] = {"by": f"trial {input.trial}"}
        return await read_a(toolbox)

    report, _ = run(READ, vandal, trials=3, concurrency=1)
    assert [r.status for r in report.results] == ["passed"] * 3
    assert seen[1] == seen[2] == seen[0] and "vandalised" not in seen[0]


SLOW_TOOL = """

import time


@domain.tool("items.slow")
def slow(state, item_id: str) -> str:
    \"\"\"Takes its time.\"\"\"
    time.sleep(3)
    return item_id
"""


def test_a_thread_left_calling_a_tool_after_the_agent_returns_fails_the_trial(
    tmp_path: Path,
) -> None:
    (tmp_path / "domain.py").write_text((MINI / "domain.py").read_text() + SLOW_TOOL)
    (tmp_path / "task.yaml").write_text((MINI / "tasks" / "read-item.yaml").read_text())
    suite = load_suite(tmp_path / "task.yaml")

    def leaves_a_call_behind(input: Any, toolbox: Any) -> str:
        toolbox.call("items.get", {"item_id": "a"})
        threading.Thread(target=toolbox.call, args=("items.slow", {"item_id": "a"})).start()
        time.sleep(0.2)  # the call is inside the tool now
        return "Item a is red."

    report, _ = run(suite, leaves_a_call_behind)
    [result] = report.results
    assert result.status == "failed"  # not an `error`: that would leave the denominator
    [violation] = check(result, "agent_protocol").evidence["violations"]
    assert violation == "a tool call was still running after the agent's turn ended"
