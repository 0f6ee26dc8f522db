"""A trial's trace events are one row (`traces`): they read back as written (seq order,
`t` a float, a zero's sign kept, data as `json` decodes its own text), whatever the data
holds; and a store written with a row per event (schema 3) reads as that table gave them
(its REAL column kept no sign of a zero), opened read-only as it is or migrated when
opened for writing."""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import sqlite3
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from proctor import Store
from proctor.core.trace import Trace, TraceEvent
from proctor.run.trial import HARNESS_CHECKS
from proctor.store.sqlite import SCHEMA_VERSION, _dumps, event_lists
from store_sql import sql
from test_store import one_trial
from test_store_json import same, values

RECORD = one_trial()

#: The events table of schema 3 and before, as those stores made it.
_SCHEMA_3_EVENTS = """
CREATE TABLE events (
    trial_rowid INTEGER NOT NULL REFERENCES trials(id),
    seq INTEGER NOT NULL,
    t REAL NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (trial_rowid, seq)
) WITHOUT ROWID
"""

datas = st.dictionaries(st.text(), values, max_size=4)
times = st.floats(allow_nan=False) | st.integers(min_value=-(2**53), max_value=2**53)
traces = st.lists(st.tuples(times, st.text(), datas), max_size=6).map(
    lambda events: [TraceEvent(i + 1, t, kind, data) for i, (t, kind, data) in enumerate(events)]
)


def read_as_rows_gave_them(events: list[TraceEvent]) -> list[TraceEvent]:
    """What the table of a row per event handed back: by seq, `t` through a REAL column
    (which keeps no sign of a zero: -0.0 reads back 0.0), each data through `json`'s text
    and decoder."""
    return [replace(e, t=e.t + 0.0) for e in read_as_written(events)]


def read_as_written(events: list[TraceEvent]) -> list[TraceEvent]:
    """What a trace row hands back: by seq, `t` a float as written (its JSON text keeps
    the sign of a zero), each data through `json`'s text and decoder."""
    return [
        TraceEvent(e.seq, float(e.t), e.kind, json.loads(_dumps(e.data)))
        for e in sorted(events, key=lambda e: e.seq)
    ]


def same_events(got: list[TraceEvent], expected: list[TraceEvent]) -> bool:
    return same([dataclasses.astuple(e) for e in got], [dataclasses.astuple(e) for e in expected])


def stored(path: Path | str, events: list[TraceEvent]) -> Store:
    """A store holding the mini suite's trial with `events` as its trace."""
    store = Store(path)
    store.create_run("r1", {})
    result = copy.deepcopy(RECORD.result)
    trace = Trace(RECORD.trace.trial_id, RECORD.trace.trace_id, events)
    store.write_trial(result, trace, RECORD.answer, RECORD.outcome)
    return store


def both_reads(store: Store) -> tuple[list[TraceEvent], list[TraceEvent]]:
    """The trial's events read alone (`trace`) and with its run (`graded_trials`)."""
    [graded] = store.graded_trials("r1", HARNESS_CHECKS)
    return store.trace("r1", "paint-item", 0)[0].events, graded.trace.events


@settings(deadline=None)  # a store write each example: slow on a loaded machine
@given(traces)
@example([TraceEvent(1, -0.0, "note", {})])
def test_any_trace_reads_back_as_written(events: list[TraceEvent]) -> None:
    store = stored(":memory:", events)
    expected = read_as_written(events)
    alone, graded = both_reads(store)
    assert same_events(alone, expected)
    assert same_events(graded, expected)


@settings(deadline=None)
@given(traces)
def test_the_stored_text_is_jsons(events: list[TraceEvent]) -> None:
    """Whichever encoder wrote it (orjson writes NaN as null, 1e-05 as 0.00001)."""
    store = stored(":memory:", events)
    (text,) = sql(store).execute("SELECT events FROM traces").fetchone()
    assert text == _dumps([[e.seq, float(e.t), e.kind, e.data] for e in events])


def test_events_out_of_order_read_back_by_seq_and_a_repeated_seq_is_refused() -> None:
    events = [TraceEvent(3, 0.5, "note", {"c": 1}), TraceEvent(1, 0, "note", {"a": None})]
    events.append(TraceEvent(2, math.inf, "note", {"b": math.nan, "big": 2**70}))
    store = stored(":memory:", events)
    alone, graded = both_reads(store)
    assert [e.seq for e in alone] == [e.seq for e in graded] == [1, 2, 3]
    assert same_events(alone, read_as_written(events))
    assert alone[0].t == 0.0 and isinstance(alone[0].t, float)
    with pytest.raises(ValueError, match="t#0: two trace events numbered 3"):
        event_lists([*events, TraceEvent(3, 1.0, "note", {})], "t#0")


def as_schema_3(path: Path) -> None:
    """Turn the store at `path` into what schema 3 wrote: its trials' events a row each
    (data as `json`'s text), no `traces` table."""
    db = sqlite3.connect(path, isolation_level=None)
    rows = [
        (rowid, seq, t, kind, _dumps(data))
        for rowid, text in db.execute("SELECT trial_rowid, events FROM traces").fetchall()
        for seq, t, kind, data in json.loads(text)
    ]
    db.execute(_SCHEMA_3_EVENTS)
    db.executemany("INSERT INTO events VALUES (?,?,?,?,?)", rows)
    db.execute("DROP TABLE traces")
    db.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    db.close()


@settings(max_examples=25, deadline=None)
@given(traces)
@example([TraceEvent(1, -0.0, "note", {})])
def test_a_schema_3_store_reads_the_same_as_it_is_and_migrated(events: list[TraceEvent]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "p.db"
        stored(path, events).close()
        as_schema_3(path)
        expected = read_as_rows_gave_them(events)
        with Store(path, readonly=True) as old:
            assert "traces" not in tables(old)  # read as it is, not migrated
            assert all(same_events(read, expected) for read in both_reads(old))
        with Store(path) as migrated:
            assert tables(migrated) >= {"traces"} and "events" not in tables(migrated)
            assert all(same_events(read, expected) for read in both_reads(migrated))
            (version,) = (
                sql(migrated)
                .execute("SELECT value FROM meta WHERE key = 'schema_version'")
                .fetchone()
            )
            assert version == str(SCHEMA_VERSION)


def test_a_migrated_store_keeps_every_trial_apart_and_takes_new_ones(tmp_path: Path) -> None:
    """Several trials, one with no events: each keeps its own trace, text for text."""
    path = tmp_path / "p.db"
    store = stored(path, [TraceEvent(1, 0.0, "note", {"x": "ü\u2028"})])
    for trial, events in ((1, []), (2, RECORD.trace.events)):
        result = copy.deepcopy(RECORD.result)
        result.trial = trial
        store.write_trial(result, Trace("t", "id", events), "", RECORD.outcome)
    before = [store.trace("r1", "paint-item", n)[0].events for n in range(3)]
    store.close()
    as_schema_3(path)
    with Store(path) as migrated:
        after = [migrated.trace("r1", "paint-item", n)[0].events for n in range(3)]
        assert [len(events) for events in after] == [1, 0, len(RECORD.trace.events)]
        assert all(same_events(a, b) for a, b in zip(after, before, strict=True))
        result = copy.deepcopy(RECORD.result)
        result.trial = 3
        migrated.write_trial(result, RECORD.trace, "", RECORD.outcome)
        assert same_events(migrated.trace("r1", "paint-item", 3)[0].events, before[2])


def tables(store: Store) -> set[str]:
    return {name for (name,) in sql(store).execute("SELECT name FROM sqlite_master")}


def test_events_of_no_stored_trial_are_left_behind_by_the_migration(tmp_path: Path) -> None:
    """A row whose trial is gone (written without foreign keys) would break the migration's
    insert; no read could reach it, so it is not carried over."""
    path = tmp_path / "p.db"
    stored(path, RECORD.trace.events).close()
    as_schema_3(path)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("INSERT INTO events VALUES (99, 1, 0.0, 'note', '{}')")
    db.close()
    with Store(path) as migrated:
        rows = sql(migrated).execute("SELECT trial_rowid FROM traces").fetchall()
        assert rows == [(1,)]
        [read] = migrated.graded_trials("r1", HARNESS_CHECKS)
        assert same_events(read.trace.events, read_as_rows_gave_them(RECORD.trace.events))
