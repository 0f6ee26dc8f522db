"""A trial is stored all or nothing, alone or inside a group (`begin` ... `commit`): a
trial whose rows fail half way leaves none of them, the trials around it in its group are
kept, and the store's JSON text is `json`'s, whichever encoder wrote it."""

from __future__ import annotations

import dataclasses
import enum
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from proctor import Store
from proctor.core.outcome import LedgerEntry, Outcome
from proctor.core.results import Check
from proctor.core.trace import Trace, TraceEvent
from proctor.store import sqlite as store_module
from proctor.store.sqlite import _dumps, compact_json, compact_jsons, encode_trial, transaction
from store_sql import sql
from test_store import count, one_trial, stored_events
from test_store_json import values


def stored(store: Store) -> list[tuple[str, int]]:
    return [(r.task_id, r.trial) for r in store.trial_results("r1")]


def rows_of(store: Store) -> tuple[int, int, int]:
    return count(store, "trials"), stored_events(store), count(store, "checks")


def numbered_twice(record: Any) -> Trace:
    """The record's trace with its last event's number repeated (the table of a row per
    event refused the second by its key; the store still refuses it, before writing)."""
    events = record.trace.events
    again = dataclasses.replace(events[-1], seq=events[-2].seq)
    return Trace(record.trace.trial_id, record.trace.trace_id, [*events[:-1], again])


def with_a_bad_last_check(record: Any) -> Any:
    """The record with a check whose name is missing: `checks.name` is NOT NULL, so its
    insert fails after the trial's row, its trace and its other checks went in."""
    record.result.checks.append(Check(None, "outcome", True))  # type: ignore[arg-type]
    return record


class Untextable:
    def __str__(self) -> str:
        raise ValueError("no text")


@pytest.fixture
def group(tmp_path: Path) -> Store:
    store = Store(tmp_path / "p.db")
    store.create_run("r1", {})
    store.begin()
    return store


def test_a_trial_whose_events_repeat_a_number_leaves_nothing_and_its_group_keeps_the_rest(
    group: Store,
) -> None:
    first, bad, last = one_trial(trial=0), one_trial(trial=1), one_trial(trial=2)
    group.write_trial(first.result, first.trace, first.answer, first.outcome)
    before = rows_of(group)
    with pytest.raises(ValueError, match="paint-item#1: two trace events numbered"):
        group.write_trial(bad.result, numbered_twice(bad), bad.answer, bad.outcome)
    assert rows_of(group) == before  # none of its row, trace or checks stayed
    group.write_trial(last.result, last.trace, last.answer, last.outcome)
    group.commit()
    assert stored(group) == [("paint-item", 0), ("paint-item", 2)]
    assert rows_of(group) == (2, 2 * len(first.trace.events), 2 * len(first.result.checks))


@pytest.mark.parametrize("at_once", [None, 2])
def test_a_trial_whose_last_check_fails_leaves_none_of_its_checks(
    group: Store, at_once: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its checks in one INSERT, or (`at_once`) in several, the last one failing."""
    if at_once is not None:
        monkeypatch.setattr(store_module, "ROWS_AT_ONCE", at_once)
    first, bad = one_trial(trial=0), with_a_bad_last_check(one_trial(trial=1))
    assert len(bad.result.checks) > 2 * (at_once or 0)
    group.write_trial(first.result, first.trace, first.answer, first.outcome)
    before = rows_of(group)
    with pytest.raises(sqlite3.IntegrityError):
        group.write_trial(bad.result, bad.trace, bad.answer, bad.outcome)
    assert rows_of(group) == before
    group.commit()
    assert stored(group) == [("paint-item", 0)]


def test_a_trial_that_cannot_be_encoded_writes_nothing(group: Store) -> None:
    first, bad = one_trial(trial=0), one_trial(trial=1)
    group.write_trial(first.result, first.trace, first.answer, first.outcome)
    before = rows_of(group)
    data = {"value": Untextable()}
    bad.trace.events.append(TraceEvent(len(bad.trace.events) + 1, 9.0, "note", data))
    with pytest.raises(ValueError, match="no text"):
        group.write_trial(bad.result, bad.trace, bad.answer, bad.outcome)
    assert rows_of(group) == before
    group.commit()
    assert stored(group) == [("paint-item", 0)]


class InterruptedAfter:
    """The store's connection, interrupted (Ctrl-C) just as a row of `table` went in."""

    def __init__(self, db: sqlite3.Connection, table: str) -> None:
        self.db, self.insert = db, f"INSERT INTO {table}("

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)

    def execute(self, statement: str, *params: Any) -> Any:
        cursor = self.db.execute(statement, *params)
        if statement.startswith(self.insert):
            raise KeyboardInterrupt
        return cursor


@pytest.mark.parametrize("table", ["trials", "traces"])
def test_an_interrupt_just_after_a_trials_row_leaves_none_of_it(group: Store, table: str) -> None:
    """The group is then committed (a run saves what it has on Ctrl-C): a row without
    its checks and trace would be a stored trial --resume skips."""
    first, cut = one_trial(trial=0), one_trial(trial=1)
    group.write_trial(first.result, first.trace, first.answer, first.outcome)
    before = rows_of(group)
    real = group._db
    group._db = InterruptedAfter(real, table)  # type: ignore[assignment]
    with pytest.raises(KeyboardInterrupt):
        group.write_trial(cut.result, cut.trace, cut.answer, cut.outcome)
    group._db = real
    group.commit()
    assert rows_of(group) == before
    assert stored(group) == [("paint-item", 0)]


def test_a_trial_written_twice_in_a_group_keeps_the_first(group: Store) -> None:
    record = one_trial()
    group.write_trial(record.result, record.trace, record.answer, record.outcome)
    with pytest.raises(sqlite3.IntegrityError):
        group.write_trial(record.result, record.trace, record.answer, record.outcome)
    group.commit()
    assert rows_of(group) == (1, len(record.trace.events), len(record.result.checks))


def test_a_trial_alone_is_durable_at_once_and_a_failed_one_leaves_nothing(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "p.db")
    store.create_run("r1", {})
    good, bad = one_trial(trial=0), with_a_bad_last_check(one_trial(trial=1))
    store.write_trial(good.result, good.trace, good.answer, good.outcome)
    assert not sql(store).in_transaction
    with pytest.raises(sqlite3.IntegrityError):
        store.write_trial(bad.result, bad.trace, bad.answer, bad.outcome)
    assert not sql(store).in_transaction
    reader = Store(tmp_path / "p.db", readonly=True)  # what another process sees
    assert stored(reader) == [("paint-item", 0)]
    assert rows_of(reader) == rows_of(store)


def test_a_transaction_commits_its_writes_or_none_of_them(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.db")
    db = sql(store)
    with transaction(db):
        db.execute("INSERT INTO meta(key, value) VALUES ('a', '1')")
    with pytest.raises(sqlite3.IntegrityError), transaction(db):
        db.execute("INSERT INTO meta(key, value) VALUES ('b', '1')")
        db.execute("INSERT INTO meta(key, value) VALUES ('a', '2')")  # a key taken
    assert not db.in_transaction
    keys = [k for (k,) in db.execute("SELECT key FROM meta WHERE key IN ('a', 'b')")]
    assert keys == ["a"]


# -- the JSON text -----------------------------------------------------------------------------


@given(values)
def test_the_text_is_jsons_for_any_json_value(value: Any) -> None:
    assert compact_json(value) == _dumps(value)


class Colour(enum.Enum):
    RED = 1


class Shade(enum.StrEnum):
    DARK = "dark"


@dataclasses.dataclass
class Point:
    x: int


ODD = [
    1e-05,  # orjson: 0.00001
    -3.936145966292681e-08,  # orjson: e-8
    1.5e-20,
    float("nan"),  # orjson: null
    float("inf"),
    2**64,  # orjson refuses it
    -(2**63) - 1,
    {1: "a", None: 2},  # keys json turns into text
    (1, (2, 3)),
    {"x": {1, 2}},
    b"bytes",
    Shade.DARK,
    Point(3),
    "\ud800 lone",
    "null and e-5 in a string",
    {"a": None},
    {"a": None, "b": float("nan")},  # orjson: null beside a null of json's
    [None, float("-inf")],
    (None, 1.0),  # reads back as a list: written by json, the same text
]


@pytest.mark.parametrize("value", ODD, ids=repr)
def test_the_text_is_jsons_where_orjson_would_write_otherwise(value: Any) -> None:
    assert compact_json(value) == _dumps(value)
    assert compact_json([value]) == _dumps([value])


@given(st.lists(values | st.sampled_from(ODD), max_size=6))
def test_many_texts_at_once_are_each_values_text(batch: list[Any]) -> None:
    assert compact_jsons(iter(batch)) == [_dumps(value) for value in batch]


ledger_entries = st.builds(
    LedgerEntry,
    st.integers(0, 99),
    st.text(max_size=5),
    st.dictionaries(st.text(max_size=3), values, max_size=3),
    st.none() | st.text(max_size=3),
    st.none() | st.text(max_size=3),
)


@given(
    st.dictionaries(st.text(max_size=3), values | st.sampled_from(ODD)), st.lists(ledger_entries)
)
def test_an_outcome_is_stored_as_the_text_of_its_whole_value(
    state: dict[str, Any], ledger: list[LedgerEntry]
) -> None:
    """Its final state and ledger are encoded apart and joined: the text is still `json`'s
    of `Outcome.to_dict`, a NaN or a lone surrogate in either part included."""
    record = one_trial()
    outcome = Outcome(state, ledger)
    stored = encode_trial(record.result, record.answer, outcome, None).row[13]  # its column
    assert stored == _dumps(outcome.to_dict())


def test_a_plain_enum_is_stored_by_value() -> None:
    """The one value the text differs on: orjson writes a plain Enum member as its value,
    `json` (through `str`) as its name; both read back as text or a number."""
    assert json.loads(compact_json({"c": Colour.RED})) == {"c": 1}


@pytest.mark.parametrize("lowered", ["rows", "values"])
def test_checks_inserted_a_few_at_a_time_read_back_whole_and_in_order(
    group: Store, monkeypatch: pytest.MonkeyPatch, lowered: str
) -> None:
    """More checks than one INSERT takes (`ROWS_AT_ONCE`, or SQLite's limit on the values
    a statement binds: two checks' and the rowid, lowered here)."""
    record = one_trial()
    if lowered == "rows":
        monkeypatch.setattr(store_module, "ROWS_AT_ONCE", 2)
    else:
        encoded = encode_trial(record.result, record.answer, record.outcome, None)
        width = len(encoded.checks[0])  # ample for 2 rows and the trial's row, not 3 rows
        limit = max(1 + 2 * width + 1, len(encoded.row))
        group._db.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, limit)
    group.write_trial(record.result, record.trace, record.answer, record.outcome)
    group.commit()
    [back] = group.trial_results("r1")
    assert len(record.result.checks) > 2 * 2
    assert [c.to_dict() for c in back.checks] == [
        json.loads(json.dumps(c.to_dict())) for c in record.result.checks
    ]
