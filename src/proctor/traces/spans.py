"""OpenTelemetry spans as plain data, read from OTLP JSON or from one-span-per-line JSON.

Two encodings are common in files: OTLP JSON (`{"resourceSpans": [...]}`, what the
Collector's file exporter and proctor's `export-otel` write, one request per line) and
one JSON object per span (the Python SDK's `ReadableSpan.to_json()`, with `context`,
`parent_id`, ISO timestamps, or flat `trace_id`/`span_id` keys). Both become `Span`s.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

_STATUS = {"0": "UNSET", "1": "OK", "2": "ERROR"}


@dataclass
class SpanEvent:
    name: str
    time_ns: int
    attributes: dict[str, Any]


@dataclass
class Span:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: list[SpanEvent] = field(default_factory=list)
    status: str = "UNSET"  # UNSET | OK | ERROR
    status_message: str = ""
    resource: dict[str, Any] = field(default_factory=dict)

    def attr(self, *keys: str) -> Any:
        """The first of `keys` present on the span, then on its resource."""
        for source in (self.attributes, self.resource):
            for key in keys:
                if key in source:
                    return source[key]
        return None

    @property
    def duration_s(self) -> float:
        return max(self.end_ns - self.start_ns, 0) / 1e9


def is_otlp(value: Any) -> bool:
    return isinstance(value, dict) and "resourceSpans" in value


def is_flat_span(value: Any) -> bool:
    return (
        isinstance(value, dict) and "name" in value and ("context" in value or "span_id" in value)
    )


def _hex_id(value: Any) -> str:
    """OTLP JSON ids are hex; a base64 id (protobuf's JSON mapping) is converted."""
    text = str(value or "")
    text = text[2:] if text.startswith("0x") else text
    try:
        int(text, 16)
        return text.lower()
    except ValueError:
        try:
            return base64.b64decode(text, validate=True).hex()
        except (binascii.Error, ValueError):
            return text


def _any_value(value: Mapping[str, Any]) -> Any:
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "arrayValue" in value:
        return [_any_value(v) for v in value["arrayValue"].get("values", [])]
    if "kvlistValue" in value:
        return _key_values(value["kvlistValue"].get("values", []))
    return None


def _key_values(items: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    return {kv["key"]: _any_value(kv.get("value") or {}) for kv in items}


def _status(status: Mapping[str, Any] | None) -> tuple[str, str]:
    status = status or {}
    code = status.get("code", status.get("status_code", "UNSET"))
    name = _STATUS.get(str(code), str(code).upper().replace("STATUS_CODE_", ""))
    return name, str(status.get("message", status.get("description")) or "")


def spans_from_otlp(request: Mapping[str, Any]) -> list[Span]:
    spans = []
    for resource_spans in request.get("resourceSpans", []):
        resource = _key_values((resource_spans.get("resource") or {}).get("attributes", []))
        for scope_spans in resource_spans.get("scopeSpans", []):
            for s in scope_spans.get("spans", []):
                status, message = _status(s.get("status"))
                spans.append(
                    Span(
                        trace_id=_hex_id(s.get("traceId")),
                        span_id=_hex_id(s.get("spanId")),
                        parent_id=_hex_id(s["parentSpanId"]) if s.get("parentSpanId") else None,
                        name=str(s.get("name", "")),
                        start_ns=int(s.get("startTimeUnixNano", 0)),
                        end_ns=int(s.get("endTimeUnixNano", 0)),
                        attributes=_key_values(s.get("attributes", [])),
                        events=[
                            SpanEvent(
                                str(e.get("name", "")),
                                int(e.get("timeUnixNano", 0)),
                                _key_values(e.get("attributes", [])),
                            )
                            for e in s.get("events", [])
                        ],
                        status=status,
                        status_message=message,
                        resource=resource,
                    )
                )
    return spans


def _ns(value: Any) -> int:
    """Nanoseconds from an integer or an ISO-8601 timestamp (the SDK's `to_json`)."""
    if value is None:
        return 0
    if isinstance(value, int | float) or str(value).isdigit():
        return int(value)
    when = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return int(when.timestamp() * 1_000_000_000)


def span_from_flat(row: Mapping[str, Any]) -> Span:
    context = row.get("context") or {}
    status, message = _status(row.get("status"))
    resource = row.get("resource") or {}
    return Span(
        trace_id=_hex_id(context.get("trace_id", row.get("trace_id"))),
        span_id=_hex_id(context.get("span_id", row.get("span_id"))),
        parent_id=(
            _hex_id(row.get("parent_id") or row.get("parent_span_id"))
            if row.get("parent_id") or row.get("parent_span_id")
            else None
        ),
        name=str(row.get("name", "")),
        start_ns=_ns(row.get("start_time", row.get("start_time_unix_nano"))),
        end_ns=_ns(row.get("end_time", row.get("end_time_unix_nano"))),
        attributes=dict(row.get("attributes") or {}),
        events=[
            SpanEvent(
                str(e.get("name", "")),
                _ns(e.get("timestamp", e.get("time_unix_nano"))),
                dict(e.get("attributes") or {}),
            )
            for e in row.get("events") or []
        ],
        status=status,
        status_message=message,
        resource=dict(resource.get("attributes", resource)),
    )
