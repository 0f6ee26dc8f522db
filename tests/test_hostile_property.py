"""Property: whatever a generator of hostile behaviours makes an agent do, the run ends
with exactly one verdict per trial, the one each behaviour deserves (issue 18).

Each example is a run of the mini suite's `read-item` task whose trial i plays the i-th
drawn behaviour (tests/hostile.py), by a sync or an async agent. The run goes on a
thread with a generous limit: a harness that hangs fails here instead of stalling the
suite. How long abandoned trials take past `--timeout` is measured by
benchmarks/hostile.py, not asserted here.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hostile import ABANDONED, EXPECTED, FORGED_COST, agent_for
from proctor import Runner, load_suite

READ = load_suite(Path(__file__).parent / "fixtures" / "mini").select(ids=["read-item"])
TIMEOUT_S = 0.5  # well above what a healthy trial takes on a loaded machine
LIVENESS_S = 120

plans = st.lists(st.sampled_from(sorted(EXPECTED)), min_size=1, max_size=4)


def finished_run(plan: list[str], sync: bool) -> Any:
    runner = Runner(READ, agent_for(plan, sync), trials=len(plan), timeout_s=TIMEOUT_S,
                    concurrency=1)  # fmt: skip
    out: list[Any] = []
    worker = threading.Thread(target=lambda: out.append(runner.run()), daemon=True)
    worker.start()
    worker.join(LIVENESS_S)
    assert out, f"the run of {plan} did not finish"
    return out[0]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=plans, sync=st.booleans())
def test_any_hostile_agent_gets_one_verdict_per_trial(plan: list[str], sync: bool) -> None:
    report = finished_run(plan, sync)
    assert sorted(r.trial for r in report.results) == list(range(len(plan)))
    summary = report.summary
    assert (summary.status, summary.trials, summary.errors) == ("completed", len(plan), 0)
    for r in report.results:
        behaviour = plan[r.trial]
        status, check = EXPECTED[behaviour]
        assert r.status == status, (behaviour, sync, r.error, [c.name for c in r.failed_checks])
        if check is not None:
            assert any(c.name == check and not c.passed for c in r.checks), (behaviour, r.checks)
        if behaviour == "forges_usage":
            assert r.usage.cost_usd == FORGED_COST and r.usage.input_tokens == 2_000_000
        if behaviour not in ABANDONED and behaviour != "tampers":
            assert not any(c.name == "trace_integrity" for c in r.checks), behaviour
