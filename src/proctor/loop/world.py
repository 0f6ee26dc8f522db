"""The slice of a world a trial used: which parts of the initial state its calls touched.

A promoted task keeps only the state its failure depends on, not the whole world. To
find it, the trial's calls are run again, straight through the domain's authorization and
tool functions, on a copy of the initial state whose mappings record every key read or
written (`Tracked`). A list is read whole (a tool iterating orders reads them all); a key
looked up and missing records nothing (a missing key stays missing in the slice).
`state_slice` then cuts those paths out of the initial state.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from typing import Any

from proctor.core.jsonvalues import copy_json
from proctor.core.trace import SimClock
from proctor.env.domain import Domain, ToolContext, ToolError
from proctor.tasks.models import Task

Path = tuple[str, ...]


class Tracked(dict[str, Any]):
    """A mapping that adds the path of every key it hands out or takes to `touched`."""

    def __init__(self, data: dict[str, Any], path: Path, touched: set[Path]) -> None:
        super().__init__()
        self._path, self._touched = path, touched
        for key, value in data.items():
            dict.__setitem__(self, key, _tracked(value, (*path, str(key)), touched))

    def _touch(self, key: Any) -> None:
        if dict.__contains__(self, key):
            self._touched.add((*self._path, str(key)))

    def __getitem__(self, key: Any) -> Any:
        self._touch(key)
        return dict.__getitem__(self, key)

    def get(self, key: Any, default: Any = None) -> Any:
        self._touch(key)
        return dict.get(self, key, default)

    def __contains__(self, key: object) -> bool:
        self._touch(key)
        return dict.__contains__(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        self._touch(key)
        self._touched.add((*self._path, str(key)))
        dict.__setitem__(self, key, _tracked(value, (*self._path, str(key)), self._touched))

    def __delitem__(self, key: str) -> None:
        self._touch(key)
        dict.__delitem__(self, key)

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def pop(self, key: str, *default: Any) -> Any:
        self._touch(key)
        return dict.pop(self, key, *default)

    def _all(self) -> None:
        for key in dict.keys(self):
            self._touched.add((*self._path, str(key)))

    def __iter__(self) -> Iterator[str]:
        self._all()
        return dict.__iter__(self)

    def keys(self) -> Any:
        self._all()
        return dict.keys(self)

    def values(self) -> Any:
        self._all()
        return dict.values(self)

    def items(self) -> Any:
        self._all()
        return dict.items(self)

    def plain(self) -> dict[str, Any]:
        return {k: v.plain() if isinstance(v, Tracked) else v for k, v in dict.items(self)}


def _tracked(value: Any, path: Path, touched: set[Path]) -> Any:
    return Tracked(value, path, touched) if isinstance(value, dict) else value


def touched_paths(
    task: Task, domain: Domain, calls: Iterable[tuple[str, Any]], *, seed: int = 0
) -> set[Path]:
    """Paths of the initial state that authorizing and executing `calls` (tool, args)
    read or wrote. A call whose arguments do not validate touches nothing; one the
    authorization refuses touches what the authorization read."""
    touched: set[Path] = set()
    state = Tracked(domain.initial_state(task), (), touched)
    clock, rng = SimClock(), random.Random(seed)
    for n, (name, args) in enumerate(calls, start=1):
        tool = domain.tools.get(name)
        if tool is None:
            continue
        try:
            valid = tool.validate(args)
        except Exception:  # not a call that reached authorization
            continue
        if not domain.authorize(task.identity, tool, valid, state).allowed:
            continue
        ctx = ToolContext(task.identity, clock, rng, task.id, f"c{n}")
        snapshot = copy_json(state.plain())
        try:
            read_whole(tool.fn(state, **({**valid, "ctx": ctx} if tool.wants_ctx else valid)))
        except ToolError:
            state = Tracked(snapshot, (), touched)  # atomic, as the gateway makes it
    return touched


def state_slice(initial: dict[str, Any], paths: Iterable[Path]) -> dict[str, Any]:
    """The values of `initial` at `paths` (those that exist), nested as in `initial`. A
    mapping handed out is kept as a mapping holding only its touched keys (handing it out
    read none of them); any other value is kept whole."""
    out: dict[str, Any] = {}
    for path in sorted(set(paths), key=len):
        node: Any = initial
        for key in path:
            if not isinstance(node, dict) or key not in node:
                break
            node = node[key]
        else:
            target = out
            for key in path[:-1]:
                target = target.setdefault(key, {})
            if path:
                target.setdefault(path[-1], {} if isinstance(node, dict) else copy_json(node))
    return out


def read_whole(value: Any) -> None:
    """Touch everything in a value a tool returned: the agent reads all of it."""
    if isinstance(value, dict):
        for child in value.values():
            read_whole(child)
    elif isinstance(value, list):
        for child in value:
            read_whole(child)
