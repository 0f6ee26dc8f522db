"""JSON-like data helpers shared by the gateway, graders and store."""

from __future__ import annotations

import hashlib
import json
import marshal
from collections.abc import Callable, Mapping
from itertools import compress, repeat
from operator import ne
from typing import Any

_ATOMS = (str, int, float, bool, type(None))


def copy_json(value: Any) -> Any:
    """A deep copy of JSON-like data, many times faster than `copy.deepcopy`.

    `marshal` copies plain dicts, lists and scalars in C; anything else (a tool returning
    a dataclass, say) falls back to a walk that stringifies what JSON cannot hold.
    """
    if _flat(value):
        return dict(value)
    try:
        return marshal.loads(marshal.dumps(value))
    except ValueError:
        return _walk_copy(value)


def copy_twice(value: Any) -> tuple[Any, Any]:
    """Two deep copies of JSON-like data that share nothing (`copy_json`'s), for two
    owners (a result's for the trace and for the agent): written once, read twice."""
    if _flat(value):
        return dict(value), dict(value)
    try:
        data = marshal.dumps(value)
    except ValueError:
        first = _walk_copy(value)
        return first, copy_json(first)
    return marshal.loads(data), marshal.loads(data)


#: The types a flat dict's keys and values have: immutable, so a copy of the dict shares
#: nothing that can change, and marshal would read back the same values of the same types.
_FLAT = frozenset(_ATOMS)


def _flat(value: Any) -> bool:
    """A plain dict of scalars (most tool results and arguments): its copy is `dict(value)`,
    a third of a marshal round trip's cost, with the same keys, values and types."""
    return (
        type(value) is dict
        and _FLAT.issuperset(map(type, value.values()))
        and _FLAT.issuperset(map(type, value))
    )


def _walk_copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _walk_copy(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_walk_copy(v) for v in value]
    if isinstance(value, _ATOMS):
        return value
    return json.loads(json.dumps(value, default=str))


def json_encoder(
    *,
    separators: tuple[str, str] = (", ", ": "),
    sort_keys: bool = False,
    ensure_ascii: bool = True,
    default: Callable[[Any], Any] = str,
) -> Callable[[Any], str]:
    """`json.dumps(value, default=str, ...)` with these options (and `default`), as a
    function made once.

    `json.dumps` builds a new C encoder on every call, most of the cost of a small value;
    this builds it once (the same encoder, so the same text).
    """
    try:
        # The C accelerators are private to `json`, so typeshed does not declare them.
        from json.encoder import (  # type: ignore[attr-defined]
            c_encode_basestring,
            c_encode_basestring_ascii,
            c_make_encoder,
        )

        strings = c_encode_basestring_ascii if ensure_ascii else c_encode_basestring
        item, key = separators
        encode = c_make_encoder(None, default, strings, None, key, item, sort_keys, False, True)
    except (ImportError, TypeError):  # no C accelerator: json's own Python encoder
        return json.JSONEncoder(
            separators=separators, sort_keys=sort_keys, ensure_ascii=ensure_ascii, default=default
        ).encode
    return lambda value: "".join(encode(value, 0))


_canonical = json_encoder(separators=(",", ":"), sort_keys=True)


def canonical(value: Any) -> str:
    """Stable text of a JSON value (sorted keys, no spaces), for hashing and equality."""
    return _canonical(value)


def digest(value: Any, length: int = 16) -> str:
    return hashlib.sha256(canonical(value).encode()).hexdigest()[:length]


def fingerprint(value: Any) -> bytes:
    """What identifies a JSON value: bytes that change with any change to it, key order
    included, compared whole (no hash: comparing the bytes costs less than digesting them).

    `marshal` (format 2: no back-references, which depend on reference counts) writes a
    value in C; what it cannot write is identified by a digest of its canonical text,
    after a NUL byte that starts no marshal text.
    """
    try:
        return marshal.dumps(value, 2)
    except ValueError:
        return b"\0" + hashlib.blake2b(canonical(value).encode(), digest_size=16).digest()


def packed(value: Any) -> bytes | None:
    """A JSON value kept as bytes that each copy is loaded from (`marshal.loads`: one call
    a copy); None where marshal cannot write it (a subclass of str, such as an enum
    member). Format 4, whose back-references make a repeated key or text once a copy,
    not once per place."""
    try:
        return marshal.dumps(value, 4)
    except ValueError:
        return None


def frozen(value: Any) -> tuple[bytes, bytes] | None:
    """`packed(value)` and the fingerprint of every copy; None where marshal cannot write
    it. A copy holds the same types and values, so its format-2 bytes (its fingerprint)
    are the original's."""
    data = packed(value)
    return None if data is None else (data, marshal.dumps(value, 2))


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: `true` is not `1`, `1` equals `1.0`, dict key order is irrelevant."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


MISSING: Any = object()


def get_path(data: Any, path: str | list[str]) -> Any:
    """Value at a dotted path (`orders.A-100.status`; list items by index), or MISSING."""
    parts = path.split(".") if isinstance(path, str) else path
    node = data
    for part in parts:
        if isinstance(node, dict):
            if part not in node:
                return MISSING
            node = node[part]
        elif isinstance(node, list) and part.lstrip("-").isdigit():
            index = int(part)
            if not -len(node) <= index < len(node):
                return MISSING
            node = node[index]
        else:
            return MISSING
    return node


def diff(before: Any, after: Any, path: str = "") -> list[dict[str, Any]]:
    """The changed leaves between two JSON values as `{path, before, after}` rows.

    A write touches a few leaves of a state that may be large: subtrees that `marshal`
    writes to the same bytes (same types, same values) are skipped without a walk.
    """
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[dict[str, Any]] = []
        for key in before.keys() | after.keys():
            if key in before and key in after and _same(before[key], after[key]):
                continue
            sub = f"{path}.{key}" if path else str(key)
            if key not in after:
                out.append({"path": sub, "before": before[key], "after": None, "op": "remove"})
            elif key not in before:
                out.append({"path": sub, "before": None, "after": after[key], "op": "add"})
            else:
                out.extend(diff(before[key], after[key], sub))
        return sorted(out, key=lambda row: row["path"])
    if json_equal(before, after):
        return []
    return [{"path": path, "before": before, "after": after, "op": "replace"}]


def _same(a: Any, b: Any) -> bool:
    """Surely equal containers; False means "walk it", not "different".

    `==` is quick but takes `true` for `1`; equal marshal bytes (format 2: no back-references,
    which depend on reference counts) also mean equal types.
    """
    if type(a) not in _CONTAINERS or type(b) is not type(a) or a != b:
        return False
    try:
        return marshal.dumps(a, 2) == marshal.dumps(b, 2)
    except ValueError:
        return False


_CONTAINERS = frozenset({dict, list})


class Snapshot:
    """A state (a dict) as it was before a write, for the write's `changes` and a rollback.

    A write touches a few entries of a state that may be large. Each entry of each
    top-level dict is kept as `marshal` bytes (format 2), not as a copy: the bytes are no
    work for the garbage collector, and an entry that writes to the same bytes again is
    unchanged (same types, same values) without a walk; only a changed entry is read back
    and diffed. Rows are `diff(before, after)`'s (but for a NaN left as it was, which a walk
    takes for a change: NaN is no JSON value). A state marshal cannot write is copied.
    """

    __slots__ = ("_copy", "_entries")

    def __init__(self, state: dict[Any, Any]) -> None:
        self._copy: dict[Any, Any] | None = None
        try:
            self._entries: dict[Any, bytes | dict[Any, bytes]] = {
                key: dict(zip(value, _written(value), strict=True))
                if type(value) is dict
                else marshal.dumps(value, 2)
                for key, value in state.items()
            }
        except ValueError:
            self._copy = copy_json(state)

    def value(self) -> dict[Any, Any]:
        """The state as it was (a fresh copy)."""
        if self._copy is not None:
            return copy_json(self._copy)
        return {key: _loaded(kept) for key, kept in self._entries.items()}

    def changes(self, after: dict[Any, Any]) -> list[dict[str, Any]]:
        """`diff(before, after)`: the changed leaves since the snapshot."""
        if self._copy is not None:
            return diff(self._copy, after)
        return sorted(_changes(self._entries, after, ""), key=lambda row: row["path"])


def _loaded(kept: bytes | dict[Any, bytes]) -> Any:
    if isinstance(kept, dict):
        return {k: marshal.loads(v) for k, v in kept.items()}
    return marshal.loads(kept)


def _changes(
    kept: Mapping[Any, bytes | dict[Any, bytes]], now: dict[Any, Any], path: str
) -> list[dict[str, Any]]:
    """The rows of a kept dict against `now`: entries whose bytes are unchanged are
    skipped, a kept dict of entries (a top-level collection) is walked entry by entry."""
    out: list[dict[str, Any]] = []
    for key in kept.keys() | now.keys():
        sub = f"{path}.{key}" if path else str(key)
        if key not in now:
            out.append({"path": sub, "before": _loaded(kept[key]), "after": None, "op": "remove"})
        elif key not in kept:
            out.append({"path": sub, "before": None, "after": now[key], "op": "add"})
        else:
            entry, value = kept[key], now[key]
            if isinstance(entry, dict):
                if type(value) is dict:
                    rows = _moved(entry, value, sub)
                    out.extend(_changes(entry, value, sub) if rows is None else rows)
                    continue
            elif _unchanged(entry, value):
                continue
            out.extend(diff(_loaded(entry), value, sub))
    return out


def _written(collection: dict[Any, Any]) -> list[bytes]:
    """Each value of `collection` as `marshal` bytes (format 2), written in one C loop."""
    return list(map(marshal.dumps, collection.values(), repeat(2)))


def _moved(kept: dict[Any, bytes], now: dict[Any, Any], path: str) -> list[dict[str, Any]] | None:
    """`_changes` of a kept collection whose keys `now` still has, in the same order (a
    write that changed entries in place), without a Python step per unchanged entry;
    None for any other (keys added, removed or moved; a value marshal cannot write)."""
    if list(kept) != list(now):
        return None
    try:
        written = _written(now)
    except ValueError:
        return None
    changed = compress(
        zip(kept, kept.values(), now.values(), strict=True), map(ne, kept.values(), written)
    )
    out: list[dict[str, Any]] = []
    for key, was, value in changed:
        out.extend(diff(marshal.loads(was), value, f"{path}.{key}" if path else str(key)))
    return out


def _unchanged(kept: bytes, value: Any) -> bool:
    try:
        return marshal.dumps(value, 2) == kept
    except ValueError:  # the tool stored something marshal cannot write
        return False
