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
"""

from __future__ import annotations

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
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise LimitExceeded(
                    _line(self.peek_event()),
                    f"more than {MAX_ALIASES:,} aliases; the limit is {MAX_ALIASES:,}",
                )
            return super().compose_node(parent, index)
        self._depth += 1
        self._values += 1
        try:
            if self._values > MAX_VALUES:
                raise LimitExceeded(_line(self.peek_event()), _too_many_values())
            if self._depth > MAX_DEPTH:
                raise LimitExceeded(
                    _line(self.peek_event()),
                    f"nested deeper than {MAX_DEPTH} levels",
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


# Dates and times stay strings: task state is JSON-like data.
BoundedLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != _TAG + "timestamp"]
    for first, resolvers in Resolver.yaml_implicit_resolvers.items()
}


def measure(root: yaml.Node) -> int:
    """Check the limits over the node graph, aliases followed; the number of values.

    Each node is measured once (its expanded size and height are kept), so a document
    whose aliases would expand a billion times is refused after a few thousand steps.
    """
    sizes: dict[int, tuple[int, int]] = {}  # id(node) -> (values, height)
    open_nodes: set[int] = set()

    def visit(node: yaml.Node, depth: int) -> tuple[int, int]:
        key = id(node)
        if key in open_nodes:
            raise LimitExceeded(_line(node), "an alias refers to a node that contains it")
        known = sizes.get(key)
        if known is None:
            open_nodes.add(key)
            known = sizes[key] = _measure_node(node, depth, visit)
            open_nodes.discard(key)
        return known

    values, _ = visit(root, 1)
    return values


def _measure_node(node: yaml.Node, depth: int, visit: Any) -> tuple[int, int]:
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
        _check_keys(node)
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


def _check_keys(node: yaml.MappingNode) -> None:
    """Keys of one type per mapping: `1` and `"1"`, or `yes` (a YAML 1.1 boolean) beside
    strings, would be different keys that print the same."""
    first: str | None = None
    for key, _ in node.value:
        if key.tag == _TAG + "merge":
            continue
        if first is None:
            first = key.tag
        elif key.tag != first:
            a, b = first.replace(_TAG, ""), key.tag.replace(_TAG, "")
            raise LimitExceeded(
                _line(key),
                f"mapping keys of mixed types ({a} and {b}): quote the keys to make them strings",
            )


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
