"""Trace files: the sessions recorded in one file, whatever its format.

OpenAI chat logs, OpenTelemetry GenAI and OpenInference spans (OTLP JSON or one span per
line), proctor's own span export, Inspect AI eval logs: the format is detected, or named.
Importing needs no extra package (but zstd-compressed Inspect logs before Python 3.14,
`proctor[inspect]`); exporting spans (otel_export) needs `proctor[otel]`.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

from proctor.agents.pricing import PriceTable
from proctor.interop.inspect_log import is_inspect_log, sessions_from_inspect
from proctor.interop.openai_format import is_message_list, is_session_record, sessions_from_openai
from proctor.interop.otel_import import sessions_from_spans
from proctor.interop.session import Session
from proctor.interop.spans import is_flat_span, is_otlp, span_from_flat, spans_from_otlp

FORMATS = ("auto", "openai", "otel", "openinference", "inspect")


class TraceInputError(ValueError):
    """A trace file that cannot be read; `str()` is one line for the user."""


def _records(path: Path) -> list[Any]:
    """The file's JSON values: the whole file when it is one document (a list is spread),
    else one per line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceInputError(f"{path}: cannot read: {exc}") from None
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if whole is not None:
        return whole if isinstance(whole, list) else [whole]
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise TraceInputError(f"{path}:{number}: not JSON: {exc.msg}") from None
    return records


def load_sessions(
    path: str | Path, fmt: str = "auto", prices: PriceTable | None = None
) -> list[Session]:
    """Every session in a trace file, in file order."""
    path = Path(path)
    if fmt not in FORMATS:
        raise TraceInputError(f"unknown trace format {fmt!r} (one of {', '.join(FORMATS)})")
    prices = prices or PriceTable.from_env()
    if fmt == "inspect" or (fmt == "auto" and path.is_file() and is_inspect_log(path)):
        try:
            return sessions_from_inspect(path, prices)
        except (OSError, zipfile.BadZipFile, json.JSONDecodeError, ValueError) as exc:
            raise TraceInputError(str(exc) if str(path) in str(exc) else f"{path}: {exc}") from None
    records = _records(path)
    if not records:
        raise TraceInputError(f"{path}: no sessions in the file")
    spans_like = all(is_otlp(r) or is_flat_span(r) for r in records)
    openai_like = is_message_list(records) or all(is_session_record(r) for r in records)
    flavour = fmt  # for spans: `auto` decides GenAI or OpenInference per session
    if fmt == "auto":
        fmt = "otel" if spans_like else "openai" if openai_like else "unknown"
    if (
        fmt == "unknown"
        or (fmt == "openai" and not openai_like)
        or (fmt in ("otel", "openinference") and not spans_like)
    ):
        expected = {
            "openai": "OpenAI chat-format messages or sessions with `messages`",
            "otel": "OTLP JSON or one span per line",
            "openinference": "OTLP JSON or one span per line",
        }
        raise TraceInputError(
            f"{path}: not a trace file proctor reads: expected "
            + expected.get(fmt, "OpenAI chat-format sessions, OTLP JSON, or one span per line")
        )
    try:
        if fmt == "openai":
            return sessions_from_openai(records, prices)
        spans = [
            span
            for r in records
            for span in (spans_from_otlp(r) if is_otlp(r) else [span_from_flat(r)])
        ]
        return sessions_from_spans(spans, prices, flavour)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise TraceInputError(f"{path}: not a valid {fmt} trace file: {exc}") from None


__all__ = ["FORMATS", "TraceInputError", "load_sessions"]
