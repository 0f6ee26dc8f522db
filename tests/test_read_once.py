"""What grading and summaries derive once must be what they would derive every time.

Grading reads a trial's calls and events by kind once (GradeContext); a summary reads
each distinct list of checks once (a Tally shares one between trials with the same
verdicts) and computes slices holding the same tasks once; a Tally keeps a result by
writing its fields out. Each test below fails if a shared value were mixed up with
another, or handed out to be changed.
"""

from __future__ import annotations

import copy
import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import make_ctx
from proctor.core.results import (
    NOT_MEASURED,
    UNDECIDED,
    Check,
    TaskInfo,
    TrialResult,
    Usage,
)
from proctor.decide.summarize import Tally, summarize
from proctor.grade.context import calls_from_trace

#: Checks of every kind a summary counts apart: a violation, a calibrated judge, an
#: undecided reader, a data-quality flag, a grader's crash, the simulated user's check,
#: a robustness check, budgets measured and not.
CHECKS = [
    Check("state:x", "outcome", True),
    Check("forbidden:rm", "safety", False, severity="high"),
    Check("tone", "judge", True, severity="high"),
    Check("tone", "judge", False),
    Check("mentions:done", "answer", False, evidence={UNDECIDED: "negated"}),
    Check("grounded", "answer", True),
    Check("data_quality:cost", "budget", False),
    Check("grader_error", "custom", False),
    Check("user_fidelity", "judge", False, severity="high"),
    Check("no_failing_loop", "robustness", False),
    Check("duplicate_side_effects", "outcome", True),
    Check("max_cost_usd", "budget", False, evidence={"actual": NOT_MEASURED}),
    Check("max_tokens", "budget", True, evidence={"actual": 10}),
]
STATUSES = ("passed", "failed", "partial", "error", "needs_review", "timeout")
#: Metrics a summary sums or means per trial: tool use, and a judge's and a model user's
#: spending (one with a figure left out, one a lower bound). Trials drawing the same
#: ones share one dict in a Tally.
METRICS = [
    {"tool_calls": 2.0, "tool_precision": 0.5, "arg_accuracy": 1.0},
    {"tool_calls": 1.0, "judge_calls": 2.0, "judge_cost_usd": 0.1, "judge_input_tokens": 7.0},
    {"judge_calls": 1.0, "judge_error": 1.0, "user_calls": 3.0, "user_cost_usd": 0.3},
    {"user_calls": 1.0, "user_partial_cost_usd": 1.0, "user_cost_usd": 0.2, "tool_recall": 0.0},
]


@st.composite
def runs(draw: st.DrawFn) -> tuple[list[TrialResult], dict[str, TaskInfo]]:
    tasks = draw(st.lists(st.sampled_from("abcd"), min_size=1, max_size=4, unique=True))
    results = []
    for task in tasks:
        for n in range(draw(st.integers(1, 3))):
            picked = draw(st.lists(st.sampled_from(range(len(CHECKS))), max_size=6))
            results.append(
                TrialResult(
                    run_id="r",
                    task_id=task,
                    trial=n,
                    seed=n,
                    status=draw(st.sampled_from(STATUSES)),
                    checks=[copy.deepcopy(CHECKS[i]) for i in picked],
                    usage=draw(
                        st.sampled_from([Usage(), Usage(cost_usd=0.01), Usage(3000, 10, 0.02)])
                    ),
                    trace_id="t",
                    latency_s=draw(st.sampled_from([0.0, 0.5, 30.0])),
                    metrics=dict(draw(st.sampled_from(METRICS))),
                )
            )
    # tags make slices; "x" on every task is a slice holding the same tasks as the split's
    infos = {
        t: TaskInfo(
            t,
            tags=["x", *draw(st.lists(st.sampled_from(["y", "z"]), max_size=1))],
            optimal_steps=draw(st.sampled_from([None, 1, 3])),
        )
        for t in tasks
    }
    return results, infos


@settings(max_examples=80, deadline=None)
@given(runs())
def test_a_summary_of_shared_check_lists_is_that_of_each_trials_own(
    run: tuple[list[TrialResult], dict[str, TaskInfo]],
) -> None:
    """A Tally's results share lists of checks and metrics; a summary of them equals the
    one of copies (each trial its own)."""
    results, infos = run
    tally = Tally()
    for result in results:
        tally.add(result)
    shared = tally.results
    own = [
        dataclasses.replace(r, checks=copy.deepcopy(r.checks), metrics=dict(r.metrics))
        for r in shared
    ]
    assert len({id(r.checks) for r in own}) == len({id(r.metrics) for r in own}) == len(own)
    expected = summarize("r", own, infos, trials_per_task=3)
    assert summarize("r", shared, infos, trials_per_task=3) == expected


@settings(max_examples=80, deadline=None)
@given(runs())
def test_a_summary_of_a_tally_is_that_of_the_full_results(
    run: tuple[list[TrialResult], dict[str, TaskInfo]],
) -> None:
    """A Tally drops evidence and errors; what a summary reads of them (an undecided
    reader, a budget not measured) stays, so the runner's summary is the stored run's."""
    results, infos = run
    tally = Tally()
    for result in results:
        tally.add(result)
    expected = summarize("r", results, infos, trials_per_task=3)
    assert summarize("r", tally.results, infos, trials_per_task=3) == expected


def test_slices_of_the_same_tasks_are_equal_and_apart() -> None:
    results = [
        TrialResult("r", task, n, n, "passed" if n else "failed", [Check("s", "outcome", n > 0)])
        for task in "ab"
        for n in range(2)
    ]
    infos = {t: TaskInfo(t, tags=["x"], suites=["s"]) for t in "ab"}
    slices = summarize("r", results, infos, trials_per_task=2)["slices"]
    assert slices["tag:x"] == slices["suite:s"] == slices["split:dev"]
    assert slices["tag:x"]["success_rate"] == 0.5
    slices["tag:x"]["pass_at_k"]["1"] = -1.0  # a reader changing one slice changes only it
    assert slices["suite:s"]["pass_at_k"]["1"] == 0.5


def test_a_kept_result_carries_every_field_but_the_checks_metrics_and_error() -> None:
    result = TrialResult(
        run_id="r",
        task_id="t",
        trial=2,
        seed=7,
        status="failed",
        checks=[Check("a", "outcome", False, evidence={"why": "x"})],
        usage=Usage(1, 2, 0.5, 3),
        latency_s=1.5,
        simulated_s=0.5,
        trace_id="abc",
        score=0.25,
        metrics={"m": 1.0},
        error="boom",
    )
    checks, metrics = [Check("a", "outcome", False)], {"m": 2.0}
    expected = dataclasses.replace(result, checks=checks, metrics=metrics, error=None)
    assert result.kept(checks, metrics) == expected
    assert [f.name for f in dataclasses.fields(TrialResult) if f.name not in ("checks",)] == [
        "run_id",
        "task_id",
        "trial",
        "seed",
        "status",
        "usage",
        "latency_s",
        "simulated_s",
        "trace_id",
        "score",
        "metrics",
        "error",
    ], "a new field of TrialResult: carry it in TrialResult.kept"


def test_the_contexts_views_are_the_traces() -> None:
    steps = [
        ("orders.get", {"id": "A-1"}, "ok", {"id": "A-1"}),
        ("orders.cancel", {"id": "A-1"}, "denied", None),
        ("orders.get", {"id": "A-2"}, "rate_limited", None),
        ("orders.refund", {"id": "A-1"}, "lost_response", {"ok": True}),
        "confirm",
    ]
    ctx = make_ctx(steps=steps, answer="Done.", writes=["orders.refund"])
    trace = ctx.trace
    assert ctx.calls == calls_from_trace(trace)
    assert [c.tool for c in ctx.calls if c.denied] == ["orders.cancel"]
    for kind in {e.kind for e in trace.events} | {"note"}:
        assert ctx.of_kind(kind) == list(trace.of_kind(kind))
    assert ctx.answer == "Done." and ctx.tool_texts == ['{"id": "A-1"}']
