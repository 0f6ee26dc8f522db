"""The gateway's state diff (core.jsonvalues.diff): the rows a plain walk would give,
however many unchanged subtrees its shortcut skips; a write's Snapshot gives diff's rows
and the state back as it was."""

from __future__ import annotations

import copy
import marshal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from proctor.core.jsonvalues import (
    Snapshot,
    copy_json,
    copy_twice,
    diff,
    fingerprint,
    frozen,
    json_equal,
)

KEYS = st.text(alphabet="abcdefg", min_size=1, max_size=3)
LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.floats(-3, 3, allow_nan=False)
    | st.sampled_from([0.0, 1.0, "x", ""])
)
JSON = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=20,
)


def walked(before: Any, after: Any, path: str = "") -> list[dict[str, Any]]:
    """The rows by definition: every key walked, leaves compared as JSON."""
    if isinstance(before, dict) and isinstance(after, dict):
        rows: list[dict[str, Any]] = []
        for key in before.keys() | after.keys():
            sub = f"{path}.{key}" if path else str(key)
            if key not in after:
                rows.append({"path": sub, "before": before[key], "after": None, "op": "remove"})
            elif key not in before:
                rows.append({"path": sub, "before": None, "after": after[key], "op": "add"})
            else:
                rows.extend(walked(before[key], after[key], sub))
        return rows
    if json_equal(before, after):
        return []
    return [{"path": path, "before": before, "after": after, "op": "replace"}]


def edited(value: Any, edits: list[tuple[list[str], Any]]) -> Any:
    """A copy of `value` with each edit's path (as far as it reaches) set to its value."""
    out = copy.deepcopy(value)
    edit(out, edits)
    return out


def edit(out: Any, edits: list[tuple[list[str], Any]]) -> None:
    """Set each edit's path (as far as it reaches) in `out`, in place, as a tool would."""
    for path, new in edits:
        node = out
        for key in path[:-1]:
            if not isinstance(node, dict) or not isinstance(node.get(key), dict):
                break
            node = node[key]
        if isinstance(node, dict) and path:
            node[path[-1]] = new


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(KEYS, JSON, max_size=6),
    st.lists(st.tuples(st.lists(KEYS, min_size=1, max_size=3), JSON), max_size=3),
)
def test_diff_gives_the_rows_of_a_plain_walk(before: Any, edits: Any) -> None:
    after = edited(before, edits)
    rows = diff(before, after)
    assert rows == sorted(walked(before, after), key=lambda row: row["path"])
    assert (rows == []) == json_equal(before, after)


def test_true_for_one_deep_in_an_equal_looking_subtree_is_a_change() -> None:
    """`==` takes true for 1: the shortcut must not skip a subtree that only looks equal."""
    before = {"orders": {f"A-{i}": {"paid": True, "total": i} for i in range(20)}}
    after = copy.deepcopy(before)
    after["orders"]["A-7"]["paid"] = 1
    assert before == after  # what a plain `==` shortcut would have trusted
    assert diff(before, after) == [
        {"path": "orders.A-7.paid", "before": True, "after": 1, "op": "replace"}
    ]


def typed(value: Any) -> Any:
    """`value` with every leaf's type and every dict's key order, so `1` is not `True`."""
    if isinstance(value, dict):
        return [(key, typed(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [typed(item) for item in value]
    return (type(value), value)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(KEYS, JSON | st.dictionaries(KEYS, JSON, max_size=5), max_size=5),
    st.lists(st.tuples(st.lists(KEYS, min_size=1, max_size=3), JSON), max_size=3),
    st.lists(KEYS, max_size=2),
)
def test_a_snapshot_gives_diffs_rows_and_the_state_as_it_was(
    state: Any, edits: Any, dropped: list[str]
) -> None:
    """The state is changed in place after the snapshot, as a write tool changes it."""
    before = copy.deepcopy(state)
    snapshot = Snapshot(state)
    edit(state, edits)
    for path in dropped:  # an entry of a collection removed, or a whole collection
        node = state.get(path[:1])
        if isinstance(node, dict) and path in node:
            del node[path]
        state.pop(path, None)
    assert typed(snapshot.changes(state)) == typed(diff(before, state))
    assert typed(snapshot.value()) == typed(before)


def test_a_snapshot_of_a_state_marshal_cannot_write_diffs_its_copy() -> None:
    """The gateway's copy before a write (copy_json: foreign objects as text)."""

    class Odd:
        pass

    state: dict[str, Any] = {"a": {"x": 1, "odd": Odd()}}
    snapshot, copied = Snapshot(state), copy_json(state)
    state["a"]["x"] = True
    assert snapshot.changes(state) == diff(copied, state)
    assert {"path": "a.x", "before": 1, "after": True, "op": "replace"} in diff(copied, state)


def test_a_value_marshal_cannot_write_stored_by_a_write_is_a_change() -> None:
    state: dict[str, Any] = {"orders": {"A": {"n": 1}}}
    snapshot = Snapshot(state)
    odd = object()
    state["orders"]["A"]["n"] = odd
    assert snapshot.changes(state) == [
        {"path": "orders.A.n", "before": 1, "after": odd, "op": "replace"}
    ]


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(KEYS, JSON, max_size=6))
def test_a_copy_loaded_from_frozen_bytes_is_equal_and_has_their_fingerprint(state: Any) -> None:
    """A trial's starting state is loaded from bytes made once per task: each copy must
    equal the state and carry the fingerprint the gateway compares later writes against."""
    kept = frozen(state)
    assert kept is not None
    data, settled = kept
    first, second = marshal.loads(data), marshal.loads(data)
    assert first == state and type(first) is dict and first is not second
    assert fingerprint(first) == settled == fingerprint(state)
    assert typed(first) == typed(state)  # `true` stays `true`, not `1`


def test_a_type_only_change_in_a_collection_written_in_place_is_a_change() -> None:
    """A write that keeps a collection's keys in order has its entries compared by their
    bytes in one pass: `true` turned `1` beside a real change must show, the rest not."""
    state = {"orders": {f"A-{i}": {"paid": True, "status": "placed"} for i in range(20)}}
    snapshot = Snapshot(state)
    state["orders"]["A-3"]["status"] = "cancelled"
    state["orders"]["A-7"]["paid"] = 1
    assert snapshot.changes(state) == [
        {"path": "orders.A-3.status", "before": "placed", "after": "cancelled", "op": "replace"},
        {"path": "orders.A-7.paid", "before": True, "after": 1, "op": "replace"},
    ]
    assert snapshot.value()["orders"]["A-3"]["status"] == "placed"


@settings(max_examples=300, deadline=None)
@given(JSON | st.dictionaries(KEYS | st.integers(0, 3), LEAVES, max_size=6))
def test_copies_are_a_marshal_round_trip_sharing_nothing_that_can_change(value: Any) -> None:
    """A flat dict is copied by `dict()`; the copies are still what marshal reads back
    (the same keys, values and types) and a change to one reaches neither the value
    nor the other copy."""
    first, second = copy_twice(value)
    single = copy_json(value)
    expected = typed(marshal.loads(marshal.dumps(value)))
    assert typed(first) == typed(second) == typed(single) == expected
    if isinstance(value, dict | list):
        before = typed(value)
        first.clear()
        assert typed(second) == typed(single) == before == expected
        second.clear()
        single.clear()
        assert typed(value) == before


def test_a_dict_holding_a_container_is_copied_deep() -> None:
    """A dict that is not flat (a list among its values) is no `dict()` copy: its list
    is a copy too."""
    value = {"id": "A-1", "items": [1, 2]}
    first, second = copy_twice(value)
    first["items"].append(3)
    second["items"].append(4)
    assert copy_json(value)["items"] is not value["items"]
    assert value == {"id": "A-1", "items": [1, 2]}
