"""Two processes, one store (issue 20 item 5).

A second process holds the store's write lock in the middle of a run: the run says it
waits, gives up after its bounded wait with one line, is marked `interrupted`, and
`--resume` completes it with nothing stored twice. Two runs on one store both complete.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from proctor import Store

FIXTURES = Path(__file__).parent / "fixtures"
MINI = FIXTURES / "mini"
PATIENCE_S = 120  # how long the test waits for a step before calling it stuck

HOLDER = """
import pathlib, sqlite3, sys, time
db, folder = sys.argv[1], pathlib.Path(sys.argv[2])
while not (folder / "go").exists():
    time.sleep(0.01)
conn = sqlite3.connect(db, timeout=60, isolation_level=None)
conn.execute("BEGIN IMMEDIATE")  # the write lock, held until told to let go
(folder / "locked").touch()
while not (folder / "release").exists():
    time.sleep(0.01)
conn.execute("ROLLBACK")
"""

AGENT = """
import asyncio, pathlib

FOLDER = pathlib.Path({folder!r})


async def agent(input, toolbox):
    if input.trial == 2 and not (FOLDER / "locked").exists():
        (FOLDER / "go").touch()  # now another process takes the store's write lock
        while not (FOLDER / "locked").exists():
            await asyncio.sleep(0.01)
    got = await toolbox.call("items.get", {{"item_id": "a"}})
    return f"Item a is {{got.value['colour']}}."
"""


def command(db: Path, agent: str, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "proctor.cli", "run", str(MINI), "--task", "read-item",
        "--agent", agent, "--trials", "6", "-j", "1", "--store", str(db), "-q", *extra,
    ]  # fmt: skip


def wait_for_line(stream: object, needle: str) -> str:
    """Read stderr lines until one holds `needle` (the run announces its waits there)."""
    deadline = time.monotonic() + PATIENCE_S
    while time.monotonic() < deadline:
        line = stream.readline()  # type: ignore[attr-defined]
        if needle in line:
            return str(line)
        if not line:
            break
    raise AssertionError(f"no line with {needle!r}")


def test_a_lock_held_by_another_process_interrupts_the_run_and_resume_completes_it(
    tmp_path: Path,
) -> None:
    db = tmp_path / "p.db"
    Store(db).close()
    (tmp_path / "agents.py").write_text(AGENT.format(folder=str(tmp_path)))
    agent = f"{tmp_path / 'agents.py'}:agent"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(db), str(tmp_path)])
    env = {**os.environ, "PROCTOR_STORE_BUSY_S": "2"}
    run = subprocess.Popen(
        command(db, agent), stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert run.stderr is not None
        first = wait_for_line(run.stderr, "waiting up to 2 s for another process's write lock")
        assert str(db) in first
        # It gives up and, to record `interrupted`, waits once more: let go of the lock then.
        wait_for_line(run.stderr, "(finishing run")
        (tmp_path / "release").touch()
        _, rest = run.communicate(timeout=PATIENCE_S)
    finally:
        (tmp_path / "release").touch()
        holder.wait(PATIENCE_S)
    assert run.returncode == 1
    assert "held the store's write lock for 2 s" in rest
    assert "Traceback" not in rest
    with Store(db, readonly=True) as store:
        (row,) = store.runs()
        assert row["status"] == "interrupted"
        kept = store.trial_keys(row["run_id"])
    assert len(kept) < 6
    resumed = subprocess.run(
        command(db, agent, "--resume", row["run_id"]), capture_output=True, text=True, env=env
    )
    assert resumed.returncode == 0, resumed.stderr
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT task_id, trial FROM trials ORDER BY trial").fetchall()
        (status,) = conn.execute("SELECT status FROM runs").fetchone()
    assert rows == [("read-item", i) for i in range(6)]  # each trial once
    assert status == "completed"


def test_two_runs_on_one_store_both_complete(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    agent = f"{FIXTURES / 'exec_agents.py'}:Slow"
    runs = [
        subprocess.Popen(
            command(db, agent, "--seed", str(seed)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in (1, 2)
    ]
    for run in runs:
        _, err = run.communicate(timeout=PATIENCE_S)
        assert run.returncode == 0, err
    with Store(db, readonly=True) as store:
        finished = store.runs()
        assert [r["status"] for r in finished] == ["completed", "completed"]
        assert [len(store.trial_keys(r["run_id"])) for r in finished] == [6, 6]


def test_a_run_and_a_grade_on_one_store_both_complete(tmp_path: Path) -> None:
    """`proctor grade` writes its run while a live run commits trials to the same store."""
    from support_run import SUPPORT
    from test_import_replay import LOG

    db, log = tmp_path / "p.db", tmp_path / "sessions.json"
    sessions = [{**LOG[0], "id": f"prod-{i}"} for i in range(30)]  # graded as the run writes
    log.write_text(json.dumps(sessions))
    run = subprocess.Popen(
        command(db, f"{FIXTURES / 'exec_agents.py'}:Slow", "--trials", "80"),  # ~4 s of trials
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    grade = subprocess.run(
        [sys.executable, "-m", "proctor.cli", "grade", str(log), "--suite", str(SUPPORT),
         "--store", str(db), "-q"],
        capture_output=True, text=True, timeout=PATIENCE_S,
    )  # fmt: skip
    _, err = run.communicate(timeout=PATIENCE_S)
    assert run.returncode == 0, err
    assert grade.returncode == 0, grade.stderr
    with Store(db, readonly=True) as store:
        finished = store.runs()
        assert [r["status"] for r in finished] == ["completed", "completed"]
        counts = sorted(len(store.trial_keys(r["run_id"])) for r in finished)
    assert counts == [30, 80]  # each session once, the run's trials


def test_a_run_beside_the_review_desk_both_complete(
    desk_db: Path, desk_store: Store, desk_prepared: dict[str, Any]
) -> None:
    """Reviewers label at a live desk while a run in another process commits its trials
    to the same store: the run completes and every posted label is kept."""
    from desk_support import FAIL, claim, http_client, label_count, live_desk, reviewer, sign_in

    run_id = desk_prepared["run"].run_id
    before = len(desk_store.runs())
    links = [reviewer(desk_store, name) for name in ("alice", "bob")]
    run = subprocess.Popen(
        command(desk_db, f"{FIXTURES / 'exec_agents.py'}:Slow", "--trials", "80"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    posted = 0
    with live_desk(desk_db) as url:
        sessions = [sign_in(http_client(url), link) for link in links]
        queued = sessions[0].client.get(f"/runs/{run_id}/queue").text
        item_ids = [int(x.split('"', 1)[0]) for x in queued.split('href="/items/')[1:]]
        deadline = time.monotonic() + PATIENCE_S
        while len(desk_store.runs()) == before:  # until the run has begun writing
            assert run.poll() is None and time.monotonic() < deadline, run.communicate()
            time.sleep(0.02)
        for n, item_id in enumerate(item_ids):
            if run.poll() is not None:
                break
            session = sessions[n % 2]
            assignment = claim(session, item_id)
            if assignment is None:
                continue
            done = session.post(f"/assignments/{assignment}/label", FAIL, follow_redirects=False)
            assert done.status_code == 303, done.text[:300]
            posted += 1
    _, err = run.communicate(timeout=PATIENCE_S)
    assert run.returncode == 0, err
    assert posted >= 1 and label_count(desk_db) == posted  # posted while the run wrote
    with Store(desk_db, readonly=True) as store:
        latest = store.run("latest")
        assert latest["status"] == "completed" and len(store.trial_keys(latest["run_id"])) == 80


def test_a_second_store_in_a_process_keeps_the_first_ones_locks(tmp_path: Path) -> None:
    """Opening a store reads its header; beside a live connection of the same process that
    read must not drop the connection's locks, or another process closing its last
    connection deletes the WAL under this one's writes, and they are lost."""
    db = tmp_path / "p.db"
    writer = Store(db)
    writer.create_run("r1", {"suite": {}})  # in the WAL, not yet checkpointed
    Store(db, readonly=True).close()  # a second store in this process, opened and closed
    subprocess.run(
        [sys.executable, "-c", f"import sqlite3; sqlite3.connect({str(db)!r}).execute("
         "'SELECT COUNT(*) FROM runs').fetchone()"],
        check=True, timeout=PATIENCE_S,
    )  # fmt: skip
    assert db.with_name("p.db-wal").exists()  # still this process's, with its writes
    writer.create_run("r2", {"suite": {}})
    writer.close()
    with Store(db, readonly=True) as reader:
        assert sorted(r["run_id"] for r in reader.runs()) == ["r1", "r2"]


def test_creating_a_side_table_leaves_an_open_transaction_open(tmp_path: Path) -> None:
    """`Store.ensure` runs its statements one by one: `executescript` would have committed
    the write another caller had begun, so its rollback would no longer undo it."""
    from store_sql import sql

    with Store(tmp_path / "p.db") as store:
        db = sql(store)
        db.execute("BEGIN")
        db.execute("INSERT INTO meta(key, value) VALUES ('half-done', '1')")
        store.ensure("creating a side table", "CREATE TABLE IF NOT EXISTS side (x INTEGER);")
        assert db.in_transaction
        db.execute("ROLLBACK")
        assert db.execute("SELECT 1 FROM meta WHERE key = 'half-done'").fetchone() is None
