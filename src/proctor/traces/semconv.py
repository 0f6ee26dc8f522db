"""How proctor writes a trial into OpenTelemetry spans, shared by the exporter and importer.

The spans follow the OpenTelemetry GenAI semantic conventions (`invoke_agent` root,
`chat` model-call children, `execute_tool` children); proctor's own attributes sit under
`proctor.`. Every trace event is carried by a span or a span event with its `proctor.seq`,
`proctor.t` and `proctor.data` (the event's data), so an export read back gives the same
trace and so the same verdicts. Without `include_content`, `proctor.data` keeps only the
structural fields below: names, ids, codes, counts; never arguments, results or text.
"""

from __future__ import annotations

from typing import Any

KIND = "proctor.kind"
SEQ = "proctor.seq"
T = "proctor.t"
DATA = "proctor.data"
RUN_ID = "proctor.run_id"
TASK_ID = "proctor.task_id"
TRIAL = "proctor.trial"
STATUS = "proctor.status"
VERDICT = "proctor.verdict"
SCORE = "proctor.score"
FAILED_CHECKS = "proctor.failed_checks"
COST = "proctor.cost_usd"
ERROR = "proctor.error"
FINAL_STATE = "proctor.final_state"

#: The fields of each event kind that are not content (safe to export without opt-in).
STRUCTURAL: dict[str, frozenset[str]] = {
    "model_call": frozenset(
        {
            "model",
            "input_tokens",
            "output_tokens",
            "cost_usd",
            "latency_s",
            "finish_reason",
            "unpriced",
        }
    ),
    "tool_proposal": frozenset({"call_id", "tool"}),
    "policy_decision": frozenset({"call_id", "tool", "allowed", "rule"}),
    "fault": frozenset({"call_id", "tool", "fault"}),
    "tool_result": frozenset({"call_id", "tool", "replayed"}),
    "tool_error": frozenset({"call_id", "tool", "code", "retry_after_s"}),
    "state_change": frozenset({"call_id", "tool"}),
    "state_rollback": frozenset({"call_id", "tool"}),
    "confirmation": frozenset({"call_id", "via"}),
    "message": frozenset({"role", "to"}),
    "note": frozenset({"wait_s", "call_id", "final_state"}),
    "answer": frozenset(),
}


def event_data(kind: str, data: dict[str, Any], include_content: bool) -> dict[str, Any]:
    if include_content:
        return data
    keep = STRUCTURAL.get(kind, frozenset())
    return {k: v for k, v in data.items() if k in keep}
