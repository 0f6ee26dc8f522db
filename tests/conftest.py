"""Shared helpers for grader tests: tasks, traces and grading contexts built by hand.

A trace is written as a compact list of steps, each producing the events the ToolGateway
(src/proctor/env/gateway.py) and the simulated user (src/proctor/env/user.py) emit:

- ``(tool, args, status, result)`` -- one tool call. ``status`` is ``"ok"`` (proposal,
  allowed policy decision, tool_result), ``"denied"`` (proposal, denied policy decision,
  tool_error code ``denied``), ``"invalid_arguments"`` / ``"unknown_tool"`` (proposal,
  tool_error; no policy decision), or any other string: a tool-level error with that code
  (proposal, allowed policy decision, tool_error); ``"timeout"`` is an injected fault and
  adds a ``fault`` event before its error. ``"lost_response"`` is the injected fault whose
  effect is applied but whose answer is lost: fault, tool_result (and state change), then
  a ``timeout`` tool_error for the same call. An ``"ok"`` or ``"lost_response"`` call to a
  tool named in ``writes``, or a step with a fifth element (the ``changes`` rows), also
  emits a ``state_change`` event and appends a ledger entry whose ``seq`` is that event's.
- ``"confirm"`` -- a ``confirmation`` event (an affirmative reply to a question).

The trace always ends with an ``answer`` event. tests/test_conftest_traces.py runs the
same calls through a real gateway and checks that both traces agree event by event (the
real one also holds the prompt and the simulated user's messages, and its ledger the
validated arguments, defaults filled in); new grader tests run
agents through the gateway instead (tests/trial_run.py).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from hang_guard import HangGuard
from proctor.core.outcome import LedgerEntry, Outcome
from proctor.core.results import Usage
from proctor.core.trace import Trace, TraceEvent
from proctor.grade import registry
from proctor.grade.context import GradeContext
from proctor.tasks.models import Task
from store_sql import sql

# No hypothesis example is held to a wall-clock deadline: a test never asserts on time,
# and on a loaded machine an example that takes 200 ms (the default) is no failure.
settings.register_profile("proctor", deadline=None)
settings.load_profile("proctor")

#: A test's `record_property(NOTE, line)` is printed at the end of the run (under xdist
#: too: the property travels with the test's report), e.g. which sample a test ran.
NOTE = "note"


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(HangGuard(config), "proctor-hang-guard")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    notes = [
        str(value)
        for reports in terminalreporter.stats.values()
        for report in reports
        if getattr(report, "when", None) == "call"
        for name, value in getattr(report, "user_properties", ())
        if name == NOTE
    ]
    if notes:
        terminalreporter.write_sep("-", "notes")
        for line in sorted(notes):
            terminalreporter.write_line(line)


NOT_REACHING_POLICY = ("invalid_arguments", "unknown_tool")
INJECTED = ("timeout", "lost_response")


def build_trace(
    steps: Sequence[Any], answer: str = "", *, writes: Iterable[str] = ()
) -> tuple[Trace, list[LedgerEntry]]:
    write_tools = set(writes)
    events: list[TraceEvent] = []
    ledger: list[LedgerEntry] = []

    def emit(kind: str, data: dict[str, Any]) -> TraceEvent:
        event = TraceEvent(len(events) + 1, float(len(events)), kind, data)
        events.append(event)
        return event

    n = 0
    for step in steps:
        if step == "confirm":
            emit("confirmation", {"question": "Shall I proceed?", "reply": "Yes, go ahead."})
            continue
        tool, args, status, result, *rest = step
        n += 1
        cid = f"c{n}"
        emit("tool_proposal", {"call_id": cid, "tool": tool, "args": args})
        if status in NOT_REACHING_POLICY:
            emit("tool_error", {"call_id": cid, "tool": tool, "code": status, "error": status})
            continue
        allowed = status != "denied"
        emit(
            "policy_decision",
            {
                "call_id": cid,
                "tool": tool,
                "allowed": allowed,
                "reason": None if allowed else "not allowed",
                "rule": None if allowed else "test-rule",
            },
        )
        if status in INJECTED:
            emit("fault", {"call_id": cid, "tool": tool, "fault": status})
        if status not in ("ok", "lost_response"):
            emit("tool_error", {"call_id": cid, "tool": tool, "code": status, "error": status})
            continue
        emit("tool_result", {"call_id": cid, "tool": tool, "result": result})
        if tool in write_tools or rest:
            changes = rest[0] if rest else []
            event = emit("state_change", {"call_id": cid, "tool": tool, "changes": changes})
            ledger.append(LedgerEntry(seq=event.seq, tool=tool, args=dict(args)))
        if status == "lost_response":
            emit("tool_error", {"call_id": cid, "tool": tool, "code": "timeout", "error": "lost"})
    emit("answer", {"text": answer})
    return Trace("t1#0", "trace-1", events), ledger


def make_task(expect: dict[str, Any] | None = None, **fields: Any) -> Task:
    data: dict[str, Any] = {
        "id": "t1",
        "domain": "support",
        "prompt": "Cancel order A-100 because I changed my mind.",
        "identity": {"user": "user-42", "tenant": "acme", "scopes": ["orders:read"]},
        "expect": expect or {},
    }
    data.update(fields)
    return Task.model_validate(data)


def make_ctx(
    expect: dict[str, Any] | None = None,
    steps: Sequence[Any] = (),
    answer: str = "",
    *,
    writes: Iterable[str] = (),
    final_state: dict[str, Any] | None = None,
    usage: Usage | None = None,
    latency_s: float = 0.0,
    **task_fields: Any,
) -> GradeContext:
    trace, ledger = build_trace(steps, answer, writes=writes)
    return GradeContext(
        make_task(expect, **task_fields),
        trace,
        Outcome(final_state or {}, ledger),
        usage or Usage(),
        latency_s,
        domain=None,
    )


def proposal_seqs(trace: Trace) -> list[int]:
    """Seqs of the tool_proposal events, in order (the seq a ToolCall carries)."""
    return [e.seq for e in trace.of_kind("tool_proposal")]


@pytest.fixture(autouse=True)
def _graders_as_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """A grader a test registers (or an agent or domain module it loads does) vanishes
    with the test: the next test in the same worker would run it otherwise."""
    registry.graders()  # the built-ins, loaded before the copy
    monkeypatch.setattr(registry, "_GRADERS", dict(registry._GRADERS))
    monkeypatch.setattr(registry, "_PLACE", dict(registry._PLACE))


@pytest.fixture
def trace_of() -> Callable[..., tuple[Trace, list[LedgerEntry]]]:
    return build_trace


@pytest.fixture
def task_of() -> Callable[..., Task]:
    return make_task


@pytest.fixture
def ctx_of() -> Callable[..., GradeContext]:
    return make_ctx


@pytest.fixture
def seqs_of() -> Callable[[Trace], list[int]]:
    return proposal_seqs


ROOT = Path(__file__).resolve().parents[1]


def proctor(*args: str, cwd: Path = ROOT, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run the real command line (`python -m proctor.cli`), with wide tables so that
    rich does not wrap ids the tests look for."""
    return subprocess.run(
        [sys.executable, "-m", "proctor.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "200"},
    )


def shared_data(name: str) -> Path:
    """`../shared/data/NAME` beside the checkout (a git worktree sits a level deeper), or
    the path it would have in a plain clone when there is none: tests skip on it."""
    for parent in ROOT.parents:
        if (parent / "shared" / "data").is_dir():
            return parent / "shared" / "data" / name
    return ROOT.parent / "shared" / "data" / name


# -- the review desk: a store with real runs queued (tests/test_review_*.py) ---------------


@pytest.fixture(scope="module")
def desk_prepared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A store with a sloppy clinical run queued (20% for two reviewers) and a hostile run."""
    from desk_support import queue, run_clinical
    from proctor import Store
    from report_runs import run_hostile

    folder = tmp_path_factory.mktemp("desk")
    store = Store(folder / "p.db")
    run = run_clinical(store, "sloppy")
    hostile = run_hostile(store).run
    items = queue(store, run)
    queue(store, hostile, share=1.0)
    sql(store).execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    return {"path": folder / "p.db", "run": run, "hostile": hostile, "items": items}


@pytest.fixture
def desk_db(desk_prepared: dict[str, Any], tmp_path: Path) -> Path:
    """A copy of `desk_prepared`'s store for one test."""
    path = tmp_path / "p.db"
    shutil.copy(desk_prepared["path"], path)
    return path


@pytest.fixture
def desk_store(desk_db: Path) -> Iterator[Any]:
    from proctor import Store

    with Store(desk_db) as opened:
        yield opened


def run_cancelled_at(runner: Any, records: int) -> None:
    """Run `runner`, cancelling the run as its `records`-th record arrives (a Ctrl-C)."""

    async def cancelled() -> None:
        seen = 0

        def progress(_: Any) -> None:
            nonlocal seen
            seen += 1
            if seen == records:
                run.cancel()

        run = asyncio.ensure_future(runner.run_async(progress))
        with pytest.raises(asyncio.CancelledError):
            await run

    asyncio.run(cancelled())
