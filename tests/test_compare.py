"""Baseline vs candidate (proctor.decide.compare): pairing, groups, slices, warnings, exports.

Runs are written into a real SQLite store with known verdicts per task and trial, so every
expected figure can be worked out by hand. `make_run` is reused by the gate and JUnit tests.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from conftest import proctor
from proctor.core.jsonvalues import digest
from proctor.core.results import Check, TaskInfo, TrialResult, Usage
from proctor.core.trace import Trace
from proctor.decide.compare import Pairing, compare_runs, holdout_looks, paired_metric
from proctor.decide.summarize import summarize
from proctor.stats.paired import mcnemar_exact
from proctor.store import Store
from proctor.store.export import RunData, RunInputError, export_run, read_export, store_run

ROOT = Path(__file__).resolve().parents[1]
SUPPORT = ROOT / "examples" / "support"


def trial(run_id: str, task_id: str, i: int, status: str, cost: float = 0.01) -> TrialResult:
    checks = [Check("answer_ok", "answer", status == "passed")]
    if status == "failed":
        checks.append(Check("outcome:orders.A-100.status", "outcome", False, evidence={"x": 1}))
    return TrialResult(
        run_id,
        task_id,
        i,
        seed=i,
        status=status,
        checks=checks,
        usage=Usage(100, 20, cost, 1),
        latency_s=1.0,
        trace_id=f"{task_id}-{i}",
        score=1.0 if status == "passed" else 0.0,
        metrics={"tool_calls": 2.0, "tool_precision": 1.0},
    )


def make_run(
    run_id: str,
    outcomes: Mapping[str, Sequence[str]],
    infos: Mapping[str, TaskInfo] | None = None,
    *,
    store: Store | None = None,
    digests: Mapping[str, str] | None = None,
    cost: float = 0.01,
    trials: int | None = None,
) -> RunData:
    """A run whose task `t` has trials with the given statuses (`p` passed, `f` failed,
    `e` error, `t` timeout); stored (and read back) when a store is given."""
    names = {"p": "passed", "f": "failed", "e": "error", "t": "timeout"}
    infos = dict(infos or {t: TaskInfo(t) for t in outcomes})
    results = [
        trial(run_id, t, i, names[s], cost)
        for t, seq in outcomes.items()
        for i, s in enumerate(seq)
    ]
    task_digests = {t: (digests or {}).get(t, f"d-{t}") for t in infos}
    holdout = {t: task_digests[t] for t, info in infos.items() if info.split == "holdout"}
    k = trials or max(len(s) for s in outcomes.values())
    manifest = {
        "run_id": run_id,
        "agent": {"name": f"agent-{run_id}", "version": "1"},
        "suite": {
            "name": "synthetic",
            "digest": digest(task_digests),
            "task_digests": task_digests,
            "holdout_digest": digest(holdout) if holdout else None,
        },
        "trials": k,
        "holdout": bool(holdout),
    }
    summary = summarize(run_id, results, infos, trials_per_task=k)
    summary["status"] = "completed" if summary["valid"] else "invalid"
    if store is None:
        return RunData(run_id, manifest, summary, results, summary["status"])
    store.create_run(run_id, manifest)
    for r in results:
        store.write_trial(r, Trace(f"{r.task_id}#{r.trial}", r.trace_id, []), "", None)
    store.finish_run(run_id, summary["status"], summary)
    return store_run(store, run_id)


def twenty_tasks() -> dict[str, TaskInfo]:
    """t00–t09 tagged billing, t10–t19 shipping; even tasks are in the regression suite."""
    return {
        f"t{i:02d}": TaskInfo(
            f"t{i:02d}",
            ["billing" if i < 10 else "shipping"],
            ["capability", *(["regression"] if i % 2 == 0 else [])],
            "high" if i < 5 else "low",
            "dev",
        )
        for i in range(20)
    }


INJECTED = [f"t{i:02d}" for i in range(6)]


@pytest.fixture
def injected(tmp_path: Path) -> tuple[Store, RunData, RunData]:
    """Baseline passes all but t19; the candidate fails t00–t05 (billing) every trial,
    fixes t19, and drops one trial of t12 (still a majority pass)."""
    store = Store(tmp_path / "p.db")
    infos = twenty_tasks()
    base = {t: "ppp" for t in infos} | {"t19": "fff"}
    cand = {t: "ppp" for t in infos} | dict.fromkeys(INJECTED, "fff") | {"t12": "pfp"}
    return (
        store,
        make_run("base", base, infos, store=store),
        make_run("cand", cand, infos, store=store),
    )


def test_injected_regression_is_found_in_its_slice_with_its_task_ids(
    injected: tuple[Store, RunData, RunData],
) -> None:
    _, base, cand = injected
    report = compare_runs(base, cand)
    groups = report["groups"]
    assert [r["id"] for r in groups["regressed"]] == INJECTED
    assert [r["id"] for r in groups["improved"]] == ["t19"]
    assert groups["regressed"][0] == {"id": "t00", "baseline": "3/3", "candidate": "0/3"}
    assert len(groups["both_pass"]) == 13 and groups["both_fail"] == []
    assert report["mcnemar"] == {"regressed": 6, "improved": 1, "p_value": mcnemar_exact(6, 1)}

    slices = {s["slice"]: s for s in report["slices"]}
    billing = slices["tag:billing"]
    # Lower, and its own interval excludes 0, but among 7 slices a raw McNemar p of 2/64
    # is what chance gives: Holm makes it 7 · 2/64, so the slice is not called regressed.
    assert billing["lower"] and billing["significant"] and not billing["regressed"]
    assert billing["regressed_tasks"] == INJECTED
    assert billing["difference"] == pytest.approx(-0.6)
    assert billing["ci"][1] < 0
    assert billing["mcnemar"]["p_value"] == pytest.approx(2 / 64)
    # the smallest of the slices' p-values: Holm multiplies it by the number of slices
    assert billing["mcnemar"]["p_holm"] == pytest.approx(len(slices) * 2 / 64)
    assert not slices["tag:shipping"]["regressed"]
    assert slices["risk:high"]["regressed_tasks"] == INJECTED[:5]
    assert slices["suite:regression"]["regressed_tasks"] == ["t00", "t02", "t04"]

    success = report["metrics"][0]
    assert success["metric"] == "task_success_rate"
    assert success["difference"] == pytest.approx((-6 * 3 - 1 + 3) / 60)
    assert report["non_inferiority"]["passed"] is False
    names = [m["metric"] for m in report["metrics"]]
    assert names[:2] == ["task_success_rate", "pass_hat_k[3]"]
    assert {"tool_precision", "mean_cost_usd", "mean_latency_s", "mean_tokens"} <= set(names)


def test_a_slice_is_regressed_only_when_its_holm_adjusted_test_says_so() -> None:
    infos = twenty_tasks()
    base = make_run("b", {t: "ppp" for t in infos}, infos)
    # Ten billing tasks all fail now: raw p = 2/2^10, Holm-adjusted 7 times that: 0.014.
    billing_fails = {t: "fff" if infos[t].tags == ["billing"] else "ppp" for t in infos}
    cand = make_run("c", billing_fails, infos)
    slices = {s["slice"]: s for s in compare_runs(base, cand)["slices"]}
    billing = slices["tag:billing"]
    assert billing["mcnemar"]["p_holm"] == pytest.approx(len(slices) * 2 / 2**10)
    assert billing["regressed"] and billing["lower"]
    assert not slices["tag:shipping"]["lower"] and not slices["tag:shipping"]["regressed"]
    # One regressed task among twenty lowers the figures of its slices; it is no regression.
    one = make_run("o", {t: "fff" if t == "t00" else "ppp" for t in infos}, infos)
    lower = [s for s in compare_runs(base, one)["slices"] if s["lower"]]
    assert lower and not any(s["regressed"] for s in lower)


def test_sixteen_to_seventeen_passes_on_twenty_tasks_is_not_significant() -> None:
    infos = {f"t{i:02d}": TaskInfo(f"t{i:02d}") for i in range(20)}
    base = make_run("b", {t: "p" if i < 16 else "f" for i, t in enumerate(infos)}, infos)
    cand = make_run("c", {t: "p" if i < 17 else "f" for i, t in enumerate(infos)}, infos)
    report = compare_runs(base, cand)
    success = report["metrics"][0]
    assert (success["baseline"], success["candidate"]) == (0.8, 0.85)
    assert success["difference"] == pytest.approx(0.05)
    assert not success["significant"]
    assert success["ci"][0] < 0 < success["ci"][1]
    assert success["bootstrap_ci"][0] <= 0 <= success["bootstrap_ci"][1]
    assert report["mcnemar"]["p_value"] == 1.0
    assert report["non_inferiority"]["passed"] is False  # too few tasks to claim that either


def test_different_task_sets_are_restricted_to_the_shared_unchanged_tasks() -> None:
    base = make_run("b", {f"t{i}": "pp" for i in range(10)})
    cand = make_run("c", {f"t{i}": "pp" for i in range(1, 11)}, digests={"t2": "edited"})
    pairing = Pairing(base, cand)
    assert pairing.tasks == ["t1", "t3", "t4", "t5", "t6", "t7", "t8", "t9"]
    assert pairing.excluded["only_in_baseline"] == ["t0"]
    assert pairing.excluded["only_in_candidate"] == ["t10"]
    assert pairing.excluded["content_changed"] == ["t2"]
    text = " | ".join(compare_runs(base, cand)["warnings"])
    assert "suite versions differ" in text and "comparing the 8 tasks" in text


def test_unequal_trial_counts_are_reported_not_hidden() -> None:
    base = make_run("b", {"a": "ppp", "b": "ppp", "c": "fff"})
    cand = make_run("c", {"a": "ppppp", "b": "pppff", "c": "fffff"})
    report = compare_runs(base, cand)
    assert report["unequal_trials"] == {"a": [3, 5], "b": [3, 5], "c": [3, 5]}
    assert any("valid trial counts differ on 3 tasks" in w for w in report["warnings"])
    success = report["metrics"][0]
    # every task weighs the same: (0 + (3/5 - 1) + 0) / 3
    assert success["difference"] == pytest.approx(-0.4 / 3)
    assert report["metrics"][1]["metric"] == "pass_hat_k[3]"


def test_error_trials_are_left_out_and_tasks_without_valid_trials_excluded() -> None:
    base = make_run("b", {"a": "pep", "b": "eee", "c": "ppp"})
    cand = make_run("c", {"a": "ppp", "b": "ppp", "c": "ppp"})
    report = compare_runs(base, cand)
    assert report["excluded"]["no_valid_trials"] == ["b"]
    assert report["unequal_trials"] == {"a": [2, 3]}
    assert report["tasks"] == 2


def test_lower_is_better_metrics_use_the_upper_bound_for_non_inferiority() -> None:
    outcomes = {f"t{i}": "pp" for i in range(12)}
    base = make_run("b", outcomes, cost=0.010)
    cand = make_run("c", outcomes, cost=0.013)
    metric = paired_metric("mean_cost_usd")
    assert metric is not None and not metric.higher_is_better
    pairing = Pairing(base, cand)
    tight = pairing.figure(metric, pairing.tasks, margin=0.001)
    loose = pairing.figure(metric, pairing.tasks, margin=0.01)
    assert tight["difference"] == pytest.approx(0.003)
    assert tight["non_inferior"]["passed"] is False and loose["non_inferior"]["passed"] is True
    assert paired_metric("pass_hat_k[0]") is None and paired_metric("nope") is None


def test_export_round_trip_gives_the_same_comparison(
    injected: tuple[Store, RunData, RunData], tmp_path: Path
) -> None:
    _, base, cand = injected
    export_run(base, tmp_path / "base.jsonl")
    again = read_export(tmp_path / "base.jsonl")
    assert again.run_id == "base" and len(again.results) == len(base.results)
    assert again.results[0] == base.results[0]
    assert compare_runs(again, cand) == compare_runs(base, cand)


def test_run_summary_files_are_refused_with_a_pointer_to_export(tmp_path: Path) -> None:
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"run_id": "x", "per_task": [], "manifest": {}}, indent=2))
    with pytest.raises(RunInputError, match="proctor export"):
        read_export(summary)
    garbage = tmp_path / "g.jsonl"
    garbage.write_text("not json\n")
    with pytest.raises(RunInputError, match="not a proctor run export"):
        read_export(garbage)
    header = tmp_path / "h.jsonl"
    header.write_text(json.dumps({"format": "proctor-run/1", "run_id": "x", "summary": None}))
    with pytest.raises(RunInputError, match=r"h.jsonl:1: the run header lacks manifest.trials"):
        read_export(header)


def test_holdout_reuse_is_counted_and_warned(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.db")
    infos = {"a": TaskInfo("a", split="holdout"), "b": TaskInfo("b")}
    runs = [make_run(f"r{i}", {"a": "p", "b": "p"}, infos, store=store) for i in range(5)]
    assert runs[0].manifest.holdout is True
    history = store.runs(limit=-1)
    assert holdout_looks(history, runs[1]) == 1
    assert holdout_looks(history, runs[4]) == 4
    report = compare_runs(runs[0], runs[4], looks=holdout_looks(history, runs[4]))
    assert any("holdout tasks were evaluated in 4 earlier runs" in w for w in report["warnings"])
    assert not any("holdout" in w for w in compare_runs(runs[0], runs[1], looks=1)["warnings"])


# --- through the CLI -----------------------------------------------------------------


def test_cli_compare_json_and_bad_input(
    injected: tuple[Store, RunData, RunData], tmp_path: Path
) -> None:
    store, _, _ = injected
    db = str(store.path)
    done = proctor("compare", "base", "cand", "--store", db, "--json", "--seed", "3")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["bootstrap"] == {"resamples": 2000, "seed": 3}
    assert [r["id"] for r in report["groups"]["regressed"]] == INJECTED
    table = proctor("compare", "base", "cand", "--store", db)
    assert table.returncode == 0 and "tag:billing" in table.stdout and "t05" in table.stdout
    for args, message in [
        (("base", "nope"), "no run matching 'nope'"),
        (("base", str(tmp_path / "missing.jsonl")), "no such file"),
    ]:
        bad = proctor("compare", *args, "--store", db)
        assert bad.returncode == 2 and message in bad.stderr
        assert "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    make_run("other", {"zz": "p"}, store=store)
    disjoint = proctor("compare", "base", "other", "--store", db)
    assert disjoint.returncode == 2 and "share no comparable task" in disjoint.stderr


def test_cli_export_then_compare_files_without_a_store(
    injected: tuple[Store, RunData, RunData], tmp_path: Path
) -> None:
    store, _, _ = injected
    for run_id in ("base", "cand"):
        done = proctor(
            "export", run_id, "--out", str(tmp_path / f"{run_id}.jsonl"), "--store", str(store.path)
        )
        assert done.returncode == 0 and "60 trials written" in done.stdout
    done = proctor(
        "compare", "base.jsonl", "cand.jsonl", "--json", "--store", "absent.db", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["mcnemar"]["regressed"] == 6
    assert not (tmp_path / "absent.db").exists()


# --- suite hygiene -------------------------------------------------------------------


def test_manifest_marks_holdout_runs(tmp_path: Path) -> None:
    db = str(tmp_path / "p.db")
    agent = f"{SUPPORT}/agents.py:scripted"
    for split, holdout in (("holdout", True), ("dev", False)):
        done = proctor("run", str(SUPPORT), "--agent", agent, "--split", split, "--store", db, "-q")
        assert done.returncode == 0, done.stderr
        manifest = Store(db).run("latest")["manifest"]
        assert manifest["holdout"] is holdout
        assert (manifest["suite"]["holdout_digest"] is not None) is holdout
        assert manifest["suite"]["digest"]


def test_validate_strict_rejects_duplicate_and_near_duplicate_tasks(tmp_path: Path) -> None:
    shutil.copy(SUPPORT / "domain.py", tmp_path / "domain.py")
    head = "domain: support\nidentity: {user: user-42, tenant: acme}\n"
    files = {
        "a.yaml": "id: a\nprompt: Cancel order A-100 because I changed my mind.\n",
        "b.yaml": "id: b\nprompt: cancel order A-100   because I changed my mind.\n",
        "c.yaml": "id: c\nprompt: Cancel order A-100, because I changed my mind!\n",
        "d.yaml": "id: d\nprompt: Cancel order A-100 because I changed my mind.\n"
        "initial_state: {orders: {A-100: {status: shipped}}}\n",
        "e.yaml": "id: e\nprompt: Where is my order B-200?\n",
    }
    for name, body in files.items():
        (tmp_path / name).write_text(head + body)
    strict = proctor("validate", "--strict", str(tmp_path))
    assert strict.returncode == 2, strict.stdout
    lines = strict.stderr.strip().splitlines()
    assert len(lines) == 2 and "Traceback" not in strict.stderr
    assert lines[0].startswith(f"{tmp_path / 'b.yaml'}:4: prompt: task 'b' is a duplicate of 'a'")
    assert lines[1].startswith(f"{tmp_path / 'c.yaml'}:4: prompt: task 'c' is a near-duplicate")
    lenient = proctor("validate", str(tmp_path))
    assert lenient.returncode == 0 and lenient.stdout.startswith("ok: 5 tasks")
    # without --strict only exact duplicates are looked for (a dictionary, not pairs)
    assert lenient.stderr.count("warning: ") == 1 and "'b' is a duplicate" in lenient.stderr


def edit_export(path: Path, edit: Callable[[list[dict[str, Any]]], None], redigest: bool) -> Path:
    """The export at `path` edited by hand; with `redigest`, the digests written again as
    the export writes them (a forger with proctor's code), so only the checks of what the
    trials must be can catch it."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    edit(rows)
    if redigest:
        from proctor.store.export import _contents, _digest, _head_digest

        for row in rows[1:]:
            row.pop("digest", None)
            row["digest"] = _digest(row)
        rows[0]["contents"] = _contents([r for r in rows[1:]])
        rows[0]["digest"] = _head_digest(rows[0], [r["digest"] for r in rows[1:]])
    out = path.with_name(f"edited-{path.name}")
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return out


def _flip(rows: list[dict[str, Any]]) -> None:
    failed = next(r for r in rows[1:] if r["status"] == "failed")
    failed["status"], failed["score"] = "passed", 1.0


def _extra_index(rows: list[dict[str, Any]]) -> None:
    rows.append({**rows[1], "trial": rows[0]["manifest"]["trials"], "status": "passed"})


def _duplicate(rows: list[dict[str, Any]]) -> None:
    rows.append(dict(next(r for r in rows[1:] if r["status"] == "passed")))


def _foreign_task(rows: list[dict[str, Any]]) -> None:
    rows.append({**rows[1], "task_id": "not-in-the-manifest", "trial": 0})


def _other_run(rows: list[dict[str, Any]]) -> None:
    rows[1]["run_id"] = "another-run"


def _dropped(rows: list[dict[str, Any]]) -> None:
    rows.remove(next(r for r in rows[1:] if r["status"] == "failed"))


EDITS = {
    "verdict-flipped": (_flip, False, r":\d+: the trial does not match its digest"),
    "trial-dropped": (_dropped, False, r":1: the trials are not the contents the header lists"),
    "index-past-k": (_extra_index, True, r":\d+: trial .*#3: the manifest ran 3 trials per task"),
    "duplicated": (_duplicate, True, r":\d+: trial .* again \(first at line \d+\)"),
    "foreign-task": (_foreign_task, True, r"the manifest lists no task not-in-the-manifest"),
    "other-run": (_other_run, True, r":2: trial .* is of run another-run, not base"),
}


@pytest.mark.parametrize(("edit", "redigest", "message"), EDITS.values(), ids=list(EDITS))
def test_an_export_edited_by_hand_is_refused_by_gate_and_compare(
    injected: tuple[Store, RunData, RunData],
    tmp_path: Path,
    edit: Callable[[list[dict[str, Any]]], None],
    redigest: bool,
    message: str,
) -> None:
    _, base, cand = injected
    export_run(base, tmp_path / "base.jsonl")
    export_run(cand, tmp_path / "cand.jsonl")
    edited = edit_export(tmp_path / "base.jsonl", edit, redigest)
    with pytest.raises(RunInputError, match=message):
        read_export(edited)
    (tmp_path / "gates.yaml").write_text("rules:\n  - rule: task_success_rate >= 0\n")
    for args in (
        ("compare", edited.name, "cand.jsonl"),
        ("gate", edited.name, "--rules", "gates.yaml"),
        ("gate", "cand.jsonl", "--baseline", edited.name, "--rules", "gates.yaml"),
    ):
        done = proctor(*args, "--store", "absent.db", cwd=tmp_path)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        [line] = done.stderr.strip().splitlines()
        assert line.startswith(edited.name) and re.search(message, line), line


def test_an_export_of_the_first_format_is_read_with_its_trials_checked(
    injected: tuple[Store, RunData, RunData], tmp_path: Path
) -> None:
    _, base, _ = injected
    export_run(base, tmp_path / "base.jsonl")

    def first_format(rows: list[dict[str, Any]]) -> None:
        rows[0]["format"] = "proctor-run/1"
        for row in rows:
            row.pop("digest", None)
        rows[0].pop("contents")

    old = edit_export(tmp_path / "base.jsonl", first_format, redigest=False)
    assert read_export(old).results == base.results
    doubled = edit_export(old, _duplicate, redigest=False)
    with pytest.raises(RunInputError, match=r"again \(first at line"):
        read_export(doubled)


def test_json_nested_past_what_json_reads_is_one_line_exit_2(
    injected: tuple[Store, RunData, RunData], tmp_path: Path
) -> None:
    """An export line, or a whole file, nested 100,000 deep: RecursionError tracebacks in
    compare and gate before."""
    _, base, _ = injected
    export_run(base, tmp_path / "base.jsonl")
    deep = "[" * 100_000 + "]" * 100_000
    lines = (tmp_path / "base.jsonl").read_text().splitlines()
    (tmp_path / "deep-line.jsonl").write_text("\n".join([lines[0], deep, *lines[2:]]) + "\n")
    (tmp_path / "deep.json").write_text(deep)
    for name, message in [
        ("deep-line.jsonl", "deep-line.jsonl:2: nested deeper than JSON is read"),
        ("deep.json", "deep.json: not a proctor run export"),
    ]:
        done = proctor("compare", name, "base.jsonl", "--store", "absent.db", cwd=tmp_path)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        [line] = done.stderr.strip().splitlines()
        assert line.endswith(message) or message in line, line
