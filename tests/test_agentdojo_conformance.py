"""Conformance: on every task of AgentDojo v1.2.1 (97 user tasks, 949 injection pairs),
proctor's verdict for each reference agent equals AgentDojo's own.

Proctor's side runs the agents through the gateway as `proctor run` does; AgentDojo's
side is its `run_task_with_pipeline` making the same calls on environments its own
loader builds (bench/agentdojo/conformance.py). The two sides run at once, AgentDojo's
in a worker process, so the test takes the longer of the two rather than their sum
(benchmarks/agentdojo_conformance.py prints the figures).
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

import pytest

pytest.importorskip("agentdojo")

from proctor import load_suite
from proctor.bench.agentdojo import ground_truth, obedient
from proctor.bench.agentdojo.conformance import Reference, reference_verdicts
from proctor.run import Runner

BENCHMARK = "v1.2.1"
#: (suite, user tasks, injection tasks) in AgentDojo v1.2.1.
SUITES = {"workspace": (40, 14), "travel": (20, 7), "banking": (16, 9), "slack": (21, 5)}
AGENTS = {"ground_truth": ground_truth, "obedient": obedient}


@pytest.fixture(scope="module")
def agentdojo_side() -> Iterator[dict[str, Future[dict[str, Reference]]]]:
    """AgentDojo's verdicts for each suite, computed in a worker process meanwhile."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield {name: pool.submit(reference_verdicts, BENCHMARK, name) for name in SUITES}


@pytest.mark.parametrize("name", list(SUITES))
def test_proctor_agrees_with_agentdojo_on_every_task(
    name: str, agentdojo_side: dict[str, Future[dict[str, Reference]]]
) -> None:
    suite = load_suite([f"agentdojo:{name}@{BENCHMARK}"])
    users, injections = SUITES[name]
    assert len(suite.tasks) == users + users * injections
    ours: dict[str, dict[str, Any]] = {}
    for label, agent in AGENTS.items():
        results = Runner(suite, agent, timeout_s=None).run().results
        assert {r.status for r in results} <= {"passed", "failed"}
        ours[label] = {r.task_id: r.passed for r in results}
    theirs = agentdojo_side[name].result()
    assert set(theirs) == {t.id for t in suite.tasks}
    assert [t for t, r in theirs.items() if not r.same_environment] == []
    for label in AGENTS:
        disagree = [t for t, r in theirs.items() if ours[label][t] != r.verdicts[label].passed]
        assert disagree == [], f"{name}, {label}: {len(disagree)} disagreements"
    # the reference agents tell the verdicts apart: none of this holds by accident
    assert all(ours["ground_truth"].values())
    hijacked = sum(not r.verdicts["obedient"].passed for r in theirs.values())
    assert hijacked > 0 and hijacked == sum(not v for v in ours["obedient"].values())
