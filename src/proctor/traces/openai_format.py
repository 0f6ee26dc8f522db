"""OpenAI chat-format message logs → sessions.

A log is a list of `{role, content, tool_calls, tool_call_id}` messages per session. A
file holds one session (a list of messages) or several: a list of objects with the
messages under `messages` (or `traj`, as tau-bench writes them) and optionally `id` /
`session_id`, `task_id`, `agent`, `model`, `final_state`, `metadata`. An assistant message
may carry `usage` (`prompt_tokens`, `completion_tokens`) and `model`; it is then recorded
as a model call, a count it leaves out not measured (never 0). A tool message whose
content starts with "error" (or that has `is_error: true`) is a tool error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from proctor.agents.pricing import PriceTable
from proctor.traces.imported import Session, SessionBuilder, parse_json

MESSAGE_KEYS = ("messages", "traj")


def is_message_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(m, dict) and "role" in m for m in value)


def is_session_record(value: Any) -> bool:
    return isinstance(value, dict) and any(is_message_list(value.get(k)) for k in MESSAGE_KEYS)


def session_record(record: Mapping[str, Any], index: int, prices: PriceTable) -> Session:
    """The session of one record `{id, task_id, messages, ...}`, the `index`-th of its file."""
    messages = next(record[k] for k in MESSAGE_KEYS if is_message_list(record.get(k)))
    task_id = record.get("task_id")
    metadata = dict(record.get("metadata") or {})
    task_id = task_id if task_id is not None else metadata.get("task_id")
    session_id = record.get("id") or record.get("session_id")
    if session_id is None:
        trial = record.get("trial")
        session_id = (
            f"{task_id}#{trial}"
            if task_id is not None and trial is not None
            else f"session-{index + 1}"
        )
    extra = {k: record[k] for k in ("trial", "reward") if k in record}
    return session_from_messages(
        messages,
        str(session_id),
        prices,
        task_id=None if task_id is None else str(task_id),
        agent=record.get("agent"),
        model=record.get("model"),
        final_state=record.get("final_state"),
        metadata={**metadata, **extra},
    )


def _text(content: Any) -> str:
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _is_error(message: Mapping[str, Any], text: str) -> bool:
    return bool(message.get("is_error")) or text.lstrip().lower().startswith("error")


def session_from_messages(
    messages: Sequence[Mapping[str, Any]], session_id: str, prices: PriceTable, **fields: Any
) -> Session:
    b = SessionBuilder()
    answer = ""
    models: list[str] = []
    for m in messages:
        role, text = m.get("role"), _text(m.get("content"))
        if role == "assistant":
            usage = m.get("usage")
            if isinstance(usage, Mapping):
                model = str(m.get("model") or fields.get("model") or "unknown")
                models.append(model)
                tokens_in = usage.get("prompt_tokens", usage.get("input_tokens"))
                tokens_out = usage.get("completion_tokens", usage.get("output_tokens"))
                b.model_call(model, tokens_in, tokens_out, prices)
            if text:
                b.message("assistant", text)
            calls = m.get("tool_calls") or []
            for call in calls:
                function = call.get("function") or {}
                b.tool_call(
                    str(function.get("name", "")),
                    parse_json(function.get("arguments")),
                    call.get("id"),
                )
            if not calls:
                answer = text
        elif role == "tool":
            call_id = str(m.get("tool_call_id", ""))
            if _is_error(m, text):
                b.tool_error(call_id, "tool_error", text)
            else:
                b.tool_result(call_id, parse_json(text))
        elif role in ("user", "system", "developer"):
            b.message("system" if role == "developer" else str(role), text)
    b.answer(answer)
    if fields.get("model") is None and models:
        fields["model"] = models[-1]
    return b.build(session_id, **fields)
