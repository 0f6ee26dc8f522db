"""JSON-like data helpers shared by the gateway, graders and store."""

from __future__ import annotations

import hashlib
import json
import marshal
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


def canonical(value: Any) -> str:
    """Stable text of a JSON value (sorted keys, no spaces), for hashing and equality."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def digest(value: Any, length: int = 16) -> str:
    return hashlib.sha256(canonical(value).encode()).hexdigest()[:length]


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
    """The changed leaves between two JSON values as `{path, before, after}` rows."""
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[dict[str, Any]] = []
        for key in before.keys() | after.keys():
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
