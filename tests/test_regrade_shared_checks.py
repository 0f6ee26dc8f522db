"""A regraded trial shares the rows of checks stored for the trial it regrades where its
graders made the same checks (`checks_of`, told by `checks_digest`; run/regrade.py): what
a run reads back is what writing its own rows reads back, in this process and in
workers, a regrade of a regrade and a store written before the digest alike."""

from __future__ import annotations

import math
import runpy
import shutil
import sqlite3
from collections.abc import Collection
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proctor import Runner, Store, load_suite
from proctor.core.results import Check, TrialResult, Usage
from proctor.env.suite import Suite
from proctor.run import regrade as regrade_module
from proctor.run.pool import InlinePool, Pool, ProcessPool
from proctor.run.regrade import regrade
from proctor.store import desk
from proctor.store.shares import EncodedShare
from proctor.store.sqlite import (
    SCHEMA_VERSION,
    EncodedTrial,
    checks_digest,
    compact_json,
    encode_trial,
)
from store_sql import sql
from test_regrade_shares import every_trial

ROOT = Path(__file__).resolve().parents[1]
BENCH = runpy.run_path(str(ROOT / "benchmarks" / "workload.py"))
TASKS = 12


def write_suite(folder: Path, raised: Collection[int] = ()) -> Suite:
    """The benchmark's workload as files (benchmarks/workload.py), the tasks in `raised`
    with one tool call more in their budget."""
    BENCH["write_suite"](folder, TASKS, raised)
    return load_suite(folder)


def stored_run(tmp_path: Path) -> tuple[Store, str, Suite]:
    suite = write_suite(tmp_path / "suite")
    store = Store(tmp_path / "p.db")
    agent = BENCH["workload"](TASKS)[1]
    return store, Runner(suite, agent, trials=3, concurrency=2, store=store).run().run_id, suite


def own_rows(store: Store, run_id: str) -> int:
    """The rows of checks a run wrote for its own trials."""
    query = "SELECT COUNT(*) FROM checks c JOIN trials t ON c.trial_rowid = t.id WHERE t.run_id = ?"
    return int(sql(store).execute(query, (run_id,)).fetchone()[0])


def sharing(store: Store, run_id: str) -> dict[tuple[str, int], int | None]:
    """Each trial's `checks_of`."""
    query = "SELECT task_id, trial, checks_of FROM trials WHERE run_id = ?"
    return {(task, n): of for task, n, of in sql(store).execute(query, (run_id,))}


def pools() -> list[Pool]:
    return [InlinePool(), ProcessPool(1), ProcessPool(2)]


def test_a_regrade_whose_graders_decide_as_before_writes_no_check_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In this process, in one worker (tuples) and in two (packed), several shares each:
    every trial reads back as its source's, with no row of checks of its own, and a regrade
    of that regrade names the first trial that has them (no chain to follow)."""
    store, source, suite = stored_run(tmp_path)
    monkeypatch.setattr(regrade_module, "SHARE", 10)
    graded = every_trial(store, source)
    for pool in pools():
        with pool:
            first = regrade(store, source, suite, pool=pool)
            again = regrade(store, first.run_id, suite, pool=pool)
        for done in (first, again):
            assert not done.flips
            assert every_trial(store, done.run_id) == graded
            assert own_rows(store, done.run_id) == 0
        owners = set(sharing(store, again.run_id).values())
        assert None not in owners
        marks = ",".join("?" * len(owners))
        query = f"SELECT run_id, checks_of FROM trials WHERE id IN ({marks})"
        assert set(sql(store).execute(query, list(owners))) == {(source, None)}


def test_a_regrade_that_changes_checks_reads_back_what_writing_them_all_reads_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Against the same regrade of a copy of the store where nothing can be shared (its
    digests taken out): the same trials, checks and evidence read back; the trials of the
    tasks whose budget changed wrote their own rows, and only they."""
    store, source, _ = stored_run(tmp_path)
    store.close()
    shutil.copy(tmp_path / "p.db", tmp_path / "alone.db")
    alone = Store(tmp_path / "alone.db")
    sql(alone).execute("UPDATE trials SET checks_digest = NULL")
    store = Store(tmp_path / "p.db")
    changed = write_suite(tmp_path / "changed", {2, 5})
    monkeypatch.setattr(regrade_module, "SHARE", 10)
    for pool in pools():
        with pool:
            shared = regrade(store, source, changed, pool=pool)
            written = regrade(alone, source, changed, pool=pool)
        assert set(shared.changed_tasks) == {"cancel-2", "cancel-5"}
        assert every_trial(store, shared.run_id) == every_trial(alone, written.run_id)
        own = {key for key, of in sharing(store, shared.run_id).items() if of is None}
        assert {task for task, _ in own} == {"cancel-2", "cancel-5"}
        assert set(sharing(alone, written.run_id).values()) == {None}
        per_trial = own_rows(alone, written.run_id) // (3 * TASKS)  # every trial: 11 checks
        assert per_trial > 0 and own_rows(store, shared.run_id) == per_trial * len(own)


def as_schema_4(path: Path) -> None:
    """Turn the store at `path` into what schema 4 wrote: no `checks_digest`, no `checks_of`
    (SQLite drops no column a foreign key names: the table is made again)."""
    db = sqlite3.connect(path, isolation_level=None)
    columns = [row[1] for row in db.execute("PRAGMA table_info(trials)")]
    kept = ", ".join(c for c in columns if c not in ("checks_digest", "checks_of"))
    (made,) = db.execute("SELECT sql FROM sqlite_master WHERE name = 'trials'").fetchone()
    old = made.replace(
        "    checks_digest BLOB,\n    checks_of INTEGER REFERENCES trials(id),\n", ""
    )
    assert old != made
    db.execute("PRAGMA foreign_keys=OFF")
    db.execute("BEGIN")
    db.execute(old.replace("CREATE TABLE trials", "CREATE TABLE trials_4"))
    db.execute(f"INSERT INTO trials_4({kept}) SELECT {kept} FROM trials")
    db.execute("DROP TABLE trials")
    db.execute("ALTER TABLE trials_4 RENAME TO trials")
    db.execute("CREATE INDEX trials_by_run_status ON trials(run_id, task_id, status)")
    db.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    db.execute("COMMIT")
    db.close()


def test_a_store_of_schema_4_reads_as_it_is_and_its_regrade_writes_every_check(
    tmp_path: Path,
) -> None:
    store, source, suite = stored_run(tmp_path)
    graded = every_trial(store, source)
    store.close()
    as_schema_4(tmp_path / "p.db")
    with Store(tmp_path / "p.db", readonly=True) as old:  # read as it is, not migrated
        assert every_trial(old, source) == graded
        assert all(s.checks_digest is None for s in old.graded_trials(source, ()))
    with Store(tmp_path / "p.db") as migrated:
        version = sql(migrated).execute("SELECT value FROM meta WHERE key = 'schema_version'")
        assert version.fetchone() == (str(SCHEMA_VERSION),)
        done = regrade(migrated, source, suite)
        assert every_trial(migrated, done.run_id) == graded
        assert own_rows(migrated, done.run_id) == own_rows(migrated, source)
        again = regrade(migrated, done.run_id, suite)  # its own rows now have digests
        assert own_rows(migrated, again.run_id) == 0
        assert every_trial(migrated, again.run_id) == graded


def test_the_review_desk_reads_a_shared_trials_checks(tmp_path: Path) -> None:
    store, source, suite = stored_run(tmp_path)
    done = regrade(store, source, suite)
    for task_id, trial in every_trial(store, source):
        shared = desk.trial_row(store, done.run_id, task_id, trial)
        assert shared is not None and shared == desk.trial_row(store, source, task_id, trial)
        assert shared[3]


_SCORE = st.floats(allow_nan=False) | st.integers(-3, 3) | st.booleans()
_CHECK = st.tuples(
    st.text(max_size=8),
    st.sampled_from(["outcome", "answer", "budget"]),
    st.booleans(),
    _SCORE,
    st.none() | st.sampled_from(["low", "high"]),
    st.dictionaries(st.text(max_size=4), st.none() | st.integers() | st.text(max_size=6)),
)


def _encoded(checks: list[tuple[Any, ...]]) -> EncodedTrial:
    """The rows a trial making `checks` is written as."""
    made = [Check(*check) for check in checks]
    return encode_trial(TrialResult("r", "t", 0, 1, "failed", made, Usage(), 0.1), None, None, None)


def _shares(new: list[tuple[Any, ...]], stored: list[tuple[Any, ...]]) -> bool:
    """Does a regraded trial making `new` share the rows of a trial stored making `stored`
    (digested as the store digests the rows it inserts)?"""
    share = EncodedShare()
    share.add(_encoded(new), "failed", (7, checks_digest(_encoded(stored).checks)))
    return bool(share.rows[0][-1] == 7)


def _stored(checks: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The rows the store keeps for `checks` (a real score, the evidence's JSON text)."""
    return [
        (n, kind, int(passed), float(score) + 0.0, sev, compact_json(evidence))
        for n, kind, passed, score, sev, evidence in checks
    ]


@settings(max_examples=300, deadline=None)
@given(st.lists(_CHECK, max_size=4), st.lists(_CHECK, max_size=4))
def test_a_regraded_trial_shares_stored_checks_only_where_the_store_keeps_the_same_rows(
    one: list[tuple[Any, ...]], other: list[tuple[Any, ...]]
) -> None:
    """An integer score and its real, True and 1.0, 0.0 and -0.0 are kept alike; anything
    else that differs (a name, an evidence or its keys' order, a score in its last bit)
    shares nothing, nor does a list with an infinite score (JSON writes it as null)."""
    finite = all(math.isfinite(score) for _, _, _, score, _, _ in one)
    assert _shares(one, other) is (_stored(one) == _stored(other) and finite)


@pytest.mark.parametrize(
    ("score", "other"),
    [
        (math.inf, -math.inf),
        (math.inf, math.inf),
        (0.1, math.nextafter(0.1, 1)),
        (1, 1.0000000000000002),
        (1, 1.0),
        (True, 1.0),
        (-0.0, 0.0),
    ],
)
def test_scores_share_where_their_column_keeps_one_finite_value(score: float, other: float) -> None:
    check: tuple[Any, ...] = ("c", "outcome", False, score, None, {"n": 1})
    same = float(score) + 0.0 == float(other) + 0.0 and math.isfinite(score)
    assert _shares([check], [(*check[:3], other, *check[4:])]) is same
    assert _shares([check], [check]) is math.isfinite(score)


def test_evidence_in_another_keys_order_shares_nothing() -> None:
    """The stored text keeps the keys' order, so the rows differ."""
    first = ("c", "outcome", True, 1.0, None, {"a": 1, "b": 2})
    assert not _shares([first], [(*first[:5], {"b": 2, "a": 1})])
