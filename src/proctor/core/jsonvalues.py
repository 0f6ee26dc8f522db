"""JSON-like data helpers shared by the gateway, graders and store."""

from __future__ import annotations

import hashlib
import json
import marshal
from collections.abc import Callable, Iterable
from itertools import compress
from operator import ne
from typing import Any

_ATOMS = (str, int, float, bool, type(None))


def copy_json(value: Any) -> Any:
    """A deep copy of JSON-like data, many times faster than `copy.deepcopy`.

    `marshal` copies plain dicts, lists and scalars in C; anything else (a tool returning
    a dataclass, say) falls back to a walk that stringifies what JSON cannot hold.
    """
    try:
        return marshal.loads(marshal.dumps(value))
    except ValueError:
        return _walk_copy(value)


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
) -> Callable[[Any], str]:
    """`json.dumps(value, default=str, ...)` with these options, as a function made once.

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
        encode = c_make_encoder(None, str, strings, None, key, item, sort_keys, False, True)
    except (ImportError, TypeError):  # no C accelerator: json's own Python encoder
        return json.JSONEncoder(
            separators=separators, sort_keys=sort_keys, ensure_ascii=ensure_ascii, default=str
        ).encode
    return lambda value: "".join(encode(value, 0))


_canonical = json_encoder(separators=(",", ":"), sort_keys=True)


def canonical(value: Any) -> str:
    """Stable text of a JSON value (sorted keys, no spaces), for hashing and equality."""
    return _canonical(value)


def digest(value: Any, length: int = 16) -> str:
    return hashlib.sha256(canonical(value).encode()).hexdigest()[:length]


def fingerprint(value: Any) -> bytes:
    """A digest of a JSON value that changes with any change to it, key order included.

    `marshal` (format 2: no back-references, which depend on reference counts) writes a
    value in C; what it cannot write falls back to the canonical text.
    """
    try:
        data = marshal.dumps(value, 2)
    except ValueError:
        data = canonical(value).encode()
    return _digest(data)


def frozen(value: Any) -> tuple[bytes, bytes] | None:
    """A JSON value kept as bytes to copy it from (`marshal.loads`), with the fingerprint
    of every copy; None where marshal cannot write it. Format 2 writes a copy's bytes as
    the original's, so the fingerprint is the copies' too."""
    try:
        data = marshal.dumps(value, 2)
    except ValueError:
        return None
    return data, _digest(data)


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


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

    A write touches a few entries of a state that may be large. The state is kept as one
    `marshal` string (format 2), not as a copy: no work for the garbage collector, and
    the state written again after the write is its fingerprint as well (`seen`). Equal
    strings mean no change (same types, same values); otherwise the entries `!=` finds
    changed (in the state and in each top-level collection) are diffed, and the state as
    it was with just those entries replaced must write to the new string, or every entry
    is walked (`==` takes `true` for `1`). Rows are `diff(before, after)`'s (but for a NaN
    left as it was, which a walk takes for a change, and this may or may not: NaN is no
    JSON value). A state marshal cannot write is copied.
    """

    __slots__ = ("_copy", "_kept", "seen")

    def __init__(self, state: dict[Any, Any]) -> None:
        self._copy: dict[Any, Any] | None = None
        self._kept = b""
        #: The fingerprint of the state `changes` last compared (None before it has).
        self.seen: bytes | None = None
        try:
            self._kept = marshal.dumps(state, 2)
        except ValueError:
            self._copy = copy_json(state)

    def value(self) -> dict[Any, Any]:
        """The state as it was (a fresh copy)."""
        if self._copy is not None:
            return copy_json(self._copy)
        loaded: dict[Any, Any] = marshal.loads(self._kept)
        return loaded

    def changes(self, after: dict[Any, Any]) -> list[dict[str, Any]]:
        """`diff(before, after)`: the changed leaves since the snapshot."""
        try:
            now: bytes | None = marshal.dumps(after, 2)
        except ValueError:  # the tool stored something marshal cannot write
            now = None
        self.seen = fingerprint(after) if now is None else _digest(now)
        if self._copy is not None:
            return diff(self._copy, after)
        if now == self._kept:
            return []
        if now is not None:
            rows = _located(self.value(), after, now)
            if rows is not None:
                return rows
        return diff(self.value(), after)


def _located(
    before: dict[Any, Any], after: dict[Any, Any], now: bytes
) -> list[dict[str, Any]] | None:
    """`diff(before, after)` from the entries `!=` finds changed, in the state and in its
    top-level collections; None when `before` (a copy of its own, patched here with
    those entries) does not then write to `now`: a change `!=` cannot see is left."""
    out: list[dict[str, Any]] = []
    _patch(before, after, "", out, True)
    if marshal.dumps(before, 2) != now:
        return None
    return sorted(out, key=lambda row: row["path"])


def _patch(
    before: dict[Any, Any], after: dict[Any, Any], path: str, out: list[dict[str, Any]], top: bool
) -> None:
    """Rows for the entries of `before` that `after` added, removed or made `!=` (at the
    `top`, a dict on both sides is patched entry by entry), each made `after`'s in `before`."""
    if list(before) == list(after):  # the usual write: same keys, same order
        moved: Iterable[Any] = list(compress(before, map(ne, before.values(), after.values())))
    else:
        moved = [key for key, value in after.items() if before.get(key, MISSING) != value]
        for key in [key for key in before if key not in after]:
            sub = f"{path}.{key}" if path else str(key)
            out.append({"path": sub, "before": before.pop(key), "after": None, "op": "remove"})
    for key in moved:
        sub = f"{path}.{key}" if path else str(key)
        if key not in before:
            out.append({"path": sub, "before": None, "after": after[key], "op": "add"})
        elif top and type(before[key]) is dict and type(after[key]) is dict:
            _patch(before[key], after[key], sub, out, False)
            continue
        else:
            out.extend(diff(before[key], after[key], sub))
        before[key] = after[key]
