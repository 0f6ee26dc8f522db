"""Resume: a run killed with SIGKILL part-way, resumed, equals a run never interrupted.

Trials already stored are kept, trials in flight are redone with their own seeds, and no
trial is stored twice. A resumption that is not the same run is refused with one line.
"""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cancelled_at
from proctor import Runner, Store, load_agent, load_suite
from proctor.run.resume import ResumeError
from store_sql import sql

FIXTURES = Path(__file__).parent / "fixtures"
MINI = FIXTURES / "mini"
AGENTS = FIXTURES / "exec_agents.py"
PROCTOR = Path(sys.executable).parent / "proctor"
TRIALS = 12
TOTAL = 4 * TRIALS  # the mini suite has four tasks


def command(store: Path, agent: str = "Slow", *extra: str) -> list[str]:
    return [
        str(PROCTOR),
        "run",
        str(MINI),
        "--agent",
        f"{AGENTS}:{agent}",
        "--trials",
        str(TRIALS),
        "--seed",
        "5",
        "-j",
        "2",
        "--store",
        str(store),
        "--quiet",
        *extra,
    ]


def stored_count(db: Path) -> int:
    """Committed trials, read as another process would (the run is still writing)."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            return conn.execute("SELECT COUNT(*) FROM trials").fetchone()[0]
    except sqlite3.OperationalError:  # no file or no table yet
        return 0


def trials_of(store: Store, run_id: str) -> dict[tuple[str, int], tuple[Any, ...]]:
    return {
        (r.task_id, r.trial): (r.status, r.seed, sorted((c.name, c.passed) for c in r.checks))
        for r in store.trial_results(run_id)
    }


def test_a_killed_run_resumes_to_what_an_uninterrupted_run_stores(tmp_path: Path) -> None:
    db = tmp_path / "killed.db"
    proc = subprocess.Popen(command(db), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    give_up = time.monotonic() + 120
    while stored_count(db) < 6:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < give_up, "the run stored nothing"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()

    store = Store(db)
    killed = store.run("latest")
    assert killed["status"] == "running" and killed["summary"] is None
    kept = trials_of(store, killed["run_id"])
    assert 6 <= len(kept) < TOTAL

    resumed = subprocess.run(
        command(db, "Slow", "--resume", killed["run_id"]), capture_output=True, text=True
    )
    assert resumed.returncode == 0, resumed.stderr
    assert f"run {killed['run_id']}: {TOTAL} trials" in resumed.stdout
    whole = subprocess.run(command(tmp_path / "whole.db"), capture_output=True, text=True)
    assert whole.returncode == 0, whole.stderr

    reference = Store(tmp_path / "whole.db")
    expected = trials_of(reference, reference.run("latest")["run_id"])
    after = trials_of(store, killed["run_id"])
    assert after == expected  # same (task, trial) pairs, seeds and verdicts
    assert {k: after[k] for k in kept} == kept  # the stored trials were kept, not redone
    assert {s for s, _, _ in expected.values()} == {"passed", "failed"}
    (rows,) = (
        sql(store)
        .execute("SELECT COUNT(*) FROM trials WHERE run_id = ?", (killed["run_id"],))
        .fetchone()
    )
    assert rows == TOTAL  # nothing stored twice
    row = store.run(killed["run_id"])
    assert row["status"] == "completed"
    assert row["summary"]["trials"] == TOTAL and row["summary"]["missing_trials"] == 0
    assert len(row["manifest"]["resumes"]) == 1


def test_an_interrupted_run_resumes_in_process(tmp_path: Path) -> None:
    suite = load_suite(MINI)
    agent = load_agent(f"{AGENTS}:flaky")
    ref = f"{AGENTS}:flaky"
    store = Store(tmp_path / "p.db")
    first = Runner(suite, agent, trials=5, seed=9, store=store, agent_ref=ref, concurrency=2)

    run_cancelled_at(first, 7)
    assert store.run(first.run_id)["status"] == "interrupted"
    kept = len(store.trial_keys(first.run_id))
    assert 7 <= kept < 20  # a record already queued is still stored as the run stops

    again = Runner(
        suite, agent, trials=5, seed=9, store=store, agent_ref=ref, run_id=first.run_id[:6],
        resume=True,
    )  # fmt: skip
    assert again.run_id == first.run_id and again.remaining == 20 - kept
    resumed = again.run()
    whole = Runner(suite, agent, trials=5, seed=9, store=store, agent_ref=ref).run()
    assert trials_of(store, resumed.run_id) == trials_of(store, whole.run_id)
    for key in ("trials", "passed_trials", "statuses", "pass_hat_k", "success_rate"):
        assert getattr(resumed.summary, key) == getattr(whole.summary, key), key
    assert [(t.id, t.n, t.passed) for t in resumed.summary.per_task] == [
        (t.id, t.n, t.passed) for t in whole.summary.per_task
    ]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(PROCTOR), *args], capture_output=True, text=True)


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store holding a run marked interrupted with 3 of its trials."""
    db = tmp_path_factory.mktemp("resume") / "p.db"
    suite = load_suite(MINI)
    store = Store(db)
    runner = Runner(
        suite, load_agent(f"{AGENTS}:flaky"), trials=TRIALS, seed=5, store=store,
        agent_ref=f"{AGENTS}:Slow",
    )  # fmt: skip
    store.create_run(runner.run_id, runner.manifest)
    store.finish_run(runner.run_id, "interrupted", {})
    return db, runner.run_id


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (["--seed", "6"], "seed (run: 5, now: 6)"),
        (["--trials", "2"], "trials (run: 12, now: 2)"),
        (["--agent", f"{AGENTS}:flaky"], "agent (run: "),
        (["--task", "read-item"], "suite digest"),
    ],
)
def test_resume_refuses_a_different_run(
    interrupted: tuple[Path, str], change: list[str], why: str
) -> None:
    db, run_id = interrupted
    args = command(db, "Slow", "--resume", run_id)[1:]
    flag = change[0]
    if flag in args:
        at = args.index(flag)
        args[at : at + 2] = change
    else:
        args += change
    done = cli(*args)
    assert done.returncode == 2
    assert why in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert Store(db).run(run_id)["status"] == "interrupted"  # untouched


def test_resume_refuses_a_finished_or_unknown_run(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    suite = load_suite(MINI)
    runner = Runner(suite, load_agent(f"{AGENTS}:flaky"), store=Store(db), agent_ref="a.py:b")
    runner.run()
    with pytest.raises(ResumeError, match="is completed"):
        Runner(suite, runner.agent, store=Store(db), run_id=runner.run_id, resume=True)
    done = cli(*command(db, "Slow", "--resume", "nope")[1:])
    assert done.returncode == 2 and "no run matching 'nope'" in done.stderr
