"""Stores that are read-only, damaged, full or locked (issue 18 item 17, issue 20 items 5-6).

Each damaged store is made here from a healthy one: truncated, a foreign file, garbage
pages in the middle, a newer schema, broken JSON in a row. Read commands give one line
(never a traceback) and still serve the runs they can read; `proctor run` refuses to
write into a store that failed its check, and leaves its bytes as they were.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import proctor
from proctor import Runner, Store, load_agent, load_suite
from proctor.store import StoreDamaged, StoreError, StoreFull

FIXTURES = Path(__file__).parent / "fixtures"
MINI = FIXTURES / "mini"
AGENT = f"{FIXTURES / 'exec_agents.py'}:flaky"


def two_runs(db: Path) -> tuple[str, str]:
    """A store holding two finished runs of the mini suite; their ids. Its pages are
    SQLite's default size, not a new store's (PAGE_SIZE), so that the last leaf page of
    its checks holds only the second run's (`garbage_in_the_middle`)."""
    made = sqlite3.connect(db)
    made.execute("PRAGMA page_size = 4096")
    made.execute("VACUUM")  # writes the empty file's header: the size stays
    made.close()
    suite = load_suite(MINI)
    ids = []
    with Store(db) as store:
        for seed in (1, 2):
            runner = Runner(suite, load_agent(AGENT), trials=6, seed=seed, store=store)
            ids.append(runner.run().run_id)
    return ids[0], ids[1]


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    db = tmp_path_factory.mktemp("healthy") / "p.db"
    first, second = two_runs(db)
    return db, first, second


def copy_of(healthy: tuple[Path, str, str], where: Path) -> Path:
    db = where / "p.db"
    shutil.copy(healthy[0], db)
    return db


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    """A command's failure: one line on stderr, no traceback."""
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


def run_into(db: Path) -> subprocess.CompletedProcess[str]:
    return proctor("run", str(MINI), "--agent", AGENT, "--store", str(db), "-q")


# -- damaged stores ----------------------------------------------------------------------------


def truncate(db: Path) -> None:
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2])


def edit(db: Path, *statements: str) -> None:
    """Run SQL on a store, as another tool would; closed at once (its WAL checkpointed)."""
    conn = sqlite3.connect(db)
    with conn:
        for statement in statements:
            conn.execute(statement)
    conn.close()


def foreign(db: Path) -> None:
    db.unlink()
    edit(db, "CREATE TABLE photos (id INTEGER PRIMARY KEY, path TEXT)")


def not_sqlite(db: Path) -> None:
    db.write_bytes(b"PK\x03\x04 this is a zip file, not a store" * 100)


def newer_schema(db: Path) -> None:
    edit(db, "UPDATE meta SET value = '99' WHERE key = 'schema_version'")


DAMAGES: dict[str, tuple[Callable[[Path], None], str]] = {
    "truncated": (truncate, "truncated"),
    "a foreign database": (foreign, "not a proctor store"),
    "not SQLite at all": (not_sqlite, "not a SQLite database"),
    "a newer schema": (newer_schema, "written by a newer proctor (store schema 99"),
}


@pytest.mark.parametrize("case", list(DAMAGES))
def test_a_damaged_store_is_refused_in_one_line_and_never_written(
    healthy: tuple[Path, str, str], tmp_path: Path, case: str
) -> None:
    db = copy_of(healthy, tmp_path)
    damage, why = DAMAGES[case]
    damage(db)
    before = digest(db)
    for command in (("runs",), ("show", "latest"), ("export", "latest", "--out", "x.jsonl")):
        result = proctor(*command, "--store", str(db), cwd=tmp_path)
        assert result.returncode == 2
        assert why in one_line(result)
    written = run_into(db)
    assert written.returncode == 2 and why in one_line(written)
    assert digest(db) == before
    assert not (tmp_path / "x.jsonl").exists()


def garbage_in_the_middle(db: Path) -> None:
    """Overwrite the last leaf page of the checks (the second run's) with random bytes."""
    conn = sqlite3.connect(db)
    (page,) = conn.execute(
        "SELECT max(pageno) FROM dbstat WHERE name = 'checks' AND pagetype = 'leaf'"
    ).fetchone()
    (size,) = conn.execute("PRAGMA page_size").fetchone()
    conn.close()
    with db.open("r+b") as file:
        file.seek((page - 1) * size)
        file.write(os.urandom(size))


def test_garbage_in_the_middle_spares_the_runs_that_can_be_read(
    healthy: tuple[Path, str, str], tmp_path: Path
) -> None:
    db = copy_of(healthy, tmp_path)
    _, first, second = healthy
    garbage_in_the_middle(db)
    before = digest(db)
    listed = proctor("runs", "--store", str(db))
    assert listed.returncode == 0 and first in listed.stdout and second in listed.stdout
    good = proctor("export", first, "--out", str(tmp_path / "a.jsonl"), "--store", str(db))
    assert good.returncode == 0, good.stderr
    assert len((tmp_path / "a.jsonl").read_text().splitlines()) == 1 + 4 * 6
    for command in (
        ("export", second, "--out", str(tmp_path / "b.jsonl")),
        ("report", second, "--html", str(tmp_path / "b.html")),
    ):
        bad = proctor(*command, "--store", str(db))
        assert bad.returncode == 2
        assert f"run {second} is unreadable" in one_line(bad)
    written = run_into(db)
    assert written.returncode == 2
    assert "failed its integrity check" in one_line(written)
    assert digest(db) == before


def test_broken_json_in_a_row_names_the_run_and_spares_the_others(
    healthy: tuple[Path, str, str], tmp_path: Path
) -> None:
    db = copy_of(healthy, tmp_path)
    _, first, second = healthy
    edit(db, f"UPDATE runs SET summary = '{{\"trials\": 2' WHERE run_id = '{second}'")
    listed = proctor("runs", "--store", str(db))
    assert listed.returncode == 0
    assert f"run {second} is unreadable" in listed.stderr and first in listed.stdout
    shown = proctor("show", second, "--store", str(db))
    assert shown.returncode == 2 and f"run {second} is unreadable" in one_line(shown)
    assert proctor("show", first, "--store", str(db)).returncode == 0


def test_the_store_api_raises_store_errors_not_sqlite_ones(
    healthy: tuple[Path, str, str], tmp_path: Path
) -> None:
    db = copy_of(healthy, tmp_path)
    garbage_in_the_middle(db)
    with pytest.raises(StoreDamaged, match="failed its integrity check"):
        Store(db)
    with Store(db, readonly=True) as store:
        _, first, second = healthy
        assert len(list(store.trial_results(first))) == 24
        with pytest.raises(StoreDamaged, match=f"run {second} is unreadable"):
            list(store.trial_results(second))


def test_the_desk_checks_a_store_once_not_on_every_new_thread(
    healthy: tuple[Path, str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check reads the whole file: a desk page served by a fresh pool thread must not
    pay it again; a damaged store is still refused by the desk's first connection."""
    from proctor.store import desk, sqlite

    checked: list[Path] = []
    real = sqlite.check_pages
    monkeypatch.setattr(
        sqlite, "check_pages", lambda db, path: checked.append(path) or real(db, path)
    )
    connections = desk.Connections(copy_of(healthy, tmp_path))
    threads = [threading.Thread(target=connections.get) for _ in range(3)]
    for thread in threads:
        thread.start()
        thread.join()
    connections.get()
    assert len(checked) == 1
    (tmp_path / "damaged").mkdir()
    damaged = copy_of(healthy, tmp_path / "damaged")
    garbage_in_the_middle(damaged)
    with pytest.raises(StoreDamaged, match="failed its integrity check"):
        desk.Connections(damaged).get()


# -- a read-only store -------------------------------------------------------------------------


@pytest.fixture
def readonly_store(healthy: tuple[Path, str, str], tmp_path: Path) -> Iterator[Path]:
    """A copy no one can write: a read-only file in a read-only folder, or for root (who
    may write anything), the folder mounted read-only."""
    folder = tmp_path / "ro"
    folder.mkdir()
    shutil.copy(healthy[0], folder / "p.db")
    if os.geteuid() != 0:
        (folder / "p.db").chmod(0o444)
        folder.chmod(0o555)
        yield folder / "p.db"
        folder.chmod(0o755)
        return
    mounted = tmp_path / "mounted"
    mounted.mkdir()
    mount = ["mount", "--bind", str(folder), str(mounted)]
    if subprocess.run(mount, capture_output=True).returncode != 0:
        pytest.skip("running as root without the right to mount: no read-only store")
    try:
        remount = ["mount", "-o", "remount,ro,bind", str(mounted)]
        subprocess.run(remount, check=True, capture_output=True)
        yield mounted / "p.db"
    finally:
        subprocess.run(["umount", str(mounted)], check=True)


def test_read_commands_work_on_a_read_only_store(
    healthy: tuple[Path, str, str], readonly_store: Path, tmp_path: Path
) -> None:
    _, first, _ = healthy
    before = digest(readonly_store)
    with pytest.raises(OSError):  # it really is read-only
        readonly_store.open("ab").close()
    for command in (
        ("runs",),
        ("show", first),
        ("show", first, "--task", "read-item", "--trial", "0"),
        ("export", first, "--out", str(tmp_path / "x.jsonl")),
        ("report", first, "--html", str(tmp_path / "r.html"), "--md", str(tmp_path / "r.md")),
    ):
        result = proctor(*command, "--store", str(readonly_store))
        assert result.returncode == 0, (command, result.stderr)
    assert first in (tmp_path / "r.md").read_text()
    assert len((tmp_path / "x.jsonl").read_text().splitlines()) == 1 + 4 * 6
    written = run_into(readonly_store)
    assert written.returncode == 2 and "read-only" in one_line(written)
    assert digest(readonly_store) == before
    assert sorted(p.name for p in readonly_store.parent.iterdir()) == ["p.db"]


# -- a full disk -------------------------------------------------------------------------------


class Shrinking(Store):
    """A store that fills up after its first commits (SQLite's page limit)."""

    def commit(self) -> None:
        super().commit()
        (pages,) = self._db.execute("PRAGMA page_count").fetchone()
        self._db.execute(f"PRAGMA max_page_count = {pages}")


def test_a_full_disk_stops_the_run_with_a_clear_error_and_loses_nothing(tmp_path: Path) -> None:
    store = Shrinking(tmp_path / "p.db")
    runner = Runner(load_suite(MINI), load_agent(AGENT), trials=50, store=store, concurrency=4)
    with pytest.raises(StoreFull, match="the disk is full"):
        runner.run()
    kept = {(r.task_id, r.trial): r.status for r in store.trial_results(runner.run_id)}
    assert kept  # what was committed is there
    again = Store(tmp_path / "p.db")  # another connection, no limit: the disk has room again
    resumed = Runner(
        load_suite(MINI), load_agent(AGENT), trials=50, store=again, concurrency=4,
        run_id=runner.run_id, resume=True,
    ).run()  # fmt: skip
    assert resumed.summary.status == "completed" and resumed.summary.trials == 200
    after = {(r.task_id, r.trial): r.status for r in again.trial_results(runner.run_id)}
    assert {key: after[key] for key in kept} == kept  # nothing stored changed


def test_the_command_line_says_the_disk_is_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from proctor.cli import common, main

    def full_store(path: str, redact_path: Any = None, *, readonly: bool = False) -> Store:
        return Shrinking(path)

    monkeypatch.setattr(common, "open_store", full_store)
    monkeypatch.setattr("proctor.api.evaluation._open_store", lambda path, say: Shrinking(path))
    junit = tmp_path / "j.xml"
    db = tmp_path / "p.db"
    args = ["run", str(MINI), "--agent", AGENT, "-k", "50", "--store", str(db)]
    result = CliRunner().invoke(main, [*args, "-q", "--junit", str(junit)])
    assert result.exit_code == 1
    assert "the disk is full" in result.output and "--resume" in result.output
    assert 'name="(run)"' in junit.read_text() and "the disk is full" in junit.read_text()


def test_store_errors_are_store_errors() -> None:
    assert issubclass(StoreFull, StoreError) and issubclass(StoreDamaged, StoreError)


def test_figures_over_all_runs_leave_out_an_unreadable_one_and_say_so(
    healthy: tuple[Path, str, str], tmp_path: Path
) -> None:
    """The program's incidents figure and compare's holdout looks read every stored run's
    manifest: a damaged row is left out and named, never a traceback or a silent zero."""
    from proctor.decide.compare import holdout_looks
    from proctor.loop.program import incidents_caught
    from proctor.store.export import load_run

    db = copy_of(healthy, tmp_path)
    _, first, second = healthy
    edit(db, f"UPDATE runs SET manifest = '{{\"agent\": ' WHERE run_id = '{second}'")
    with Store(db, readonly=True) as store:
        figure = incidents_caught(store, load_suite(MINI))
        assert figure["unreadable_runs"] == [second]
        assert second in figure["note"] and "not counted" in figure["note"]
        cand = load_run(first, store)
        digest = cand.manifest.suite.model_copy(update={"holdout_digest": "h"})
        cand.manifest = cand.manifest.model_copy(update={"suite": digest})
        cand.created_at = float("inf")
        rows = store.runs(limit=-1)
        earlier = [{**r, "run_id": "x"} for r in rows if r["run_id"] == first]
        for row in earlier:
            row["manifest"]["suite"]["holdout_digest"] = "h"
        assert holdout_looks(rows + earlier, cand) == 1
