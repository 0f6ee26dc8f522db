"""Export stored trials as OpenTelemetry spans (`pip install 'proctor[otel]'`).

One trace per trial, under its own trace id: an `invoke_agent {agent}` root span carrying
the GenAI usage attributes and proctor's verdict (`proctor.*`, see `semconv`), a
`chat {model}` span per model call and an `execute_tool {tool}` span per tool call, its
policy decision, fault, result and state change as span events. Arguments, results,
messages, the answer and the final state are exported only with `include_content`.

Spans are built with opentelemetry-sdk and sent to an OTLP/HTTP endpoint, or written as
OTLP JSON, one `{"resourceSpans": ...}` request per trial and line (as the Collector's
file exporter writes them; `proctor grade` and `replay` read them back).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from proctor.core.manifest import Manifest
from proctor.core.outcome import Outcome
from proctor.core.results import TrialResult
from proctor.core.trace import Trace, TraceEvent
from proctor.grade.state import state_recorded
from proctor.traces import semconv as sc

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.id_generator import IdGenerator

    from proctor.interop.redact import Redactor
    from proctor.store.sqlite import Store


class ExportError(RuntimeError):
    """The export could not be done; `str()` is one line for the user."""


class EndpointError(ExportError):
    """The OTLP endpoint did not take the spans (down, refusing): not the user's input."""


@dataclass
class TrialData:
    result: TrialResult
    trace: Trace
    answer: str
    outcome: Outcome | None


def stored_trials(store: Store, run_id: str) -> Iterator[TrialData]:
    for result in store.trial_results(run_id):
        trace, answer, outcome = store.trace(run_id, result.task_id, result.trial)
        yield TrialData(result, trace, answer, outcome)


def _attrs(values: dict[str, Any]) -> dict[str, Any]:
    """OpenTelemetry attribute values: primitives or lists of them; None left out."""
    return {k: v for k, v in values.items() if v is not None}


def _json(value: Any) -> str:
    return json.dumps(value, default=str, ensure_ascii=False, separators=(",", ":"))


class SpanWriter:
    """Turns trials into SDK spans (deterministic ids: the trial's trace id, and span ids
    derived from it) and hands each trial's spans to `sink`."""

    def __init__(
        self, run_id: str, manifest: Manifest, created_at: float, *, include_content: bool
    ) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        from proctor.core.version import __version__

        self.manifest = manifest
        self.include_content = include_content
        self.memory = InMemorySpanExporter()
        self.ids = _Ids()
        resource = Resource({"service.name": "proctor", sc.RUN_ID: run_id})
        # _Ids has IdGenerator's methods; it cannot subclass it: otel is imported lazily.
        ids = cast("IdGenerator", self.ids)
        self.provider = TracerProvider(resource=resource, id_generator=ids)
        self.provider.add_span_processor(SimpleSpanProcessor(self.memory))
        self.tracer = self.provider.get_tracer("proctor", __version__)
        self.base_ns = int(created_at * 1e9)

    def spans(self, trial: TrialData) -> Sequence[Any]:
        """The finished spans of one trial."""
        from opentelemetry import trace as otel
        from opentelemetry.context import Context

        self.ids.start(trial.result.trace_id)
        root = self.tracer.start_span(
            f"invoke_agent {self.manifest.agent.name}",
            context=Context(),  # a new trace, whatever span the caller has open
            attributes=self._root_attributes(trial),
            start_time=self.base_ns,
        )
        parent = otel.set_span_in_context(root)
        by_call: dict[str, list[TraceEvent]] = {}
        for e in trial.trace.events:
            if e.kind != "tool_proposal" and "call_id" in e.data:
                by_call.setdefault(str(e.data["call_id"]), []).append(e)
        end_t = 0.0
        for e in trial.trace.events:
            end_t = max(end_t, e.t)
            if e.kind == "model_call":
                self._model_span(e, parent)
            elif e.kind == "tool_proposal":
                self._tool_span(e, by_call.get(str(e.data.get("call_id")), []), parent)
            elif "call_id" not in e.data:
                root.add_event(f"proctor.{e.kind}", self._event_attrs(e), self._ns(e.t))
        if trial.result.status in ("error", "timeout"):
            self._fail(root, trial.result.status, trial.result.error or trial.result.status)
        root.end(end_time=self._ns(max(end_t, trial.result.latency_s)))
        spans = self.memory.get_finished_spans()
        self.memory.clear()
        return spans

    def shutdown(self) -> None:
        self.provider.shutdown()

    # -- the parts ---------------------------------------------------------------------

    def _ns(self, t: float) -> int:
        return self.base_ns + int(t * 1e9)

    def _event_attrs(self, e: TraceEvent) -> dict[str, Any]:
        data = sc.event_data(e.kind, e.data, self.include_content)
        return {sc.KIND: e.kind, sc.SEQ: e.seq, sc.T: e.t, sc.DATA: _json(data)}

    def _fail(self, span: Any, kind: str, message: str) -> None:
        from opentelemetry.trace import Status, StatusCode

        span.set_attribute("error.type", kind)
        span.set_status(Status(StatusCode.ERROR, message if self.include_content else None))

    def _root_attributes(self, trial: TrialData) -> dict[str, Any]:
        r, m = trial.result, self.manifest
        values: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": m.agent.name,
            "gen_ai.request.model": m.model,
            "gen_ai.usage.input_tokens": r.usage.input_tokens,
            "gen_ai.usage.output_tokens": r.usage.output_tokens,
            sc.RUN_ID: r.run_id,
            sc.TASK_ID: r.task_id,
            sc.TRIAL: r.trial,
            sc.STATUS: r.status,
            sc.VERDICT: "pass" if r.passed else "fail",
            sc.SCORE: r.score,
            sc.FAILED_CHECKS: [c.name for c in r.failed_checks],
            sc.COST: r.usage.cost_usd,
        }
        if self.include_content:
            values["gen_ai.output.messages"] = _json(
                [{"role": "assistant", "parts": [{"type": "text", "content": trial.answer}]}]
            )
            values[sc.ERROR] = r.error
            if trial.outcome is not None and state_recorded(trial.trace):
                values[sc.FINAL_STATE] = _json(trial.outcome.final_state)
        return _attrs(values)

    def _model_span(self, e: TraceEvent, parent: Any) -> None:
        d = e.data
        latency = float(d.get("latency_s") or 0.0)
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": d.get("model"),
            "gen_ai.response.model": d.get("model"),
            "gen_ai.usage.input_tokens": d.get("input_tokens"),
            "gen_ai.usage.output_tokens": d.get("output_tokens"),
            sc.COST: d.get("cost_usd"),
            **self._event_attrs(e),
        }
        span = self.tracer.start_span(
            f"chat {d.get('model', '')}".strip(),
            context=parent,
            attributes=_attrs(attributes),
            start_time=self._ns(max(e.t - latency, 0.0)),
        )
        span.end(end_time=self._ns(e.t))

    def _tool_span(self, proposal: TraceEvent, related: list[TraceEvent], parent: Any) -> None:
        d = proposal.data
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": d.get("tool"),
            "gen_ai.tool.call.id": d.get("call_id"),
            "gen_ai.tool.type": "function",
            **self._event_attrs(proposal),
        }
        if self.include_content:
            attributes["gen_ai.tool.call.arguments"] = _json(d.get("args"))
        span = self.tracer.start_span(
            f"execute_tool {d.get('tool', '')}",
            context=parent,
            attributes=_attrs(attributes),
            start_time=self._ns(proposal.t),
        )
        end_t = proposal.t
        for e in related:
            end_t = max(end_t, e.t)
            span.add_event(f"proctor.{e.kind}", self._event_attrs(e), self._ns(e.t))
            if e.kind == "tool_result" and self.include_content:
                span.set_attribute("gen_ai.tool.call.result", _json(e.data.get("result")))
            elif e.kind == "tool_error":
                self._fail(span, str(e.data.get("code")), str(e.data.get("error", "")))
        span.end(end_time=self._ns(end_t))


class _Ids:
    """Deterministic ids: a trial's trace id, span ids hashed from it and a counter, so a
    re-export gives the same spans (and links from other tools stay valid)."""

    def start(self, trace_id: str) -> None:
        self.trace_id = int(trace_id, 16) if _is_hex(trace_id, 32) else _hash_int(trace_id, 128)
        self.count = 0

    def generate_trace_id(self) -> int:
        return self.trace_id

    def generate_span_id(self) -> int:
        self.count += 1
        return _hash_int(f"{self.trace_id}:{self.count}", 64)

    def is_trace_id_random(self) -> bool:
        return False


def _is_hex(text: str, length: int) -> bool:
    return len(text) == length and all(c in "0123456789abcdef" for c in text.lower())


def _hash_int(text: str, bits: int) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[: bits // 8], "big") or 1


# -- sinks ---------------------------------------------------------------------------


def _any_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list | tuple):
        return {"arrayValue": {"values": [_any_value(v) for v in value]}}
    return {"stringValue": str(value)}


def _key_values(attributes: Any) -> list[dict[str, Any]]:
    return [{"key": k, "value": _any_value(v)} for k, v in (attributes or {}).items()]


_STATUS_CODES = {"UNSET": 0, "OK": 1, "ERROR": 2}


def otlp_json(spans: Sequence[Any]) -> dict[str, Any]:
    """SDK spans as one OTLP/JSON ExportTraceServiceRequest (hex ids, as the spec says)."""
    if not spans:
        return {"resourceSpans": []}
    rows = []
    for s in spans:
        row: dict[str, Any] = {
            "traceId": f"{s.context.trace_id:032x}",
            "spanId": f"{s.context.span_id:016x}",
            "name": s.name,
            "kind": int(s.kind.value) + 1,  # the SDK counts from 0, OTLP from 1
            "startTimeUnixNano": str(s.start_time),
            "endTimeUnixNano": str(s.end_time),
            "attributes": _key_values(s.attributes),
            "events": [
                {
                    "timeUnixNano": str(e.timestamp),
                    "name": e.name,
                    "attributes": _key_values(e.attributes),
                }
                for e in s.events
            ],
            "status": {"code": _STATUS_CODES[s.status.status_code.name]},
        }
        if s.parent is not None:
            row["parentSpanId"] = f"{s.parent.span_id:016x}"
        if s.status.description:
            row["status"]["message"] = s.status.description
        rows.append(row)
    scope = spans[0].instrumentation_scope
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _key_values(spans[0].resource.attributes)},
                "scopeSpans": [
                    {"scope": {"name": scope.name, "version": scope.version or ""}, "spans": rows}
                ],
            }
        ]
    }


def file_sink(path: Path) -> tuple[Callable[[Sequence[Any]], None], Callable[[], None]]:
    path.parent.mkdir(parents=True, exist_ok=True)
    out = path.open("w", encoding="utf-8")

    def write(spans: Sequence[Any]) -> None:
        out.write(_json(otlp_json(spans)) + "\n")

    return write, out.close


def otlp_sink(
    endpoint: str, headers: dict[str, str] | None
) -> tuple[Callable[[Sequence[Any]], None], Callable[[], None]]:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    exporter = OTLPSpanExporter(endpoint=endpoint, headers=headers, timeout=10)

    def send(spans: Sequence[Any]) -> None:
        if exporter.export(spans) is not SpanExportResult.SUCCESS:
            raise EndpointError(f"{endpoint}: the OTLP endpoint did not accept the spans")

    return send, exporter.shutdown


# -- the command ---------------------------------------------------------------------


def export_run(
    store: Store,
    run_ref: str,
    *,
    out: str | Path | None = None,
    endpoint: str | None = None,
    include_content: bool = False,
    redactor: Redactor | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[str, int]:
    """Export every trial of a stored run; returns (run id, spans written)."""
    if (out is None) == (endpoint is None):
        raise ExportError("give either a file (--out) or an OTLP endpoint (--endpoint)")
    try:
        import opentelemetry.sdk  # noqa: F401
    except ImportError:
        raise ExportError(
            "exporting spans needs opentelemetry: pip install 'proctor[otel]'"
        ) from None
    run = store.run(run_ref)
    manifest = Manifest.from_json(run["manifest"])
    writer = SpanWriter(
        run["run_id"], manifest, float(run["created_at"] or 0.0), include_content=include_content
    )
    send, close = file_sink(Path(out)) if out is not None else otlp_sink(str(endpoint), headers)
    count = 0
    try:
        for trial in _redacted(stored_trials(store, run["run_id"]), redactor):
            spans = writer.spans(trial)
            send(spans)
            count += len(spans)
    finally:
        close()
        writer.shutdown()
    return run["run_id"], count


def _redacted(trials: Iterable[TrialData], redactor: Redactor | None) -> Iterator[TrialData]:
    for trial in trials:
        if redactor is not None:
            trace, answer, outcome = redactor.trial(
                trial.result, trial.trace, trial.answer, trial.outcome
            )
            trial = TrialData(trial.result, trace, answer, outcome)
        yield trial
