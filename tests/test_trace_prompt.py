"""A trace starts with the prompt the agent received, so a stored run can show it alone."""

from __future__ import annotations

import io
from pathlib import Path

from proctor import Runner, Store, load_suite
from proctor.core.trace import read_jsonl, write_jsonl

TASK = Path(__file__).resolve().parents[1] / "examples/support/tasks/handle-missing-order.yaml"


async def agent(input, toolbox):
    await toolbox.call("orders.get", {"order_id": "C-404"})
    return "I could not find an order C-404."


def test_the_stored_trace_begins_with_the_prompt(tmp_path: Path) -> None:
    suite = load_suite(TASK)
    store = Store(tmp_path / "p.db")
    report = Runner(suite, agent, store=store).run()
    trace, _, _ = store.trace(report.run_id, "handle-missing-order", 0)
    first = trace.events[0]
    assert (first.kind, first.data["role"]) == ("message", "user")
    assert trace.prompt == suite.tasks[0].task.prompt
    store.close()


def test_traces_round_trip_through_json_lines(tmp_path: Path) -> None:
    suite = load_suite(TASK)
    store = Store(tmp_path / "p.db")
    report = Runner(suite, agent, trials=2, store=store).run()
    traces = [store.trace(report.run_id, "handle-missing-order", i)[0] for i in range(2)]
    out = io.StringIO()
    write_jsonl(traces, out)
    assert len(out.getvalue().splitlines()) == sum(len(t.events) for t in traces)
    back = read_jsonl(out.getvalue().splitlines())
    assert [(t.trial_id, t.trace_id) for t in back] == [(t.trial_id, t.trace_id) for t in traces]
    assert [[e.to_dict() for e in t.events] for t in back] == [
        [e.to_dict() for e in t.events] for t in traces
    ]
    store.close()
