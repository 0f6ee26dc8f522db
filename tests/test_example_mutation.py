"""The shipped example suites catch the defects mutation testing injects: each kills at
least 95% of the mutants that apply to it (proctor.health.mutate.TARGET)."""

from __future__ import annotations

from pathlib import Path

import pytest

from proctor.agents import load_agent
from proctor.env.suite import load_suite
from proctor.health.mutate import TARGET, mutate_suite

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
#: suite -> its reference agent, and the trials it needs to pass every task once (the KYC
#: analyst skips a screening now and then, and the strict tools make it screen again).
REFERENCES = {
    "support": ("scripted", 1),
    "clinical": ("perfect", 1),
    "incident": ("careful", 1),
    "kyc": ("mistake_proofed", 3),
    "adversarial": ("guarded", 1),
    "rooms": ("careful", 1),
}


@pytest.mark.parametrize("example", sorted(REFERENCES))
def test_the_example_suite_kills_at_least_the_target_share_of_mutants(example: str) -> None:
    agent, trials = REFERENCES[example]
    suite = load_suite(EXAMPLES / example)
    reference = load_agent(f"{EXAMPLES / example / 'agents.py'}:{agent}")
    report = mutate_suite(suite, reference, trials=trials)
    assert report.reference_failed == []
    holes = [(h.task_id, h.kind, h.change) for h in report.holes]
    assert report.score is not None and report.score >= TARGET, holes
    assert len(report.results) > 2 * len(suite.tasks)  # several defects tried on each task
