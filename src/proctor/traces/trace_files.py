"""Trace files: the sessions recorded in one file, whatever its format, read as a stream.

OpenAI chat logs, OpenTelemetry GenAI and OpenInference spans (OTLP JSON or one span per
line), proctor's own span export, Inspect AI eval logs (traces/inspect_log.py): the format
is detected, or named. Importing needs no extra package (but zstd-compressed Inspect logs
before Python 3.14, `proctor[inspect]`); exporting spans (otel_export) needs
`proctor[otel]`.

A JSON-lines file is streamed: sessions are built one at a time, and span files are read
twice (first which lines hold which trace, then one session's lines at a time), so memory
grows with the largest session and an index of the file, not with the file
(benchmarks/import_scale.py). A file that is one JSON document is read whole.

Sessions are never merged (docs/architecture.md, Where to add: an importer): they are
told apart by trace id, then conversation id; spans without a trace id by the root their
parent links lead to, or by the OTLP request (line) holding them; a JSON-lines file of
message lists by its lines. Where nothing tells sessions apart (a span with neither
trace id nor span id, a parent that is not in the file, a second conversation in one list
of messages), the file is refused with the reason. Every session passes
`quality.checked_session`.
"""

from __future__ import annotations

import json
import zipfile
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from proctor.agents.pricing import PriceTable
from proctor.traces.imported import (
    Session,
    TraceInputError,
    parse_bounded_json,
    read_bounded,
    read_line,
)
from proctor.traces.inspect_log import is_inspect_log, sessions_from_inspect
from proctor.traces.openai_format import (
    is_message_list,
    is_session_record,
    session_from_messages,
    session_record,
)
from proctor.traces.otel_import import session_id_of, session_of_group
from proctor.traces.spans import Span, is_flat_span, is_otlp, span_from_flat, spans_from_otlp
from proctor.traces.validation import check_span_tree, checked_session

FORMATS = ("auto", "openai", "otel", "openinference", "inspect")

Record = tuple[int, Any]  # (line number, or item number in a one-document file; the value)


class _Source:
    """The file's records, streamed from its lines, or items of its one document."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.stream: IO[bytes] = path.open("rb")
        except OSError as exc:
            raise TraceInputError(f"{path}: cannot read: {exc}") from None
        self.document: list[Any] | None = None
        first = self._first_line()
        if first is not None and not self._parses(first):
            self.stream.seek(0)
            whole = self._text(read_bounded(self.stream, str(path)), 1)
            value = parse_bounded_json(path, 1, whole)
            self.document = value if isinstance(value, list) else [value]

    def _lines(self) -> Iterator[bytes]:
        """The file's lines from where the stream stands, each within MAX_RECORD_BYTES."""
        number = 0
        while raw := read_line(self.stream, f"{self.path}:{number + 1}"):
            number += 1
            yield raw

    def _first_line(self) -> str | None:
        for number, raw in enumerate(self._lines(), start=1):
            if raw.strip():
                self.stream.seek(0)
                return self._text(raw, number)
        return None

    def _parses(self, line: str) -> bool:
        try:
            json.loads(line)
        except (ValueError, RecursionError):
            return False
        return True

    def _text(self, raw: bytes, line: int) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TraceInputError(f"{self.path}:{line}: cannot read: not UTF-8 text") from exc

    def records(self) -> Iterator[tuple[int, int, Any]]:
        """(where, locator, value): the line (or item) and what `fetch` takes back."""
        if self.document is not None:
            for i, value in enumerate(self.document):
                yield i + 1, i, value
            return
        self.stream.seek(0)
        offset = 0
        for number, raw in enumerate(self._lines(), start=1):
            if raw.strip():
                value = parse_bounded_json(self.path, number, self._text(raw, number))
                if isinstance(value, list) and not is_message_list(value):
                    for item in value:  # a line holding a list of records
                        yield number, offset, item
                else:
                    yield number, offset, value
            offset += len(raw)

    def fetch(self, locator: int, where: int) -> Any:
        if self.document is not None:
            return self.document[locator]
        self.stream.seek(locator)
        raw = read_line(self.stream, f"{self.path}:{where}")
        return parse_bounded_json(self.path, where, self._text(raw, where))

    def close(self) -> None:
        self.stream.close()


def load_sessions(
    path: str | Path, fmt: str = "auto", prices: PriceTable | None = None
) -> list[Session]:
    """Every session in a trace file, in file order (`iter_sessions`, kept in a list)."""
    return list(iter_sessions(path, fmt, prices))


def iter_sessions(
    path: str | Path, fmt: str = "auto", prices: PriceTable | None = None
) -> Iterator[Session]:
    """The sessions of a trace file, one at a time, each checked (traces/validation.py)."""
    path = Path(path)
    if fmt not in FORMATS:
        raise TraceInputError(f"unknown trace format {fmt!r} (one of {', '.join(FORMATS)})")
    prices = prices or PriceTable.from_env()
    if fmt == "inspect" or (fmt == "auto" and path.is_file() and is_inspect_log(path)):
        yield from _inspect_sessions(path, prices)
        return
    source = _Source(path)
    try:
        records = source.records()
        first = next(records, None)
        if first is None:
            raise TraceInputError(f"{path}: no sessions in the file")
        family = _family(first[2])
        wanted = {"openai": ("messages", "sessions", "conversations"), "otel": ("spans",)}
        allowed = wanted.get("otel" if fmt == "openinference" else fmt)
        if family is None or (allowed is not None and family not in allowed):
            raise TraceInputError(
                f"{path}: not a trace file proctor reads: expected {_EXPECTED[fmt]}"
            )
        rest = _same_family(path, family, records)
        if family == "spans":
            yield from _span_sessions(source, first, rest, prices, fmt)
        else:
            yield from _openai_sessions(path, family, first, rest, prices)
    finally:
        source.close()


def _inspect_sessions(path: Path, prices: PriceTable) -> Iterator[Session]:
    sessions = sessions_from_inspect(path, prices)
    while True:
        try:
            session = next(sessions, None)
        except (OSError, zipfile.BadZipFile, json.JSONDecodeError, ValueError) as exc:
            text = str(exc)
            raise TraceInputError(
                text if text.startswith(str(path)) else f"{path}: {text}"
            ) from None
        if session is None:
            return
        yield checked_session(session, f"{path}: sample {session.id}")


_EXPECTED = {
    "auto": "OpenAI chat-format sessions, OTLP JSON, or one span per line",
    "openai": "OpenAI chat-format messages or sessions with `messages`",
    "otel": "OTLP JSON or one span per line",
    "openinference": "OTLP JSON or one span per line",
}


def _family(value: Any) -> str | None:
    if is_otlp(value) or is_flat_span(value):
        return "spans"
    if isinstance(value, dict) and "role" in value:
        return "messages"
    if is_session_record(value):
        return "sessions"
    if is_message_list(value) and value:
        return "conversations"
    return None


def _same_family(
    path: Path, family: str, records: Iterator[tuple[int, int, Any]]
) -> Iterator[tuple[int, int, Any]]:
    for where, locator, value in records:
        if _family(value) != family:
            raise TraceInputError(f"{path}:{where}: not like the first record (one of {family})")
        yield where, locator, value


def _built(path: Path, where: int, build: Callable[..., Session], *args: Any) -> Session:
    try:
        session = build(*args)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        place = f"{path}:{where}" if where else str(path)
        if isinstance(exc, TraceInputError):
            if str(exc).startswith(str(path)):
                raise
            raise TraceInputError(f"{place}: {exc}") from None
        raise TraceInputError(f"{place}: not a valid trace record: {exc}") from None
    return checked_session(session, f"{path}:{where}")


# -- OpenAI chat logs ------------------------------------------------------------------


def _openai_sessions(
    path: Path,
    family: str,
    first: tuple[int, int, Any],
    rest: Iterator[tuple[int, int, Any]],
    prices: PriceTable,
) -> Iterator[Session]:
    if family == "messages":  # one conversation, a message per line or item
        numbered = [(first[0], first[2]), *((where, value) for where, _, value in rest)]
        _one_conversation(path, numbered)
        messages = [value for _, value in numbered]
        yield _built(path, first[0], session_from_messages, messages, "session-1", prices)
        return
    seen: dict[str, int] = {}
    for index, (where, _, value) in enumerate(_chain(first, rest)):
        if family == "conversations":
            _one_conversation(path, [(where, m) for m in value])
            name = f"session-{index + 1}"
            session = _built(
                path, where, lambda v=value, n=name: session_from_messages(v, n, prices)
            )
        else:
            session = _built(path, where, lambda v=value, i=index: session_record(v, i, prices))
        if session.id in seen:
            raise TraceInputError(
                f"{path}:{where}: session id {session.id!r} again (first at {seen[session.id]}): "
                "sessions are never merged; give each its own id"
            )
        seen[session.id] = where
        yield session


def _chain(
    first: tuple[int, int, Any], rest: Iterator[tuple[int, int, Any]]
) -> Iterator[tuple[int, int, Any]]:
    yield first
    yield from rest


def _one_conversation(path: Path, messages: list[tuple[int, Any]]) -> None:
    """A list of messages is one session: a system message after the conversation began
    starts another, which nothing in the list tells apart."""
    began = False
    for where, message in messages:
        role = message.get("role") if isinstance(message, dict) else None
        if role in ("system", "developer") and began:
            raise TraceInputError(
                f"{path}:{where}: a second conversation starts in one list of messages "
                "(a system message after others); sessions are never merged: write one "
                "session per line, or sessions with `id` and `messages`"
            )
        began = began or role not in ("system", "developer")


# -- spans -------------------------------------------------------------------------------


def _spans_of(value: Any) -> list[Span]:
    """The spans of a record, or of every record of a line holding a list of them."""
    if isinstance(value, list):
        return [span for item in value for span in _spans_of(item)]
    return spans_from_otlp(value) if is_otlp(value) else [span_from_flat(value)]


def _span_sessions(
    source: _Source,
    first: tuple[int, int, Any],
    rest: Iterator[tuple[int, int, Any]],
    prices: PriceTable,
    fmt: str,
) -> Iterator[Session]:
    """Two passes: which records hold which trace (and what session each trace names),
    then each session's records, one session at a time."""
    path = source.path
    lines: dict[str, array[int]] = {}  # trace key -> locators of its records
    where_of: dict[int, int] = {}  # locator -> line, for the records of trace-less spans
    session_of: dict[str, str] = {}  # trace key -> the session it names
    parents: dict[str, str | None] = {}  # span id -> parent id, spans without a trace id
    locators: dict[str, int] = {}  # span id of a trace-less span -> its record
    for where, locator, value in _chain(first, rest):
        for span in _span_keys(value):
            key = span.trace_id
            if not key:
                if not span.span_id:
                    if not is_otlp(value):
                        raise TraceInputError(
                            f"{path}:{where}: a span with neither trace id nor span id: "
                            "its session cannot be told"
                        )
                    key = f"request@{where}"
                else:
                    if locators.get(span.span_id, locator) != locator:
                        earlier = where_of[locators[span.span_id]]
                        raise TraceInputError(
                            f"{path}:{where}: span {span.span_id} again, without a trace id "
                            f"(first at line {earlier}): a copied request cannot be told from "
                            "the one it copies, and sessions are never merged"
                        )
                    parents[span.span_id] = span.parent_id
                    locators[span.span_id] = locator
                    where_of[locator] = where
                    continue
            _note(lines, session_of, key, locator, span)
    roots = _roots(path, parents, where_of, locators)
    for span_id, root in roots.items():
        locator = locators[span_id]
        lines.setdefault(f"tree@{root}", array("q"))
        if not lines[f"tree@{root}"] or lines[f"tree@{root}"][-1] != locator:
            lines[f"tree@{root}"].append(locator)
    groups: dict[str, list[str]] = {}
    for trace in sorted(lines, key=lambda k: lines[k][0]):
        groups.setdefault(session_of.get(trace, trace), []).append(trace)
    flavour = fmt if fmt in ("otel", "openinference") else "auto"
    for key, traces in groups.items():
        wanted = set(traces)
        spans: list[Span] = []
        for locator in sorted({loc for t in traces for loc in lines[t]}):
            where = where_of.get(locator, 0)
            for span in _spans_of(source.fetch(locator, where)):
                if _trace_key(span, roots, where) in wanted:
                    spans.append(span)
        name = f"{path}: session {key!r}"
        _unique_spans(spans, name)
        check_span_tree(spans, name)
        yield _built(path, 0, session_of_group, key, spans, prices, flavour)


def _unique_spans(spans: list[Span], name: str) -> None:
    """A span id twice in one trace is a copied export (or a line sent twice): graded, its
    calls would count twice. Refused, never merged."""
    seen: set[tuple[str, str]] = set()
    for span in spans:
        if span.span_id:
            key = (span.trace_id, span.span_id)
            if key in seen:
                raise TraceInputError(
                    f"{name}: span {span.span_id} twice in one trace (a copied export or a "
                    "request sent twice?): sessions are never merged"
                )
            seen.add(key)


def _span_keys(value: Any) -> list[Span]:
    """Spans with only what grouping reads (ids, parent, attributes): a flat span's
    times and events are not converted in the first pass."""
    if isinstance(value, list):
        return [span for item in value for span in _span_keys(item)]
    if is_otlp(value):
        return spans_from_otlp(value)
    return [span_from_flat({k: value[k] for k in _GROUPING if k in value})]


_GROUPING = (
    "context",
    "trace_id",
    "span_id",
    "parent_id",
    "parent_span_id",
    "attributes",
    "resource",
    "name",
)


def _trace_key(span: Span, roots: dict[str, str], where: int) -> str:
    if span.trace_id:
        return span.trace_id
    if span.span_id:
        return f"tree@{roots[span.span_id]}"
    return f"request@{where}"


def _note(
    lines: dict[str, array[int]], session_of: dict[str, str], key: str, locator: int, span: Span
) -> None:
    found = lines.setdefault(key, array("q"))
    if not found or found[-1] != locator:
        found.append(locator)
    if key not in session_of and (named := session_id_of(span)) is not None:
        session_of[key] = named


def _roots(
    path: Path,
    parents: dict[str, str | None],
    where_of: dict[int, int],
    locators: dict[str, int],
) -> dict[str, str]:
    """The root each trace-less span's parent links lead to."""
    roots: dict[str, str] = {}
    for start in parents:
        chain: list[str] = []
        node = start
        while node not in roots:
            parent = parents[node]
            if not parent or parent == node:
                roots[node] = node
                break
            if parent not in parents:
                where = where_of[locators[node]]
                raise TraceInputError(
                    f"{path}:{where}: span {node}'s parent {parent} is not in the file and "
                    "the span has no trace id: its session cannot be told"
                )
            if parent in chain or parent == start:
                loop = " -> ".join([*chain, node, parent])
                raise TraceInputError(f"{path}: spans form a parent cycle: {loop}")
            chain.append(node)
            node = parent
        for member in chain:
            roots[member] = roots[node]
    return roots


__all__ = ["FORMATS", "TraceInputError", "iter_sessions", "load_sessions"]
