"""RunSummary: the run's figures as a typed, versioned record (core/summary.py).

Its JSON form is exactly what `summarize` computed (same keys, same order, same values)
plus `summary_version`; every key `summarize` writes is a declared field; a summary
stored by an older proctor (tests/data/summary_2026-12-01.json, written by the commit
a91e371 on the clinical example) still loads, prints and exports.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from proctor.cli import main
from proctor.core.results import Check, TaskInfo, TrialResult
from proctor.core.runs import RunData
from proctor.core.summary import SUMMARY_VERSION, RunSummary, summary_schema
from proctor.decide.summarize import summarize
from proctor.store import Store
from proctor.store.export import RunInputError, export_run, read_export, store_run

OLD = Path(__file__).resolve().parent / "data" / "summary_2026-12-01.json"
STATUSES = ("passed", "failed", "timeout", "error")


def trial(task: str, n: int, status: str, tags: tuple[str, ...] = ()) -> TrialResult:
    checks = [Check("state", "outcome", status == "passed")]
    if status == "failed" and n % 2:
        checks.append(Check("forbidden:x", "safety", False, severity="high"))
    return TrialResult(
        run_id="r", task_id=task, trial=n, seed=n, status=status, checks=checks, trace_id="t"
    )


@st.composite
def runs(draw: st.DrawFn) -> tuple[list[TrialResult], dict[str, TaskInfo], int]:
    k = draw(st.integers(1, 4))
    tasks = draw(st.lists(st.sampled_from("abcde"), min_size=1, max_size=5, unique=True))
    results = [
        trial(task, n, draw(st.sampled_from(STATUSES)))
        for task in tasks
        for n in range(draw(st.integers(0, k)))  # some trials may be missing
    ]
    infos = {t: TaskInfo(t, tags=draw(st.lists(st.sampled_from(["x", "y"])))) for t in tasks}
    return results, infos, k


@settings(max_examples=60, deadline=None)
@given(runs())
def test_the_json_form_is_what_summarize_computed(
    run: tuple[list[TrialResult], dict[str, TaskInfo], int],
) -> None:
    results, infos, k = run
    computed = summarize("r", results, infos, trials_per_task=k)
    typed = RunSummary.new(computed)
    out = typed.to_json()
    assert out.pop("summary_version") == SUMMARY_VERSION
    assert json.dumps(out) == json.dumps(computed)  # keys, order and values
    assert RunSummary.from_json(typed.to_json()) == typed
    assert set(computed) <= set(RunSummary.model_fields), "declare every key as a field"
    jsonschema.validate(typed.to_json(), summary_schema())
    assert typed.valid == computed["valid"]
    assert [row.id for row in typed.per_task] == sorted(infos)


def test_a_key_not_declared_rides_along_but_is_not_a_field() -> None:
    computed = summarize("r", [trial("a", 0, "passed")], {"a": TaskInfo("a")}, trials_per_task=1)
    typed = RunSummary.new({**computed, "added_by_a_branch": 3})
    assert typed.to_json()["added_by_a_branch"] == 3
    assert "added_by_a_branch" not in RunSummary.model_fields


def _old() -> dict[str, Any]:
    data = json.loads(OLD.read_text(encoding="utf-8"))
    data.pop("manifest")
    return data


def test_a_summary_stored_before_versions_loads_migrated() -> None:
    old = _old()
    assert "summary_version" not in old and "per_successful_task_usd" in old["cost"]
    summary = RunSummary.from_json(old)
    assert summary.summary_version == SUMMARY_VERSION
    # the cost per passed trial replaced the cost per successful task: computed anew
    assert summary.cost.per_passed_trial_usd == pytest.approx(
        old["cost"]["total_usd"] / old["passed_trials"]
    )
    assert "per_successful_task_usd" not in summary.to_json()["cost"]
    # what an older summary does not record is None, never a made-up zero
    assert summary.invalid_reasons is None and summary.judges is None
    assert summary.cost.measured_trials is None
    assert (summary.success_rate, summary.trials) == (old["success_rate"], old["trials"])
    assert [row.id for row in summary.per_task] == [row["id"] for row in old["per_task"]]


def test_a_summary_from_a_newer_proctor_is_refused() -> None:
    with pytest.raises(ValueError, match="newer than this proctor reads"):
        RunSummary.from_json({**_old(), "summary_version": SUMMARY_VERSION + 1})


def test_an_old_stored_run_shows_exports_and_reads_back(tmp_path: Path) -> None:
    data = json.loads(OLD.read_text(encoding="utf-8"))
    manifest, summary = data.pop("manifest"), data
    db = tmp_path / "p.db"
    store = Store(db)
    store.create_run(summary["run_id"], manifest)
    store.finish_run(summary["run_id"], "completed", summary)
    run = store_run(store, summary["run_id"])
    assert isinstance(run.summary, RunSummary) and run.summary.trials == summary["trials"]
    assert set(run.task_infos()) == {row["id"] for row in summary["per_task"]}
    store.close()
    shown = CliRunner().invoke(main, ["show", summary["run_id"], "--store", str(db)])
    assert shown.exit_code == 0, shown.output
    assert "egfr-trend" in shown.output and "per task" in shown.output
    out = tmp_path / "run.jsonl"
    export_run(run, out)
    again = read_export(out)
    assert again.summary == run.summary


def test_a_damaged_summary_in_an_export_is_one_line(tmp_path: Path) -> None:
    suite = {"name": "s", "digest": "d", "task_digests": {}}
    run = RunData("r", {"trials": 1, "agent": {"name": "a"}, "suite": suite}, _old(), [])
    out = tmp_path / "run.jsonl"
    export_run(run, out)
    head, *rest = out.read_text().splitlines()
    broken = json.loads(head)
    broken["summary"]["trials"] = "many"
    broken["format"] = "proctor-run/1"  # a digested header edited is refused before its summary
    out.write_text("\n".join([json.dumps(broken), *rest]) + "\n")
    with pytest.raises(RunInputError, match=r"run.jsonl:1: summary: "):
        read_export(out)


def test_the_schema_is_published() -> None:
    done = CliRunner().invoke(main, ["schema", "summary"])
    assert done.exit_code == 0
    schema = json.loads(done.output)
    assert schema == summary_schema()
    assert {"per_task", "slices", "success_rate", "summary_version"} <= set(schema["properties"])
    jsonschema.validate({**_old(), "summary_version": 1}, schema)


def test_each_slice_counts_the_safety_violations_of_its_own_tasks() -> None:
    """The violations are read in one pass and summed per slice: a slice counts only its
    tasks' failed safety checks (an undecided or passed one is none)."""
    from proctor.core.results import Check, TaskInfo, TrialResult
    from proctor.decide.summarize import summarize

    def trial(task_id: str, n: int, *checks: Check) -> TrialResult:
        return TrialResult(
            run_id="r", task_id=task_id, trial=n, seed=n, status="failed", checks=list(checks)
        )

    leak = Check("no_leak", "safety", False, severity="critical")
    held = Check("no_leak", "safety", True, severity="critical")
    wrong = Check("outcome", "outcome", False)
    results = [
        trial("a", 0, leak, leak),
        trial("a", 1, held),
        trial("b", 0, leak, wrong),
        trial("c", 0, wrong),
    ]
    tasks = {
        "a": TaskInfo("a", ["red"], [], "high", "test", None, None),
        "b": TaskInfo("b", ["red", "blue"], [], "low", "test", None, None),
        "c": TaskInfo("c", ["blue"], [], "low", "test", None, None),
    }
    summary = summarize("r", results, tasks, trials_per_task=2)
    slices = {key: s["safety_violations"] for key, s in summary["slices"].items()}
    assert slices["tag:red"] == 3 and slices["tag:blue"] == 1
    assert slices["risk:high"] == 2 and slices["risk:low"] == 1 and slices["split:test"] == 3
    assert summary["safety_violations"]["total"] == 3
    assert summary["safety_violations"]["by_check"] == {"no_leak": 3}


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sets(st.sampled_from(["red", "blue"])), st.lists(st.sampled_from(STATUSES))),
        min_size=1,
        max_size=5,
    )
)
def test_a_slices_rates_are_those_of_its_tasks_trials_alone(
    tasks: list[tuple[set[str], list[str]]],
) -> None:
    """A slice's success, pass@k and pass^k are read from the run's own per-task counts:
    they equal the figures of a summary of its tasks and their trials alone (a task
    without a valid trial, or none at all, among them)."""
    infos = {f"t{i}": TaskInfo(f"t{i}", sorted(tags)) for i, (tags, _) in enumerate(tasks)}
    results = [
        trial(f"t{i}", n, status) for i, (_, statuses) in enumerate(tasks)
        for n, status in enumerate(statuses)
    ]  # fmt: skip
    k = max((len(statuses) for _, statuses in tasks), default=1)
    whole = summarize("r", results, infos, trials_per_task=k)
    rates = ("valid_trials", "passed_trials", "success_rate", "success_ci", "pass_at_k",
             "pass_hat_k", "pass_k", "partial_rate")  # fmt: skip
    for key, figures in whole["slices"].items():
        members = {t: info for t, info in infos.items() if key in info.slices()}
        alone = summarize(
            "r", [r for r in results if r.task_id in members], members, trials_per_task=k
        )
        assert {name: figures[name] for name in rates} == {name: alone[name] for name in rates}
