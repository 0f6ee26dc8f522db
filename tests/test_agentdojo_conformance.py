"""Conformance: on every task of AgentDojo v1.2.1 (97 user tasks, 949 injection pairs),
proctor's verdict for each reference agent equals AgentDojo's own.

Proctor's side runs the agents through the gateway as `proctor run` does; AgentDojo's
side is its `run_task_with_pipeline` making the same calls on environments its own
loader builds (bench/agentdojo/conformance.py). The two sides run at once, AgentDojo's
in a worker process, so the test takes the longer of the two rather than their sum
(benchmarks/agentdojo_conformance.py prints the figures).

All 1,046 tasks × 2 agents take minutes, so `make test` runs a sample: `SHARE` of each
suite's tasks, drawn afresh each day (the seed is the UTC date), named at the end of the
output (tests/conftest.py, `NOTE`). CI runs every task (PROCTOR_FULL_CONFORMANCE=1, set by
.ci/run); PROCTOR_CONFORMANCE_SEED=DATE runs a day's sample again.
"""

from __future__ import annotations

import multiprocessing
import os
import random
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from datetime import UTC, datetime
from typing import Any

import pytest

from conftest import NOTE

pytest.importorskip("agentdojo")

from proctor import Suite, load_suite
from proctor.bench.agentdojo import ground_truth, obedient
from proctor.bench.agentdojo.conformance import Reference, reference_verdicts
from proctor.run import Runner

BENCHMARK = "v1.2.1"
#: (suite, user tasks, injection tasks) in AgentDojo v1.2.1.
SUITES = {"workspace": (40, 14), "travel": (20, 7), "banking": (16, 9), "slack": (21, 5)}
AGENTS = {"ground_truth": ground_truth, "obedient": obedient}
FULL = os.environ.get("PROCTOR_FULL_CONFORMANCE") == "1"
SHARE = 0.1
SEED = os.environ.get("PROCTOR_CONFORMANCE_SEED") or datetime.now(UTC).date().isoformat()
#: The full run's limit: the largest suite alone takes minutes on a busy machine.
FULL_TIMEOUT_S = 2700
#: One module, so one xdist worker (`make test`) computes AgentDojo's side, once.
pytestmark = [pytest.mark.timeout(FULL_TIMEOUT_S)] if FULL else []


def chosen(suite: Suite, name: str) -> list[str]:
    """The ids of the tasks checked today: every one, or the day's sample."""
    ids = [t.id for t in suite.tasks]
    return ids if FULL else sample(ids, f"{SEED}:{name}")


def sample(ids: list[str], seed: str) -> list[str]:
    """`SHARE` of `ids` (at least one), drawn by `seed`."""
    return sorted(random.Random(seed).sample(sorted(ids), max(1, round(SHARE * len(ids)))))


def test_a_sample_is_a_share_of_the_tasks_drawn_afresh_by_each_seed() -> None:
    ids = [f"suite/user_task_{i}" for i in range(600)]
    today = sample(ids, "2026-12-04:suite")
    assert len(today) == 60 and len(set(today)) == 60 and set(today) <= set(ids)
    assert sample(list(reversed(ids)), "2026-12-04:suite") == today  # the seed alone decides
    assert sample(ids, "2026-12-05:suite") != today
    assert sample(ids, "2026-12-04:other") != today
    assert len(sample(ids[:3], "2026-12-04:suite")) == 1


@pytest.fixture(scope="module")
def suites() -> dict[str, Suite]:
    return {name: load_suite([f"agentdojo:{name}@{BENCHMARK}"]) for name in SUITES}


@pytest.fixture(scope="module")
def agentdojo_side(
    suites: dict[str, Suite],
) -> Iterator[dict[str, Future[dict[str, Reference]]]]:
    """AgentDojo's verdicts for each suite's chosen tasks, computed in a worker process
    meanwhile."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield {
            name: pool.submit(reference_verdicts, BENCHMARK, name, chosen(suite, name))
            for name, suite in suites.items()
        }


@pytest.mark.parametrize("name", list(SUITES))
def test_proctor_agrees_with_agentdojo_on_every_task(
    name: str,
    suites: dict[str, Suite],
    agentdojo_side: dict[str, Future[dict[str, Reference]]],
    record_property: Callable[[str, object], None],
) -> None:
    users, injections = SUITES[name]
    assert len(suites[name].tasks) == users + users * injections
    ids = chosen(suites[name], name)
    suite = suites[name].select(ids=ids)
    if not FULL:
        record_property(
            NOTE,
            f"AgentDojo conformance, {name}: {len(ids)} of {len(suites[name].tasks)} tasks, "
            f"sample {SEED} (PROCTOR_CONFORMANCE_SEED={SEED} again, "
            "PROCTOR_FULL_CONFORMANCE=1 all)",
        )
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
    assert hijacked == sum(not v for v in ours["obedient"].values())
    assert hijacked > 0 or not FULL  # a sample may hold no pair that AgentDojo counts hijacked
