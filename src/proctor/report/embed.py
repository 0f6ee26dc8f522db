"""A trial as the trace viewer receives it: compact rows in an inert JSON blob.

The blob is the content of a `<script type="application/json">` element. Its text can hold
anything an agent or tool wrote, so `<`, `>` and `&` are written as JSON `\\u` escapes: no
`</script>` or `<!--` can end the element early, and `JSON.parse` gives the text back
exactly. Steps and checks are arrays, not objects, to keep a 1,000-trial page small.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from proctor.core.results import TrialResult
from proctor.core.steps import check_views, step
from proctor.core.trace import Trace

_SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"}
#: The most characters the report embeds of one field: an answer, a tool result, a
#: check's evidence item. The rest is marked as cut; `proctor show` prints it whole.
FIELD_CHARS = 20_000


def _finite(value: Any) -> Any:
    """NaN and infinities as text: JSON.parse rejects them."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def script_json(value: Any) -> str:
    """JSON that is safe as the content of a `<script type="application/json">` element."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(value), ensure_ascii=False, separators=(",", ":"))
    for char, escape in _SCRIPT_ESCAPES.items():
        text = text.replace(char, escape)
    return text


def capper(r: TrialResult, limit: int = FIELD_CHARS) -> Callable[[Any], Any]:
    """Cuts one field (a text, or a value whose JSON text is longer than `limit`) to
    `limit` characters, marked with what was cut and the command that shows it all."""
    where = f"proctor show {r.run_id} --task {r.task_id} --trial {r.trial}"

    def cap(value: Any) -> Any:
        if isinstance(value, str):
            text = value
        elif isinstance(value, dict | list) and value:
            text = json.dumps(value, ensure_ascii=False, default=str)
        else:
            return value
        if len(text) <= limit:
            return value
        return f"{text[:limit]}… [{len(text) - limit:,} more characters cut; `{where}` shows them]"

    return cap


def trial_payload(r: TrialResult, trace: Trace, prompt: str | None) -> dict[str, Any]:
    """What the trace viewer shows for one trial; steps and checks as compact rows, each
    field cut to FIELD_CHARS (a 200 MB answer must not make a 200 MB report)."""
    steps = [step(e) for e in trace.events]
    seqs = {s.seq for s in steps}
    cap = capper(r)
    return {
        "task": r.task_id,
        "trial": r.trial,
        "status": r.status,
        "score": r.score,
        "seed": r.seed,
        "trace_id": r.trace_id,
        "latency_s": r.latency_s,
        "simulated_s": r.simulated_s,
        "usage": r.usage.to_dict(),
        "error": cap(r.error),
        "prompt": cap(prompt),
        "steps": [
            [
                s.seq,
                s.t,
                s.kind,
                s.call_id,
                cap(s.text),
                cap(s.detail),
                [
                    [cap(c.path), cap(c.before), cap(c.after), c.existed, c.exists]
                    for c in s.changes
                ],
                s.flag,
            ]
            for s in steps
        ],
        "checks": [
            [
                v.check.name,
                v.check.kind,
                v.check.passed,
                v.check.score,
                v.check.severity,
                {key: cap(item) for key, item in v.check.evidence.items()},
                list(v.steps),
                v.check.blocks,
            ]
            for v in check_views(r.checks, seqs)
        ],
    }
