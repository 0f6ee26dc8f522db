"""Run one task of the support example with any agent, keeping the whole trial record."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from proctor.env.suite import Suite, load_suite
from proctor.run import TrialRecord
from trial_run import run_member

SUPPORT = Path(__file__).resolve().parents[1] / "examples" / "support"


@cache
def support_suite() -> Suite:
    return load_suite(SUPPORT)


def run_support(task_id: str, agent: Any, *, seed: int = 7, timeout_s: float = 30) -> TrialRecord:
    member = next(t for t in support_suite().tasks if t.id == task_id)
    return run_member(member, agent, seed=seed, timeout_s=timeout_s)


def run_support_cli(*args: str) -> Result:
    """`proctor run examples/support --agent ...:scripted ARGS`, in this process."""
    from proctor.cli import main

    agent = f"{SUPPORT}/agents.py:scripted"
    return CliRunner().invoke(main, ["run", str(SUPPORT), "--agent", agent, *args])


def calls(record: TrialRecord) -> list[tuple[str, Any]]:
    """(tool, args) of every proposal in the trace, in order."""
    return [(e.data["tool"], e.data["args"]) for e in record.trace.of_kind("tool_proposal")]


def failed(record: TrialRecord) -> list[str]:
    return [c.name for c in record.result.failed_checks]
