"""Spans → sessions: proctor's own export, OpenTelemetry GenAI spans, OpenInference spans.

Spans are grouped into sessions (traces/trace_files.py) by `session.id` /
`gen_ai.conversation.id` where a trace carries one, else by trace id. Per group:

- proctor's export (spans with `proctor.seq`): the trace events are read back as written.
- OpenInference (`openinference.span.kind`): LLM spans are model calls (`llm.model_name`,
  `llm.token_count.*`, `llm.input_messages` / `llm.output_messages`), TOOL spans tool
  calls (`tool.name`, arguments in `input.value`, result in `output.value`), the root
  AGENT/CHAIN span's `output.value` the answer.
- GenAI conventions otherwise: `chat` / `text_completion` / `generate_content` spans are
  model calls (`gen_ai.usage.*`, `gen_ai.input.messages` / `gen_ai.output.messages`),
  `execute_tool` spans tool calls (`gen_ai.tool.*`), an `invoke_agent` span's output the
  answer. A span with status ERROR or `error.type` is a failed call.

A task id is read from `proctor.task_id`, `task.id` or `task_id` attributes, or from the
`metadata` JSON of OpenInference; a mapping file can supply the rest.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from proctor.agents.pricing import PriceTable
from proctor.core.trace import TraceEvent
from proctor.traces import semconv as sc
from proctor.traces.imported import HARNESS_STATUSES, Session, SessionBuilder, parse_json
from proctor.traces.spans import Span

MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
SESSION_KEYS = ("session.id", "gen_ai.conversation.id")
TASK_KEYS = (sc.TASK_ID, "task.id", "task_id")


def session_of_group(
    key: str, group: list[Span], prices: PriceTable, flavour: str = "auto"
) -> Session:
    """The session of one group of spans (trace_files groups them); `flavour`: `auto`
    (decided by the spans), `otel` (GenAI) or `openinference`."""
    group.sort(key=lambda s: (s.start_ns, s.end_ns))
    if any(sc.SEQ in s.attributes for s in group):
        return _proctor_session(group)
    if flavour == "openinference" or (
        flavour == "auto" and any("openinference.span.kind" in s.attributes for s in group)
    ):
        return _openinference_session(key, group, prices)
    return _genai_session(key, group, prices)


def session_id_of(span: Span) -> str | None:
    """The session a span says it belongs to (`session.id`, `gen_ai.conversation.id`)."""
    value = span.attr(*SESSION_KEYS)
    return None if value is None else str(value)


def _root(group: list[Span]) -> Span:
    ids = {s.span_id for s in group}
    return next((s for s in group if s.parent_id is None or s.parent_id not in ids), group[0])


def _task_id(group: list[Span]) -> str | None:
    for span in group:
        value = span.attr(*TASK_KEYS)
        if value is None:
            metadata = parse_json(span.attributes.get("metadata"))
            value = metadata.get("task_id") if isinstance(metadata, dict) else None
        if value is not None:
            return str(value)
    return None


def _first(group: list[Span], *keys: str) -> Any:
    return next((v for s in group if (v := s.attr(*keys)) is not None), None)


# -- proctor's own export ----------------------------------------------------------------


def _proctor_session(group: list[Span]) -> Session:
    items: list[tuple[int, float, str, dict[str, Any]]] = []
    for span in group:
        for attrs in [span.attributes, *(e.attributes for e in span.events)]:
            if sc.SEQ in attrs:
                data = parse_json(attrs.get(sc.DATA, "{}"))
                items.append(
                    (
                        int(attrs[sc.SEQ]),
                        float(attrs.get(sc.T, 0.0)),
                        str(attrs[sc.KIND]),
                        data if isinstance(data, dict) else {},
                    )
                )
    items.sort(key=lambda item: item[0])
    events = [TraceEvent(seq, t, kind, data) for seq, t, kind, data in items]
    root = _root(group)
    task_id, trial = root.attr(sc.TASK_ID), root.attr(sc.TRIAL)
    status = root.attr(sc.STATUS)
    state = parse_json(root.attr(sc.FINAL_STATE))
    return Session(
        f"{task_id}#{trial}",
        events,
        task_id=None if task_id is None else str(task_id),
        agent=root.attr("gen_ai.agent.name"),
        model=root.attr("gen_ai.request.model"),
        final_state=state if isinstance(state, dict) else None,
        status=HARNESS_STATUSES.get(status) if isinstance(status, str) else None,
        error=root.attr(sc.ERROR),
        latency_s=root.duration_s,
        trace_id=root.trace_id,
        metadata={"trial": trial, "run_id": root.attr(sc.RUN_ID), "started_at": _started(group)},
    )


# -- GenAI semantic conventions ----------------------------------------------------------


def _genai_messages(value: Any) -> list[tuple[str, str, bool]]:
    """(role, text, has tool calls) of a `gen_ai.*.messages` value (parts or content)."""
    messages = parse_json(value)
    out = []
    for m in messages if isinstance(messages, list) else []:
        if not isinstance(m, dict):
            continue
        parts = m.get("parts")
        if isinstance(parts, list):
            text = "".join(
                str(p.get("content", ""))
                for p in parts
                if isinstance(p, dict) and p.get("type") == "text"
            )
            calls = any(isinstance(p, dict) and p.get("type") == "tool_call" for p in parts)
        else:
            text, calls = str(m.get("content") or ""), bool(m.get("tool_calls"))
        out.append((str(m.get("role", "")), text, calls))
    return out


def _operation(span: Span) -> str:
    return str(span.attributes.get("gen_ai.operation.name") or span.name.split(" ", 1)[0])


def _first_user(messages: list[tuple[str, str, bool]]) -> str | None:
    return next((text for role, text, _ in messages if role == "user" and text), None)


def _genai_session(key: str, group: list[Span], prices: PriceTable) -> Session:
    b, t0, answer = SessionBuilder(), group[0].start_ns, ""
    prompts = (_first_user(_genai_messages(s.attr("gen_ai.input.messages"))) for s in group)
    prompt = next((p for p in prompts if p), None)
    if prompt is not None:
        b.message("user", prompt)
    for span in group:
        op, t = _operation(span), (span.end_ns - t0) / 1e9
        if op in MODEL_OPERATIONS:
            model = str(span.attr("gen_ai.response.model", "gen_ai.request.model") or "unknown")
            # absent: not measured; `prompt_`/`completion_tokens`: the older GenAI names
            tokens_in = span.attr("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens")
            tokens_out = span.attr("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens")
            cost = span.attr(sc.COST)
            b.model_call(
                model, tokens_in, tokens_out, prices, cost_usd=cost, latency_s=span.duration_s, t=t
            )
            for role, text, calls in _genai_messages(span.attr("gen_ai.output.messages")):
                if role == "assistant" and text:
                    b.message("assistant", text, t)
                    answer = "" if calls else text
        elif op == "execute_tool":
            name = span.attr("gen_ai.tool.name") or span.name.removeprefix("execute_tool").strip()
            raw = span.attr("gen_ai.tool.call.arguments")  # absent: content not captured
            args = {} if raw is None else parse_json(raw)
            call = b.tool_call(
                str(name), args, span.attr("gen_ai.tool.call.id"), (span.start_ns - t0) / 1e9
            )
            _tool_outcome(b, call, span, span.attr("gen_ai.tool.call.result"), t)
        elif op == "invoke_agent":
            said = _genai_messages(span.attr("gen_ai.output.messages"))
            answer = next(
                (text for role, text, _ in reversed(said) if role == "assistant" and text), answer
            )
    b.answer(answer, (group[-1].end_ns - t0) / 1e9)
    return _built(b, key, group, _first(group, "gen_ai.agent.name"))


def _tool_outcome(b: SessionBuilder, call: str, span: Span, result: Any, t: float) -> None:
    error_type = span.attr("error.type")
    if span.status == "ERROR" or error_type is not None:
        message = span.status_message or str(result or "") or "tool failed"
        b.tool_error(call, str(error_type or "tool_error"), message, t)
    else:
        b.tool_result(call, parse_json(result), t)


def _built(b: SessionBuilder, key: str, group: list[Span], agent: Any) -> Session:
    models = Counter(e.data["model"] for e in b.events if e.kind == "model_call")
    root = _root(group)
    return b.build(
        key,
        task_id=_task_id(group),
        agent=None if agent is None else str(agent),
        model=models.most_common(1)[0][0] if models else None,
        latency_s=(max(s.end_ns for s in group) - group[0].start_ns) / 1e9,
        trace_id=root.trace_id,
        metadata={"started_at": _started(group)},
    )


def _started(group: list[Span]) -> str:
    """When the session began (its first span), for the monitor's time windows."""
    start = datetime.fromtimestamp(group[0].start_ns / 1e9, UTC)
    return start.isoformat().replace("+00:00", "Z")


# -- OpenInference -------------------------------------------------------------------------

_OI_MESSAGE = re.compile(
    r"^(?P<list>llm\.(?:input|output)_messages)\.(?P<i>\d+)\.message\.(?P<field>role|content|tool_calls)"
)


def _oi_messages(attrs: dict[str, Any], prefix: str) -> list[tuple[str, str, bool]]:
    """(role, text, has tool calls) of flattened `llm.input_messages.N.message.*` keys, or
    of a nested list under `prefix` (some exporters keep them unflattened)."""
    nested = attrs.get(prefix)
    if isinstance(nested, list):
        rows = [m.get("message", m) for m in nested if isinstance(m, dict)]
        return [
            (str(r.get("role", "")), str(r.get("content") or ""), bool(r.get("tool_calls")))
            for r in rows
        ]
    found: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        m = _OI_MESSAGE.match(key)
        if m and m["list"] == prefix:
            row = found.setdefault(int(m["i"]), {})
            if m["field"] == "tool_calls":
                row["calls"] = True
            else:
                row[m["field"]] = value
    return [
        (str(r.get("role", "")), str(r.get("content") or ""), bool(r.get("calls")))
        for _, r in sorted(found.items())
    ]


def _openinference_session(key: str, group: list[Span], prices: PriceTable) -> Session:
    b, t0, answer = SessionBuilder(), group[0].start_ns, ""
    root = _root(group)
    prompts = (_first_user(_oi_messages(s.attributes, "llm.input_messages")) for s in group)
    prompt = next((p for p in prompts if p), None) or root.attributes.get("input.value")
    if isinstance(prompt, str) and prompt:
        b.message("user", prompt)
    for span in group:
        kind = str(span.attributes.get("openinference.span.kind", "")).upper()
        t = (span.end_ns - t0) / 1e9
        if kind == "LLM":
            model = str(span.attributes.get("llm.model_name") or "unknown")
            tokens_in = span.attributes.get("llm.token_count.prompt")  # absent: not measured
            tokens_out = span.attributes.get("llm.token_count.completion")
            cost = span.attributes.get("llm.cost.total")
            b.model_call(
                model, tokens_in, tokens_out, prices, cost_usd=cost, latency_s=span.duration_s, t=t
            )
            for role, text, calls in _oi_messages(span.attributes, "llm.output_messages"):
                if role == "assistant" and text:
                    b.message("assistant", text, t)
                    answer = "" if calls else text
        elif kind == "TOOL":
            name = span.attributes.get("tool.name") or span.name
            raw = span.attributes.get("input.value")
            args = {} if raw is None else parse_json(raw)
            call_id = span.attributes.get("tool_call.id") or span.attributes.get("tool.id")
            call = b.tool_call(str(name), args, call_id, (span.start_ns - t0) / 1e9)
            _tool_outcome(b, call, span, span.attributes.get("output.value"), t)
    output = root.attributes.get("output.value")
    if isinstance(output, str) and output:
        answer = output
    b.answer(answer, (group[-1].end_ns - t0) / 1e9)
    return _built(b, key, group, root.attributes.get("agent.name") or root.name)
