"""YAML and JSON read within limits: a hostile file costs bounded time and memory.

Task, rubric, gates, fault, mapping, price, redaction and scorecard files are written by
people proctor does not control. A few lines of YAML can expand to billions of values
(aliases of aliases), nest deeper than Python's stack, refer to themselves or hold values
no JSON-like reader expects. Every document is therefore read in two steps:

1. composed into YAML nodes (the libyaml parser when PyYAML has it, the pure-Python one
   otherwise; the composer is PyYAML's Python one, so nesting and aliases are counted as
   the events arrive, before anything is built);
2. measured once, following aliases: values after expansion, depth after expansion,
   cycles, the size of each string, the digits of each integer, NUL characters, tags
   outside JSON's types, and mapping keys of mixed types.

Only then is the document built into Python values. Each limit that is hit is a
`LimitExceeded` with the line it was hit at (docs/architecture.md, Packages: core).

A JSON file takes a shorter road, several times faster (`load_json`): the `json` module
parses it when counting characters shows it cannot hold more than MAX_VALUES values, and
the same limits are checked on what it built. Anything short of plainly within them
(a duplicate key, a deep or long value, a character or number YAML reads otherwise) is
handed back to the YAML road, which names the problem and its line as before.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

#: The largest document read, in bytes.
MAX_BYTES = 8 * 1024 * 1024
#: The deepest nesting of lists and mappings, aliases expanded.
MAX_DEPTH = 64
#: Alias uses (`*name`) in one document.
MAX_ALIASES = 1_000
#: Values (strings, numbers, lists, mappings, keys) in one document after aliases are
#: expanded: the billion-laughs bound, and the bound on composing time (about 20 µs a
#: value in PyYAML's composer: benchmarks/hostile_files.py).
MAX_VALUES = 100_000
#: Characters in one string.
MAX_STRING = 1_000_000
#: Digits in one integer (Python refuses to read more than 4,300).
MAX_INT_DIGITS = 100

_TAG = "tag:yaml.org,2002:"
#: The tags of JSON's types, and the merge key `<<`.
JSON_TAGS = frozenset(
    _TAG + name for name in ("str", "int", "float", "bool", "null", "seq", "map", "merge")
)

try:  # libyaml's parser: the same events, several times faster
    from yaml.cyaml import CParser as _Parser  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - PyYAML built without libyaml

    class _Parser(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser):  # type: ignore[no-redef]
        def __init__(self, stream: str) -> None:
            yaml.reader.Reader.__init__(self, stream)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)


class LimitExceeded(Exception):
    """A document over a limit, or holding a value JSON-like data cannot; `line` is 1-based."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def _line(node_or_mark: Any) -> int:
    mark = getattr(node_or_mark, "start_mark", node_or_mark)
    return int(mark.line) + 1 if mark is not None else 1


class BoundedLoader(Composer, _Parser, SafeConstructor, Resolver):
    """PyYAML's safe loader, dates kept as strings, with nesting and aliases counted."""

    def __init__(self, text: str) -> None:
        _Parser.__init__(self, text)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self._depth = 0
        self._aliases = 0
        self._values = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise LimitExceeded(
                    _line(event), f"more than {MAX_ALIASES:,} aliases; the limit is {MAX_ALIASES:,}"
                )
            return super().compose_node(parent, index)
        self._depth += 1
        self._values += 1
        try:
            if self._values > MAX_VALUES:
                raise LimitExceeded(_line(event), _too_many_values())
            if self._depth > MAX_DEPTH:
                raise LimitExceeded(_line(event), f"nested deeper than {MAX_DEPTH} levels")
            if isinstance(event, yaml.ScalarEvent) and event.anchor is None:
                return self._scalar(event)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def _scalar(self, event: Any) -> yaml.ScalarNode:
        """PyYAML's composing of a scalar without an anchor, less its detours (path
        resolvers, which proctor has none of, and repeated event checks): most values
        are scalars, and this saves an eighth of reading a task file."""
        self.get_event()
        tag = event.tag
        if tag is None or tag == "!":
            tag = self.resolve(yaml.ScalarNode, event.value, event.implicit)
        return yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)


# Dates and times stay strings: task state is JSON-like data.
BoundedLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != _TAG + "timestamp"]
    for first, resolvers in Resolver.yaml_implicit_resolvers.items()
}


def measure(root: yaml.Node) -> bool:
    """Check the limits over the node graph, aliases followed; whether every mapping's
    keys are distinct scalars (when not, core/documents.py names the key and its path).

    Each node is measured once (its expanded size and height are kept), so a document
    whose aliases would expand a billion times is refused after a few thousand steps.
    """
    sizes: dict[int, tuple[int, int]] = {}  # id(node) -> (values, height)
    open_nodes: set[int] = set()
    odd_keys: list[yaml.MappingNode] = []

    def visit(node: yaml.Node, depth: int) -> tuple[int, int]:
        key = id(node)
        if key in open_nodes:
            raise LimitExceeded(_line(node), "an alias refers to a node that contains it")
        known = sizes.get(key)
        if known is None:
            open_nodes.add(key)
            known = sizes[key] = _measure_node(node, depth, visit, odd_keys)
            open_nodes.discard(key)
        return known

    visit(root, 1)
    return not odd_keys


def _measure_node(
    node: yaml.Node, depth: int, visit: Any, odd_keys: list[yaml.MappingNode]
) -> tuple[int, int]:
    if node.tag not in JSON_TAGS:
        shown = node.tag.replace(_TAG, "!!")
        raise LimitExceeded(
            _line(node), f"invalid YAML: unsupported tag {shown} (JSON-like data only)"
        )
    if isinstance(node, yaml.ScalarNode):
        _check_scalar(node)
        return 1, 0
    children: list[yaml.Node]
    if isinstance(node, yaml.MappingNode):
        if not _check_keys(node):
            odd_keys.append(node)
        children = [part for pair in node.value for part in pair]
    else:
        children = list(node.value)
    values, height = 1, 0
    for child in children:  # a child reached through an alias may be measured already
        if isinstance(child, yaml.ScalarNode) and child.tag in JSON_TAGS:
            _check_scalar(child)
            size, child_height = 1, 0
        else:
            size, child_height = visit(child, depth + 1)
        values += size
        height = max(height, child_height + 1)
        if depth + height > MAX_DEPTH:
            raise LimitExceeded(_line(node), f"nested deeper than {MAX_DEPTH} levels")
        if values > MAX_VALUES:
            raise LimitExceeded(_line(node), _too_many_values())
    return values, height


def _too_many_values() -> str:
    return f"more than {MAX_VALUES:,} values (aliases expanded): split the file"


def _check_scalar(node: yaml.ScalarNode) -> None:
    text = node.value
    if len(text) > MAX_STRING:
        raise LimitExceeded(
            _line(node), f"a string of {len(text):,} characters; the limit is {MAX_STRING:,}"
        )
    if "\x00" in text:
        raise LimitExceeded(_line(node), "a NUL character in a string")
    if node.tag == _TAG + "int" and len(text) > MAX_INT_DIGITS:
        raise LimitExceeded(
            _line(node), f"an integer of {len(text):,} digits; the limit is {MAX_INT_DIGITS}"
        )


def _check_keys(node: yaml.MappingNode) -> bool:
    """Keys of one type per mapping: `1` and `"1"`, or `yes` (a YAML 1.1 boolean) beside
    strings, would be different keys that print the same. Whether the keys are distinct
    scalars (merge keys aside)."""
    first: str | None = None
    seen: set[str] = set()
    plain = True
    for key, _ in node.value:
        if key.tag == _TAG + "merge":
            continue
        if not isinstance(key, yaml.ScalarNode) or (key.value in seen and key.value != "<<"):
            plain = False
        else:
            seen.add(key.value)
        if first is None:
            first = key.tag
        elif key.tag != first:
            a, b = first.replace(_TAG, ""), key.tag.replace(_TAG, "")
            raise LimitExceeded(
                _line(key),
                f"mapping keys of mixed types ({a} and {b}): quote the keys to make them strings",
            )
    return plain


class NotPlain(Exception):
    """A JSON document `load_json` does not vouch for: the YAML road reads it instead."""


#: What `json` and the YAML road read differently, or only the YAML road names the line
#: of: characters YAML refuses, U+0085 (YAML folds it, a line break, into a space),
#: surrogate escapes and escaped NULs.
_NOT_PLAIN_TEXT = re.compile(
    "[^\x09\x0a\x0d\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
    r"|\\u[dD][89abAB]|\\u0000"
)


def load_json(text: str) -> Any:
    """JSON text as data, parsed by `json` (several times faster than the YAML road) when
    it is plainly within every limit; NotPlain when it may not be.

    Each value, key and container is preceded by `[`, `{`, `,` or `:` (or is the root),
    so counting those characters bounds the values before anything is built. Numbers
    read as JSON means them: `1e3` is 1000.0 (YAML 1.1 read it as the string "1e3").
    Raises json.JSONDecodeError for text that is not JSON.
    """
    if 1 + sum(map(text.count, ",:[{")) > MAX_VALUES or _NOT_PLAIN_TEXT.search(text):
        raise NotPlain
    data = json.loads(
        text,
        object_pairs_hook=_distinct_keys,
        parse_int=_json_int,
        parse_float=_json_float,
        parse_constant=_json_constant,
    )
    _check_json(data, 1, len(text) > MAX_STRING)
    return data


def _distinct_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data = dict(pairs)
    if len(data) < len(pairs):
        raise NotPlain  # the YAML road names the duplicate and its line
    return data


def _json_int(text: str) -> int:
    if len(text) > MAX_INT_DIGITS:
        raise NotPlain
    return int(text)


def _json_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise NotPlain  # `1e400`: YAML 1.1 keeps it a string, as before
    return value


def _json_constant(text: str) -> Any:
    raise NotPlain  # NaN and Infinity are not JSON; YAML 1.1 keeps them strings, as before


def _check_json(value: Any, depth: int, long_strings: bool) -> None:
    """NotPlain unless the value nests within MAX_DEPTH as the YAML road counts (keys and
    items one level below their container) and, when the text could hold one, no
    string is longer than MAX_STRING."""
    children: Any
    if isinstance(value, dict):
        if long_strings and any(len(key) > MAX_STRING for key in value):
            raise NotPlain
        children = value.values()
    elif isinstance(value, list):
        children = value
    else:
        if long_strings and isinstance(value, str) and len(value) > MAX_STRING:
            raise NotPlain
        return
    if children and depth >= MAX_DEPTH:
        raise NotPlain
    for child in children:
        if long_strings or isinstance(child, dict | list):
            _check_json(child, depth + 1, long_strings)


def reader_line(text: str, exc: yaml.reader.ReaderError) -> int:
    """The line of a character the YAML reader refused (it reports an offset)."""
    encoded = text.encode("utf-8")
    offset = exc.position if exc.position <= len(encoded) else len(encoded)
    if _Parser.__module__ == "yaml._yaml":  # libyaml counts bytes of the UTF-8 text
        return encoded[:offset].count(b"\n") + 1
    return text.count("\n", 0, offset) + 1


def reader_message(exc: yaml.reader.ReaderError) -> str:
    if exc.character in (0, "\x00"):
        return "a NUL character in the file"
    code = exc.character if isinstance(exc.character, int) else ord(exc.character)
    return f"invalid YAML: a character YAML does not allow (#x{code:04x})"
