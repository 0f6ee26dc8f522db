"""Review queue routing: each rule, the seeded sample, flipped verdicts, the command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import proctor
from proctor import Store
from proctor.core.results import Check, TaskInfo, TrialResult
from proctor.decide.compare import CompareError
from proctor.decide.summarize import summarize
from proctor.review.queue import ReviewConfig, review_queue
from proctor.store.export import RunData, export_run
from report_runs import run_example

NO_SAMPLE = ReviewConfig(sample_rate=0.0)


def trial(task: str, n: int, checks: list[Check], status: str | None = None) -> TrialResult:
    blocks = any(c.blocks for c in checks)
    score = sum(c.score or 0.0 for c in checks) / len(checks) if checks else 1.0
    return TrialResult(
        run_id="r",
        task_id=task,
        trial=n,
        seed=n,
        status=status or ("failed" if blocks else "passed"),
        checks=checks,
        score=score,
    )


def make_run(
    run_id: str, results: list[TrialResult], risks: dict[str, str] | None = None
) -> RunData:
    tasks = sorted({r.task_id for r in results})
    infos = {t: TaskInfo(t, risk=(risks or {}).get(t, "low")) for t in tasks}
    k = max(r.trial for r in results) + 1
    manifest = {
        "agent": {"name": "a", "version": "1"},
        "trials": k,
        "suite": {"name": "s", "digest": "d", "task_digests": {t: f"digest-{t}" for t in tasks}},
    }
    summary = summarize(run_id, results, infos, trials_per_task=k)
    return RunData(run_id, manifest, summary, results)


def recorded(run: RunData, **fields: Any) -> None:
    """The run as if its manifest had recorded these fields."""
    run.manifest = run.manifest.model_copy(update=fields)


def ok(name: str, kind: str = "answer") -> Check:
    return Check(name, kind, True)


def bad(name: str, kind: str, severity: str | None = None) -> Check:
    return Check(name, kind, False, severity=severity)


def routed(queue: dict) -> dict[tuple[str, int], list[str]]:
    return {(i["task_id"], i["trial"]): i["reasons"] for i in queue["items"]}


def test_each_rule_routes_the_trials_it_describes() -> None:
    results = [
        # a low-severity violation does not fail the trial, but a person should see it
        trial("violation", 0, [ok("a"), ok("o", "outcome"), bad("secrets", "safety", "low")]),
        # the right calls in the wrong order
        trial("order", 0, [ok("a"), ok("o", "outcome"), bad("order:get<cancel", "trajectory")]),
        # the answer claims success, the world disagrees
        trial("claim", 0, [ok("a"), bad("state:x", "outcome")]),
        # one check of five decided a failure
        trial("near", 0, [ok("a"), ok("b"), ok("c"), ok("d"), bad("e", "trajectory")]),
        # passed although most checks failed (none of them blocking)
        trial("lucky", 0, [ok("a"), *(bad(f"r{i}", "robustness") for i in range(3))]),
        trial("clean", 0, [ok("a"), ok("o", "outcome")]),
        trial("broke", 0, [], status="error"),
        *(trial("high", n, [ok("a")]) for n in range(3)),
    ]
    queue = review_queue(make_run("r", results, {"high": "high"}), config=NO_SAMPLE)
    assert routed(queue) == {
        ("violation", 0): ["safety"],
        ("order", 0): ["ordering", "failed"],
        ("claim", 0): ["grader_disagreement", "failed"],
        ("near", 0): ["grader_disagreement", "failed"],
        ("lucky", 0): ["grader_disagreement"],
        next(key for key in routed(queue) if key[0] == "high"): ["high_risk"],
    }
    details = {i["task_id"]: i["details"] for i in queue["items"]}
    assert (
        details["claim"]["grader_disagreement"] == "answer checks pass but an outcome check fails"
    )
    assert details["near"]["grader_disagreement"] == "failed with partial score 0.80"
    assert details["lucky"]["grader_disagreement"] == "passed with partial score 0.25"
    assert details["violation"]["safety"] == "secrets (low)"
    assert details["order"]["failed"] == "order:get<cancel"
    # the most urgent reason first, then task id
    assert [i["task_id"] for i in queue["items"]] == [
        "violation",
        "order",
        "claim",
        "lucky",
        "near",
        "high",
    ]
    assert queue["counts"] == {
        "safety": 1,
        "ordering": 1,
        "grader_disagreement": 3,
        "failed": 3,
        "high_risk": 1,
    }


def test_high_risk_tasks_already_routed_get_the_reason_and_no_extra_pick() -> None:
    results = [trial("h", 0, [bad("x", "outcome")]), trial("h", 1, [ok("a")])]
    queue = review_queue(make_run("r", results, {"h": "high"}), config=NO_SAMPLE)
    assert routed(queue) == {("h", 0): ["failed", "high_risk"]}


def test_the_sample_is_seeded_and_sized_by_the_rate() -> None:
    run = make_run("r", [trial(f"t{i:03d}", 0, [ok("a")]) for i in range(100)])

    def sample(rate: float, seed: int = 3) -> set[tuple[str, int]]:
        queue = review_queue(run, config=ReviewConfig(sample_rate=rate, seed=seed))
        assert all(i["reasons"] == ["sample"] for i in queue["items"])
        return set(routed(queue))

    assert len(sample(0.1)) == 10 and sample(0.1) == sample(0.1)
    assert len(sample(0.001)) == 1  # any positive rate looks at something
    assert sample(0.0) == set() and len(sample(1.0)) == 100
    with pytest.raises(ValueError, match="sample rate"):
        ReviewConfig(sample_rate=1.5)


def test_flipped_verdicts_against_a_baseline() -> None:
    base = make_run(
        "base",
        [
            *(trial("a", n, [ok("x")]) for n in range(3)),
            *(trial("b", n, [bad("y", "outcome")]) for n in range(3)),
            *(trial("c", n, [ok("x")]) for n in range(3)),
        ],
    )
    cand = make_run(
        "cand",
        [
            *(trial("a", n, [bad("x", "outcome")]) for n in range(3)),
            trial("b", 0, [ok("y")]),
            trial("b", 1, [ok("y")]),
            trial("b", 2, [bad("y", "outcome")]),
            *(trial("c", n, [ok("x")]) for n in range(3)),
        ],
    )
    # drift 1.0: the slices' moves (risk:low 67% -> 56%) route nothing here
    queue = review_queue(cand, base, ReviewConfig(sample_rate=0.0, drift=1.0))
    reasons = routed(queue)
    assert all("verdict_flipped" in reasons[("a", n)] for n in range(3))
    assert all("verdict_flipped" in reasons[("b", n)] for n in range(3))
    assert not any(key[0] == "c" for key in reasons)
    details = {(i["task_id"], i["trial"]): i["details"] for i in queue["items"]}
    assert details[("a", 0)]["verdict_flipped"] == "regressed 3/3 -> 0/3 trials passed"
    assert details[("b", 0)]["verdict_flipped"] == "improved 0/3 -> 2/3 trials passed"
    assert queue["baseline_id"] == "base"
    other = make_run("other", [trial("zzz", 0, [ok("x")])])
    with pytest.raises(CompareError):
        review_queue(cand, other)


def test_a_drifted_slice_routes_a_trial_of_each_of_its_tasks() -> None:
    risks = {"a": "low", "b": "low", "c": "low", "d": "high"}

    def trials(task: str, failing: int = 0) -> list[TrialResult]:
        return [
            trial(task, n, [bad("x", "outcome")] if n < failing else [ok("x", "outcome")])
            for n in range(3)
        ]

    base = make_run("base", [*trials("a"), *trials("b"), *trials("c"), *trials("d")], risks)
    # a still passes by majority (no flip), yet risk:low drops 100% -> 89%: an 11-point drift
    cand = make_run("cand", [*trials("a", 1), *trials("b"), *trials("c"), *trials("d")], risks)
    queue = review_queue(cand, base, NO_SAMPLE)
    reasons = routed(queue)
    drifted = {key for key, why in reasons.items() if "slice_drift" in why}
    assert reasons[("a", 0)] == ["failed", "slice_drift"]  # routed already: reason added
    assert {key[0] for key in drifted} == {"a", "b", "c"}  # one trial each, none of d
    assert len(drifted) == 3
    assert not any("verdict_flipped" in why for why in reasons.values())
    detail = next(i for i in queue["items"] if i["task_id"] == "b")["details"]["slice_drift"]
    assert detail == "risk:low 100% -> 89%"  # split:dev moved 8 points: under the threshold
    quiet = review_queue(cand, base, ReviewConfig(sample_rate=0.0, drift=0.2))
    assert not any("slice_drift" in why for why in routed(quiet).values())
    with pytest.raises(ValueError, match="drift"):
        ReviewConfig(drift=0.0)


def test_a_new_or_changed_grader_or_judge_routes_the_trials_it_decided() -> None:
    results = [
        *(trial("answers", n, [ok("m"), ok("o", "outcome")]) for n in range(2)),
        *(trial("states", n, [ok("o", "outcome")]) for n in range(2)),
    ]
    base, cand = make_run("base", results), make_run("cand", results)
    recorded(base, grader_versions={"answer": "1", "outcome": "1"})
    recorded(cand, grader_versions={"answer": "2", "outcome": "1"})
    reasons = routed(review_queue(cand, base, NO_SAMPLE))
    assert list(reasons.values()) == [["grader_changed"]]
    assert next(iter(reasons))[0] == "answers"  # only the task with answer checks
    # a grader whose name is no check kind: its checks cannot be told apart, so each task
    recorded(cand, grader_versions={"answer": "1", "outcome": "1", "mine": "1"})
    queue = review_queue(cand, base, NO_SAMPLE)
    assert {key[0] for key in routed(queue)} == {"answers", "states"}
    assert queue["items"][0]["details"]["grader_changed"] == "new grader mine"
    recorded(cand, grader_versions=base.manifest.grader_versions)
    assert review_queue(cand, base, NO_SAMPLE)["items"] == []  # nothing changed
    judged = [*results, trial("judged", 0, [ok("j", "judge")])]
    cand = make_run("cand", judged)
    recorded(cand, grader_versions=base.manifest.grader_versions, judge_model="j2")
    base = make_run("base", judged)
    recorded(base, grader_versions=cand.manifest.grader_versions, judge_model="j1")
    queue = review_queue(cand, base, NO_SAMPLE)
    assert [(i["task_id"], i["details"]) for i in queue["items"]] == [
        ("judged", {"grader_changed": "judge j1 -> j2"})
    ]


def test_review_queue_command(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.db")
    stored = run_example(store, "clinical")
    run_id = stored.run.run_id
    expected = json.loads(json.dumps(review_queue(stored.run)))
    done = proctor("review-queue", run_id, "--store", str(store.path), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == expected
    assert expected["counts"]["safety"] > 0 and expected["counts"]["sample"] > 0
    exported = tmp_path / "run.jsonl"
    export_run(stored.run, exported)
    done = proctor("review-queue", str(exported), "--json", "--sample-rate", "0.5", "--seed", "9")
    assert done.returncode == 0, done.stderr
    queue = json.loads(done.stdout)
    assert queue["config"]["sample_rate"] == 0.5 and queue["config"]["seed"] == 9
    assert queue["queued"] > expected["queued"]
    done = proctor("review-queue", run_id, "--store", str(store.path))
    assert done.returncode == 0 and expected["items"][0]["task_id"] in done.stdout
    done = proctor("review-queue", run_id, "--store", str(store.path), "--sample-rate", "2")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    # against a careful agent's run as the baseline, --drift decides which slices moved
    from desk_support import run_clinical

    base = run_clinical(store, "perfect", trials=5).run_id
    args = ("review-queue", run_id, "--baseline", base, "--store", str(store.path), "--json")
    loose = json.loads(proctor(*args, "--drift", "0.01").stdout)
    strict = json.loads(proctor(*args, "--drift", "1").stdout)
    assert loose["config"]["drift"] == 0.01 and strict["config"]["drift"] == 1.0
    assert "slice_drift" not in strict["counts"]
    assert loose["counts"].get("slice_drift", 0) > 0
