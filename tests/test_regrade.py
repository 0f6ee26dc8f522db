"""Regrade: graders run again on stored traces, into a new run that shares them."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from proctor import Check, Runner, Store, load_agent, load_suite
from proctor.grade import registry
from proctor.run import regrade as regrade_module
from proctor.run import worker_source
from proctor.run.pool import open_pool
from proctor.run.regrade import RegradeError, regrade
from proctor.run.worker_source import ExecutorError, SuiteSource
from store_sql import sql
from test_store import stored_events

FIXTURES = Path(__file__).parent / "fixtures"
MINI = FIXTURES / "mini"
AGENTS = FIXTURES / "exec_agents.py"
PROCTOR = Path(sys.executable).parent / "proctor"


def full(store: Store, run_id: str) -> dict[tuple[str, int], dict[str, Any]]:
    """Each trial's result without its run id."""
    return {
        (r.task_id, r.trial): {k: v for k, v in r.to_dict().items() if k != "run_id"}
        for r in store.trial_results(run_id)
    }


@pytest.fixture
def ran(tmp_path: Path) -> tuple[Store, Any, Any]:
    suite = load_suite(MINI)
    store = Store(tmp_path / "p.db")
    agent = load_agent(f"{AGENTS}:flaky")
    report = Runner(suite, agent, trials=5, seed=2, store=store, agent_ref="a.py:flaky").run()
    assert {r.status for r in report.results} == {"passed", "partial", "failed"}
    return store, suite, report


def test_regrading_unchanged_graders_reproduces_every_result(ran: tuple[Store, Any, Any]) -> None:
    store, suite, report = ran
    done = regrade(store, report.run_id[:5], suite)
    assert done.run_id != report.run_id and done.source_id == report.run_id
    assert full(store, done.run_id) == full(store, report.run_id)  # checks, evidence, metrics
    assert not done.flips and not done.changed_tasks
    row = store.run(done.run_id)
    assert row["manifest"]["regraded_from"] == report.run_id
    # The typed manifest is the one stored: the source's keys with the regrade's own.
    assert done.manifest.to_json() == row["manifest"]
    source = store.run(report.run_id)["manifest"]
    renewed = {"run_id", "created_at", "regraded_from", "grader_versions", "proctor_version"}
    assert set(row["manifest"]) == set(source) | renewed | {"judges", "judge_model"}
    kept = set(source) - renewed - {"suite", "judges", "judge_model"}
    assert {k: row["manifest"][k] for k in kept} == {k: source[k] for k in kept}
    assert row["manifest"]["suite"] == source["suite"]  # the same tasks, unchanged
    assert row["status"] == "completed"
    same = {k: v for k, v in report.summary.to_json().items() if k not in ("run_id", "status")}
    assert {k: v for k, v in row["summary"].items() if k not in ("run_id", "status")} == same
    # The regraded trials share their source's trace, answer and outcome.
    for task_id, trial in (("paint-item", 0), ("read-item", 3)):
        assert store.trace(done.run_id, task_id, trial) == store.trace(
            report.run_id, task_id, trial
        )
    assert stored_events(store) == sum(
        len(store.trace(report.run_id, *k)[0].events) for k in full(store, report.run_id)
    )


def test_a_changed_grader_changes_verdicts(
    ran: tuple[Store, Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, suite, report = ran

    def strict(ctx: Any) -> list[Check]:
        return [Check("strict_answer", "answer", ctx.answer.endswith("!"))]

    monkeypatch.setitem(registry._GRADERS, "answer", registry.Grader("answer", "2", strict))
    done = regrade(store, report.run_id, suite)
    after = list(store.trial_results(done.run_id))
    assert {r.status for r in after} <= {"partial", "failed"}  # none passes now
    assert all(any(c.name == "strict_answer" for c in r.checks) for r in after)
    passed_before = report.summary.passed_trials
    assert all(before == "passed" and after != "passed" for before, after in done.flips)
    assert sum(done.flips.values()) == passed_before
    assert store.run(done.run_id)["manifest"]["grader_versions"]["answer"] == "2"
    # Regrading the regraded run reads the original traces through it.
    again = regrade(store, done.run_id, suite)
    assert store.trace(again.run_id, "read-item", 1) == store.trace(report.run_id, "read-item", 1)


def test_timeouts_errors_and_crashes_stand(tmp_path: Path) -> None:
    suite = load_suite(MINI).select(ids=["read-item"])
    store = Store(tmp_path / "p.db")
    agent = load_agent(f"{AGENTS}:CrashesOrStalls")
    report = Runner(suite, agent, trials=3, timeout_s=0.2, store=store).run()
    before = full(store, report.run_id)
    assert [before[("read-item", t)]["status"] for t in range(3)] == ["failed", "timeout", "passed"]
    done = regrade(store, report.run_id, suite)
    after = full(store, done.run_id)
    assert after == before
    assert any(c["name"] == "agent_crashed" for c in after[("read-item", 0)]["checks"])


def test_a_task_changed_since_the_run(ran: tuple[Store, Any, Any], tmp_path: Path) -> None:
    store, _, report = ran
    copy = tmp_path / "mini"
    shutil.copytree(MINI, copy)
    task_file = copy / "tasks" / "read-item.yaml"
    task_file.write_text(
        task_file.read_text().replace("must_mention: [red]", "must_mention: [blue]")
    )
    done = regrade(store, report.run_id, load_suite(copy))
    assert done.changed_tasks == ("read-item",)
    after = [r for r in store.trial_results(done.run_id) if r.task_id == "read-item"]
    assert after and all("mentions:blue" in [c.name for c in r.failed_checks] for r in after)
    with pytest.raises(RegradeError, match="tasks the suite lacks: count-item"):
        regrade(store, report.run_id, load_suite(copy / "tasks" / "read-item.yaml"))


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(PROCTOR), *args], capture_output=True, text=True, cwd=cwd)


def test_the_regrade_command(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    made = cli("run", str(MINI), "--agent", f"{AGENTS}:flaky", "-k", "3", "--store", str(db), "-q")
    assert made.returncode == 0, made.stderr
    source = Store(db).run("latest")["run_id"]
    done = cli("regrade", "latest", "--store", str(db), "-q", "--json", str(tmp_path / "s.json"))
    assert done.returncode == 0, done.stderr
    assert f"12 trials of run {source} regraded" in done.stdout
    assert "verdicts changed: none" in done.stdout
    new = Store(db).run("latest")
    assert new["run_id"] != source and new["manifest"]["regraded_from"] == source
    assert (tmp_path / "s.json").is_file()
    # The run's suite paths were absolute here; relative ones elsewhere need PATHS.
    relative = cli(
        "run", "mini", "--agent", f"{AGENTS}:flaky", "--store", str(db), "-q", cwd=FIXTURES
    )
    assert relative.returncode == 0, relative.stderr
    elsewhere = cli("regrade", "latest", "--store", str(db), cwd=tmp_path)
    assert elsewhere.returncode == 2 and "pass PATHS" in elsewhere.stderr
    assert cli("regrade", "latest", str(MINI), "--store", str(db), cwd=tmp_path).returncode == 0
    unknown = cli("regrade", "nope", "--store", str(db))
    assert unknown.returncode == 2 and "Traceback" not in unknown.stderr


def test_results_are_the_same_whatever_the_number_of_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task changed since the run, so regrading changes verdicts: every pool must
    change the same ones, and write the same rows in the same order."""
    suite, copy = load_suite(MINI), tmp_path / "mini"
    store = Store(tmp_path / "p.db")
    report = Runner(suite, load_agent(f"{AGENTS}:flaky"), trials=7, seed=3, store=store).run()
    shutil.copytree(MINI, copy)
    task_file = copy / "tasks" / "read-item.yaml"
    task_file.write_text(
        task_file.read_text().replace("must_mention: [red]", "must_mention: [blue]")
    )
    changed = load_suite(copy)
    monkeypatch.setattr(regrade_module, "SHARE", 4)  # several shares per worker
    runs = []
    for workers in (1, 2, 3):
        with open_pool(workers) as pool:
            done = regrade(store, report.run_id, changed, pool=pool)
        ordered = (
            sql(store)
            .execute(
                "SELECT task_id, trial FROM trials WHERE run_id = ? ORDER BY id", (done.run_id,)
            )
            .fetchall()
        )
        summary = {k: v for k, v in done.summary.to_json().items() if k != "run_id"}
        runs.append((ordered, full(store, done.run_id), summary, done.flips))
    assert sum(n for (was, now), n in runs[0][3].items() if was == "passed") > 0  # regraded
    assert len(runs[0][0]) == report.summary.trials
    assert runs[1] == runs[0] and runs[2] == runs[0]


def test_with_workers_shares_shrink_towards_the_end_and_cover_every_trial_once(
    ran: tuple[Store, Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last shares are smaller (the workers finish near together), never below
    `LAST_SHARE` but for the trials left; in this process every share is whole. Either
    way the shares are the run's trials in key order, each once, and regrade them."""
    store, suite, report = ran
    monkeypatch.setattr(regrade_module, "SHARE", 3)
    monkeypatch.setattr(regrade_module, "LAST_SHARE", 1)
    keys = sorted((r.task_id, r.trial) for r in store.trial_results(report.run_id))
    for workers in (1, 2):
        with open_pool(workers) as pool:
            shared = regrade_module._share_size(pool, report.manifest.trials)
            bounds = list(store.share_bounds(report.run_id, shared))
            done = regrade(store, report.run_id, suite, pool=pool)
        assert not done.flips and full(store, done.run_id) == full(store, report.run_id)
        shares = [[k for k in keys if after < k <= until] for after, until in bounds]
        assert [k for share in shares for k in share] == keys
        sizes = [len(share) for share in shares]
        assert sizes[0] == 3 and sizes == sorted(sizes, reverse=True)
        if workers == 1:
            assert set(sizes[:-1]) == {3}
        else:  # whole while a share is at most a fourth of the trials left, then shrinking
            assert len(keys) >= 12 and set(sizes) == {3, 2, 1}


def test_with_workers_a_share_holds_whole_tasks_where_it_can(
    ran: tuple[Store, Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Shares of 7 trials on tasks of 5 would split a task between two workers (each
    loading it and reading its answers): they hold one whole task each instead."""
    store, _, report = ran
    monkeypatch.setattr(regrade_module, "SHARE", 7)
    monkeypatch.setattr(regrade_module, "LAST_SHARE", 7)
    assert report.manifest.trials == 5
    with open_pool(2) as pool:
        bounds = list(store.share_bounds(report.run_id, regrade_module._share_size(pool, 5)))
    assert [until[1] for _, until in bounds] == [4] * len(bounds)  # each ends its task
    assert len(bounds) == len(report.manifest.suite.task_digests)


def test_a_suite_source_is_rebuilt_once_per_process_that_receives_it() -> None:
    """Each share carries the suite's source: a process rebuilds it from the first, and
    one shipped elsewhere (the same tasks, other paths) is another."""
    import pickle

    source = SuiteSource.of(load_suite(MINI))
    once, again = pickle.loads(pickle.dumps(source)), pickle.loads(pickle.dumps(source))
    assert once == source and again is once
    shipped = source.shipped(FIXTURES.resolve())
    assert shipped.fingerprint == source.fingerprint
    received = pickle.loads(pickle.dumps(shipped))
    assert received == shipped and received != once


def test_worker_processes_refuse_a_store_in_memory() -> None:
    store = Store(":memory:")
    report = Runner(load_suite(MINI), load_agent(f"{AGENTS}:flaky"), trials=1, store=store).run()
    with open_pool(2) as pool, pytest.raises(RegradeError, match="in memory"):
        regrade(store, report.run_id, load_suite(MINI), pool=pool)


def test_the_regrade_command_with_workers(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    made = cli("run", str(MINI), "--agent", f"{AGENTS}:flaky", "-k", "4", "--store", str(db), "-q")
    assert made.returncode == 0, made.stderr
    source = Store(db).run("latest")["run_id"]
    done = cli("regrade", source, "--store", str(db), "-q", "--workers", "2")
    assert done.returncode == 0, done.stderr
    assert "verdicts changed: none" in done.stdout
    store = Store(db)
    assert full(store, store.run("latest")["run_id"]) == full(store, source)
    stray = cli("regrade", source, "--store", str(db), "--address", "127.0.0.1:1")
    assert stray.returncode == 2 and "--executor ray" in stray.stderr


def test_full_collections_are_rarer_only_while_regrading(ran: tuple[Store, Any, Any]) -> None:
    import gc

    store, suite, report = ran
    before = gc.get_threshold()
    during: list[tuple[int, int, int]] = []
    regrade(store, report.run_id, suite, progress=lambda _: during.append(gc.get_threshold()))
    assert during and all(t[2] >= regrade_module.FULL_COLLECTION_EVERY for t in during)
    assert all(t[:2] == before[:2] for t in during)  # young collections as before
    assert gc.get_threshold() == before
    with pytest.raises(RegradeError):
        regrade(store, report.run_id, load_suite(MINI / "tasks" / "read-item.yaml"))
    assert gc.get_threshold() == before


def test_foreign_keys_go_unchecked_only_while_a_regrade_writes_and_its_rows_hold_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A regrade writes with foreign keys unchecked (its references hold by how the rows
    were made): every row it wrote, in this process and from two workers (packed), passes
    SQLite's check of them, and keys are checked again after, also after a share failed."""
    store = Store(tmp_path / "p.db")
    report = Runner(load_suite(MINI), load_agent(f"{AGENTS}:flaky"), trials=5, store=store).run()
    monkeypatch.setattr(regrade_module, "SHARE", 4)
    db = sql(store)
    during: list[int] = []

    def checked(_: object) -> None:
        during.append(db.execute("PRAGMA foreign_keys").fetchone()[0])

    for pool in (open_pool(1), open_pool(2)):
        with pool:
            done = regrade(store, report.run_id, load_suite(MINI), pool=pool, progress=checked)
        assert done.summary.trials == report.summary.trials
    assert set(during) == {0}
    assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert db.execute("PRAGMA foreign_key_check").fetchall() == []

    def broken(*args: Any) -> Any:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(regrade_module, "insert_share", broken)
    with pytest.raises(sqlite3.OperationalError):
        regrade(store, report.run_id, load_suite(MINI))
    assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1


def test_the_collector_is_paused_only_while_a_share_is_graded(
    ran: tuple[Store, Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import gc

    store, suite, report = ran
    collecting: list[bool] = []
    answer = registry._GRADERS["answer"]

    def recording(ctx: Any) -> list[Check]:
        collecting.append(gc.isenabled())
        return answer.fn(ctx)

    monkeypatch.setitem(registry._GRADERS, "answer", registry.Grader("answer", "1", recording))
    during: list[bool] = []
    regrade(store, report.run_id, suite, progress=lambda _: during.append(gc.isenabled()))
    assert collecting and not any(collecting)  # paused while grading
    assert during and all(during)  # and collecting between shares, as the parent tallies
    assert gc.isenabled()

    def broken(ctx: Any) -> list[Check]:
        raise KeyboardInterrupt

    monkeypatch.setitem(registry._GRADERS, "answer", registry.Grader("answer", "1", broken))
    with pytest.raises(KeyboardInterrupt):
        regrade(store, report.run_id, suite)
    assert gc.isenabled()


def test_a_worker_loads_only_the_task_files_of_its_shares(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two workers would each load the whole suite before their first trial: a worker
    loads the files of the tasks it is handed, each checked as it was at the run."""
    copy = tmp_path / "mini"
    shutil.copytree(MINI, copy)
    source = SuiteSource.of(load_suite(copy))
    count_file = copy / "tasks" / "count-item.json"
    count_file.write_text(count_file.read_text().replace('"equals": 2', '"equals": 3'))
    monkeypatch.setattr(worker_source, "_suites", {})
    pair = source.members(["paint-item"])  # its file's other task comes with it
    assert set(pair) == {"paint-item", "dated-item"}
    assert all(pair[t].task.digest == source.digests[t] for t in pair)
    assert "items.get" in source.members(["read-item"])["read-item"].domain.tools
    with pytest.raises(ExecutorError, match="'count-item' changed on disk"):
        source.members(["count-item"])
    assert source.between("d", "paint-item") == ["dated-item", "paint-item"]


_PART = st.sampled_from(["a", "b", "ab", "..", ".", "a.b"])


@given(st.lists(_PART, max_size=4), st.lists(_PART, max_size=4))
def test_a_task_files_place_below_its_root_is_what_relpath_says(
    root: list[str], below: list[str]
) -> None:
    """A task's file is named below its suite root by text (`_below`), where relpath split
    both paths: the same name for a file below the root, at it, or outside it."""
    top = os.path.normpath("/" + "/".join(root))
    path = os.path.normpath(os.path.join(top, *below))
    assert worker_source._below(path, top) == os.path.relpath(path, top)


def test_a_worker_looks_a_tasks_domain_up_to_the_root_the_suite_was_loaded_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task file deep in a folder without `tasks/` finds the domain.py at the root the
    command line named, as `load_suite` found it, not only its own folder's."""
    root = tmp_path / "suite"
    deep = root / "a" / "b"
    deep.mkdir(parents=True)
    shutil.copy(MINI / "domain.py", root / "domain.py")
    for file in (MINI / "tasks").iterdir():
        shutil.copy(file, deep / file.name)
    suite = load_suite(root)
    monkeypatch.setattr(worker_source, "_suites", {})
    members = SuiteSource.of(suite).members()
    assert {t: m.task.digest for t, m in members.items()} == {
        t.id: t.task.digest for t in suite.tasks
    }
    assert all(m.domain.name == "mini" for m in members.values())


def test_a_suite_reached_through_a_link_ships_its_task_files_to_workers_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ray worker's working directory is the shipped folder, resolved: each task's
    file travels relative to it, also when the suite was named through a link."""
    real = tmp_path / "real"
    shutil.copytree(MINI, real / "mini")
    (tmp_path / "link").symlink_to(real)
    suite = load_suite(tmp_path / "link" / "mini")
    shipped = SuiteSource.of(suite).shipped(real.resolve())
    assert {root for root, _ in shipped.files.values()} == {"mini"}
    monkeypatch.chdir(real)
    monkeypatch.setattr(worker_source, "_suites", {})
    members = shipped.members(["read-item"])
    assert members["read-item"].task.digest == shipped.digests["read-item"]
