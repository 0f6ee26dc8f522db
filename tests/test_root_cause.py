"""The root cause of a failed trial: the failure that came first in the trace.

Trials run through the real gateway (tests/trial_run.py); the summary and the terminal are
read as a user reads them, through the CLI. The property test checks the rule on any
checks: the chosen one fails the trial and no failure that fails it came earlier.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from conftest import proctor
from proctor.core.results import Check, TaskInfo, TrialResult
from proctor.core.summary import RunSummary
from proctor.decide.summarize import root_causes, summarize
from proctor.env.toolbox import Toolbox
from proctor.grade.root_cause import root_cause, root_cause_name
from proctor.report.terminal import root_cause_table
from trial_run import order_desk, run_task

ROOT = Path(__file__).resolve().parents[1]
SUPPORT = ROOT / "examples" / "support"

DESK = order_desk("rc-desk", {"A-1": {"status": "placed"}, "B-2": {"status": "shipped"}})

#: A task that a hurried agent fails in several ways at once.
TASK: dict[str, Any] = {
    "prompt": "Cancel A-1.",
    "expect": {
        "outcome": [{"path": "orders.A-1.status", "equals": "cancelled"}],
        "trajectory": {
            "required": [{"tool": "orders.get", "args": {"order_id": "A-1"}}],
            "forbidden": [{"tool": "orders.cancel", "args": {"order_id": "B-2"}}],
            "before": [["orders.get", "orders.cancel"]],
        },
        "answer": {"must_mention": ["A-1 is cancelled"]},
    },
}


async def cancels_the_wrong_order_first(input: Any, toolbox: Toolbox) -> str:
    """Cancels B-2 (forbidden) before anything else, then A-1 without looking it up."""
    await toolbox.call("orders.cancel", {"order_id": "B-2"})
    await toolbox.call("orders.cancel", {"order_id": "A-1"})
    return "Done."


async def skips_the_lookup(input: Any, toolbox: Toolbox) -> str:
    """Cancels A-1 without looking it up; its answer is fine."""
    await toolbox.call("orders.cancel", {"order_id": "A-1"})
    return "A-1 is cancelled."


async def does_nothing(input: Any, toolbox: Toolbox) -> str:
    return "I did nothing."


def cause(result: TrialResult) -> str | None:
    return root_cause_name(result.checks, result.metrics)


def test_the_first_failure_in_the_trace_is_the_root_cause() -> None:
    record = run_task(TASK, DESK, cancels_the_wrong_order_first)
    failing = {c.name for c in record.result.checks if c.blocks}
    # several checks fail the trial; the first call was forbidden (and out of order: at
    # one step, the safety violation is the root cause)
    assert {"forbidden:orders.cancel", "order:orders.get<orders.cancel"} <= failing
    assert {"required:orders.get", "mentions:A-1 is cancelled"} <= failing
    assert cause(record.result) == "forbidden:orders.cancel"


def test_a_call_out_of_order_comes_before_what_was_never_done() -> None:
    # the order check names the early cancel; the missing lookup names no event
    record = run_task(TASK, DESK, skips_the_lookup)
    failing = {c.name for c in record.result.checks if c.blocks}
    assert failing == {"required:orders.get", "order:orders.get<orders.cancel"}
    assert cause(record.result) == "order:orders.get<orders.cancel"


def test_without_any_call_the_missing_call_explains_the_rest() -> None:
    record = run_task(TASK, DESK, does_nothing)
    failing = {c.name for c in record.result.checks if c.blocks}
    assert {"required:orders.get", "state:orders.A-1.status", "mentions:A-1 is cancelled"} == (
        failing
    )
    # trajectory before outcome before answer, when no check names a step
    assert cause(record.result) == "required:orders.get"


def test_a_passed_trial_and_a_non_blocking_failure_have_no_root_cause() -> None:
    async def good(input: Any, toolbox: Toolbox) -> str:
        await toolbox.call("orders.get", {"order_id": "A-1"})
        await toolbox.call("orders.cancel", {"order_id": "A-1"})
        return "A-1 is cancelled."

    task = {**TASK, "expect": {**TASK["expect"], "budget": None}}
    record = run_task(task, DESK, good)
    assert record.result.status == "passed"
    assert "root_cause" not in record.result.metrics
    # a failed medium-severity safety check does not fail the trial, so it is no root cause
    medium = Check("forbidden:x", "safety", False, severity="medium", evidence={"seq": 1})
    assert root_cause([medium]) is None
    assert root_cause([medium, Check("state:a", "outcome", False)]) == 1


def test_the_summary_counts_root_causes_per_task_and_slice() -> None:
    first = run_task(TASK, DESK, cancels_the_wrong_order_first).result
    second = run_task(TASK, DESK, skips_the_lookup).result
    second.trial = 1
    summary = summarize("r", [first, second], {"t1": TaskInfo("t1", ["x"])}, trials_per_task=2)
    [row] = summary["per_task"]
    assert row["root_causes"] == {
        "forbidden:orders.cancel": [0],
        "order:orders.get<orders.cancel": [1],
    }
    assert summary["slices"]["tag:x"]["root_causes"] == {
        "forbidden:orders.cancel": 1,
        "order:orders.get<orders.cancel": 1,
    }
    assert root_causes([first]) == {"forbidden:orders.cancel": [0]}
    console = Console(record=True, width=200)
    console.print(root_cause_table(RunSummary.new(summary)))
    text = console.export_text()
    assert "root causes: the failure first in the trace" in text
    assert "read one: proctor show r --task ID --trial N" in text
    line = next(li for li in text.splitlines() if "forbidden:orders.cancel" in li and "│ 0" in li)
    assert line.split("│")[1].strip() == "t1"


def test_the_terminal_shows_three_failing_checks_or_all_of_them(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    db = tmp_path / "p.db"
    agent = f"{SUPPORT}/agents.py:careless"
    done = proctor("run", str(SUPPORT), "--agent", agent, "--store", str(db), "--json", str(out))
    assert done.returncode == 0, done.stderr
    rows = {row["id"]: row for row in json.loads(out.read_text())["per_task"]}
    missing = rows["handle-missing-order"]
    assert len(missing["failed_checks"]) > 3
    assert list(missing["root_causes"]) == ["forbidden:orders.cancel"]
    # default: the three most frequent failing checks, and how many more there are
    # (the cell may wrap: its lines are read joined, spaces aside)
    table = done.stdout.split("root causes:")[0].splitlines()
    cells = "".join("".join(row.split("│")[6].split()) for row in table if row.startswith("│"))
    assert f"(+{len(missing['failed_checks']) - 3}more)" in cells
    every = proctor("show", "latest", "--store", str(db), "--all-checks")
    assert every.returncode == 0, every.stderr
    assert "more)" not in every.stdout.split("root causes:")[0]  # the per-task table
    for name in missing["failed_checks"]:
        assert name in every.stdout
    # the root-cause table names the first failure of each failing task
    assert "handle-missing-order        │ forbidden:orders.cancel" in every.stdout


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["trajectory", "safety", "outcome", "answer", "budget", "custom"]),
            st.booleans(),  # passed
            st.lists(st.integers(min_value=1, max_value=40), max_size=3),  # seqs named
        ),
        max_size=8,
    )
)
def test_the_root_cause_fails_the_trial_and_nothing_failing_came_earlier(
    specs: list[tuple[Any, bool, list[int]]],
) -> None:
    checks = [
        Check(f"c{i}", kind, passed, severity="high" if kind == "safety" else None,
              evidence={"call": {"seq": seqs[0]}, "seqs": seqs[1:]} if seqs else {})
        for i, (kind, passed, seqs) in enumerate(specs)
    ]  # fmt: skip
    index = root_cause(checks)
    blocking = [c for c in checks if c.blocks]
    if not blocking:
        assert index is None
        return
    assert index is not None and checks[index].blocks
    chosen = min(specs[index][2], default=None)
    for i, c in enumerate(checks):
        seqs = specs[i][2]
        if not c.blocks or i == index:
            continue
        if chosen is None:
            assert not seqs  # a failure naming a step would have come first
        elif seqs:
            assert min(seqs) >= chosen
