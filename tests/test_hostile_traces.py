"""Hostile trace files, generated one per defect: each is refused with file and line (or
session), exit 2, or imported with a data-quality flag that fails the trial, its budget
checks and the run's gates on the flagged measure. Sessions are never merged.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from proctor.cli import main
from proctor.core.bounded import MAX_DEPTH
from proctor.traces.imported import TraceInputError
from proctor.traces.trace_files import load_sessions

ROOT = Path(__file__).resolve().parents[1]
SUPPORT = ROOT / "examples" / "support"

TASK = """
id: cancel-a100
domain: support
identity: {user: user-42, tenant: acme, scopes: [orders:read, orders:write]}
prompt: Cancel order A-100 because I changed my mind.
initial_state:
  orders:
    A-100: {status: placed, owner: user-42, tenant: acme}
expect:
  trajectory:
    required: [{tool: orders.get}]
  budget: {max_cost_usd: 1.0, max_tokens: 100000}
"""


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    root = tmp_path / "suite"
    (root / "tasks").mkdir(parents=True)
    shutil.copy(SUPPORT / "domain.py", root / "domain.py")
    (root / "tasks" / "cancel-a100.yaml").write_text(TASK)
    return root


def span(trace: str, sid: str, parent: str | None, name: str, **attrs: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "name": name,
        "context": {"trace_id": trace, "span_id": sid},
        "parent_id": parent,
        "start_time": 1_000_000_000,
        "end_time": 2_000_000_000,
        "attributes": {"task_id": "cancel-a100", **attrs},
    }
    return row


def session_spans(trace: str, cost: Any = 0.001, tokens: Any = 10, args: Any = None) -> list:
    """A GenAI session: invoke_agent root, one chat span, one orders.get call."""
    root = f"{trace[:12]}r"
    arguments = json.dumps({"order_id": "A-100"}) if args is None else args
    return [
        span(trace, root, None, "invoke_agent shop"),
        span(
            trace,
            f"{trace[:12]}c",
            root,
            "chat gpt-4o-mini",
            **{
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.usage.input_tokens": tokens,
                "gen_ai.usage.output_tokens": 5,
                "proctor.cost_usd": cost,
            },
        ),
        span(
            trace,
            f"{trace[:12]}t",
            root,
            "execute_tool orders.get",
            **{
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "orders.get",
                "gen_ai.tool.call.arguments": arguments,
                "gen_ai.tool.call.result": json.dumps({"status": "placed"}),
            },
        ),
    ]


def write_lines(path: Path, rows: list[Any]) -> Path:
    # NaN and Infinity are written as JavaScript literals, as some exporters do
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def grade(path: Path, suite: Path, tmp_path: Path, *extra: str) -> Result:
    return CliRunner().invoke(
        main,
        [
            "grade",
            str(path),
            "--suite",
            str(suite),
            "--store",
            str(tmp_path / "p.db"),
            "--json",
            str(tmp_path / "summary.json"),
            *extra,
        ],
    )


def summary(tmp_path: Path) -> dict[str, Any]:
    return json.loads((tmp_path / "summary.json").read_text())


T1, T2, T3 = "a" * 32, "b" * 32, "c" * 32


# -- flagged: imported, and the flag fails what it touches ------------------------------

FLAGGED = [
    ("args-not-json", {"args": "cancel it now"}, "arguments"),
    ("args-null", {"args": "null"}, "arguments"),
    ("args-list", {"args": '["A-100"]'}, "arguments"),
    ("args-number", {"args": "42"}, "arguments"),
    ("cost-nan", {"cost": math.nan}, "cost"),
    ("cost-inf", {"cost": math.inf}, "cost"),
    ("cost-negative", {"cost": -3.0}, "cost"),
    ("tokens-negative", {"tokens": -500}, "tokens"),
    ("tokens-absurd", {"tokens": 10**15}, "tokens"),
    ("tokens-text", {"tokens": "lots"}, "tokens"),
]


@pytest.mark.parametrize(("name", "defect", "code"), FLAGGED, ids=[f[0] for f in FLAGGED])
def test_a_flagged_value_fails_its_trial_and_shows(
    suite: Path, tmp_path: Path, name: str, defect: dict[str, Any], code: str
) -> None:
    path = write_lines(tmp_path / f"{name}.jsonl", session_spans(T1, **defect))
    result = grade(path, suite, tmp_path)
    assert result.exit_code == 0, result.output
    s = summary(tmp_path)
    assert s["data_quality"] == {code: 1}
    [row] = s["per_task"]
    assert row["passed"] == 0 and row["failed_checks"].get(f"data_quality:{code}") == 1
    if code in ("cost", "tokens"):
        limit = "max_cost_usd" if code == "cost" else "max_tokens"
        assert row["failed_checks"].get(limit) == 1  # the budget check fails, never passes
    assert "data quality" in result.output


def test_a_negative_cost_cannot_offset_a_real_one(suite: Path, tmp_path: Path) -> None:
    """$5 spent, then a span of -$4.50: the total is not $0.50, and the gate fails."""
    rows = session_spans(T1, cost=5.0)
    extra = span(
        T1,
        "neg",
        rows[0]["context"]["span_id"],
        "chat gpt-4o-mini",
        **{
            "gen_ai.operation.name": "chat",
            "gen_ai.usage.input_tokens": 1,
            "gen_ai.usage.output_tokens": 1,
            "proctor.cost_usd": -4.5,
        },
    )
    path = write_lines(tmp_path / "offset.jsonl", [*rows, extra])
    assert grade(path, suite, tmp_path).exit_code == 0
    assert summary(tmp_path)["cost"]["total_usd"] == pytest.approx(5.0)
    rules = tmp_path / "gates.yaml"
    rules.write_text("rules:\n  - total_cost_usd <= 1\n  - p95_cost_usd <= 1\n")
    gated = CliRunner().invoke(
        main,
        ["gate", "latest", "--rules", str(rules), "--store", str(tmp_path / "p.db"), "--json"],
    )
    assert gated.exit_code == 1, gated.output
    rows = json.loads(gated.output)["rules"]
    costs = [r for r in rows if "cost" in r["rule"]]
    assert len(costs) == 2 and all(r["status"] == "fail" for r in costs)
    assert all("imported data flagged: cost 1" in r["reason"] for r in costs)


# -- refused: file and line or session, exit 2 -----------------------------------------


def own_parent() -> list[Any]:
    rows = session_spans(T1)
    rows[1]["parent_id"] = rows[1]["context"]["span_id"]
    return rows


def cycle() -> list[Any]:
    rows = session_spans(T1)
    rows[0]["parent_id"] = rows[1]["context"]["span_id"]  # root -> chat -> root
    return rows


def no_messages() -> list[Any]:
    return [{"id": "s1", "task_id": "cancel-a100", "messages": []}]


def state_of_wrong_type() -> list[Any]:
    messages = [{"role": "user", "content": "Cancel A-100"}]
    return [{"id": "s1", "task_id": "cancel-a100", "messages": messages, "final_state": [1]}]


def deep() -> str:
    return json.dumps({"id": "s1", "messages": []})[:-2] + "[" * 5000 + "]" * 5000 + "]}"


REFUSED = [
    ("own-parent", own_parent, r"session '[a]{32}': span \w+ is its own parent"),
    ("parent-cycle", cycle, r"spans form a parent cycle"),
    ("no-messages", no_messages, r":1: session 's1': no messages, tool calls or model calls"),
    ("state-type", state_of_wrong_type, r":1: session 's1': the final state is a list"),
]


@pytest.mark.parametrize(("name", "make", "message"), REFUSED, ids=[r[0] for r in REFUSED])
def test_a_refused_trace_is_one_line_exit_2(
    suite: Path, tmp_path: Path, name: str, make: Any, message: str
) -> None:
    path = write_lines(tmp_path / f"{name}.jsonl", make())
    result = grade(path, suite, tmp_path)
    assert result.exit_code == 2, result.output
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(str(path)) and re.search(message, line), line
    assert "Traceback" not in result.output


def test_deeply_nested_json_is_a_clear_error_not_a_recursion_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text(
        json.dumps({"id": "s0", "messages": [{"role": "user", "content": "hi"}]})
        + "\n"
        + deep()
        + "\n"
    )
    with pytest.raises(TraceInputError, match=rf"{path}:2: nested deeper than {MAX_DEPTH} levels"):
        load_sessions(path)


# -- sessions are never merged -----------------------------------------------------------


def test_three_sessions_without_trace_ids_are_three(tmp_path: Path) -> None:
    rows = []
    for n in range(3):
        for row in session_spans(f"{n}" * 32):
            row["context"].pop("trace_id")
            rows.append(row)
    sessions = load_sessions(write_lines(tmp_path / "three.jsonl", rows))
    assert len(sessions) == 3
    assert [len(s.calls()) for s in sessions] == [1, 1, 1]


def test_spans_with_nothing_to_tell_them_apart_are_refused(tmp_path: Path) -> None:
    rows = [{"name": "chat", "span_id": "", "attributes": {}} for _ in range(3)]
    with pytest.raises(TraceInputError, match=":1: a span with neither trace id nor span id"):
        load_sessions(write_lines(tmp_path / "anon.jsonl", rows))
    orphan = session_spans(T1)
    for row in orphan:
        row["context"].pop("trace_id")
    orphan[0]["parent_id"] = "ffff0000"
    with pytest.raises(TraceInputError, match="parent ffff0000 is not in the file"):
        load_sessions(write_lines(tmp_path / "orphan.jsonl", orphan))


def test_a_list_of_messages_holding_two_conversations_is_refused(tmp_path: Path) -> None:
    one = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
    ]
    path = write_lines(tmp_path / "two.jsonl", one + one)
    with pytest.raises(TraceInputError, match=r":4: a second conversation starts"):
        load_sessions(path)
    lines = write_lines(tmp_path / "lines.jsonl", [one, one, one])  # a conversation per line
    assert [s.id for s in load_sessions(lines)] == ["session-1", "session-2", "session-3"]


def test_two_sessions_with_one_id_are_refused(tmp_path: Path) -> None:
    record = {"id": "s1", "messages": [{"role": "user", "content": "hi"}]}
    with pytest.raises(TraceInputError, match=r":2: session id 's1' again \(first at 1\)"):
        load_sessions(write_lines(tmp_path / "twice.jsonl", [record, record]))


def test_sessions_naming_one_conversation_are_one(tmp_path: Path) -> None:
    """Two traces of one conversation id are one session: that is the format's signal."""
    rows = session_spans(T1) + session_spans(T2)
    for row in rows:
        row["attributes"]["gen_ai.conversation.id"] = "conv-1"
    rows += session_spans(T3)
    sessions = load_sessions(write_lines(tmp_path / "conv.jsonl", rows))
    assert [len(s.calls()) for s in sessions] == [2, 1]


CLUMSY = """
async def clumsy(input, toolbox):
    # the task has a budget: a cost no call reported would fail it ("not measured")
    toolbox.record_model_call(
        model="m", input_tokens=40, output_tokens=8, cost_usd=0.001, latency_s=0.2
    )
    await toolbox.call("orders.get", ["A-100"])  # refused by the gateway: not an object
    await toolbox.call("orders.get", {"order_id": "A-100"})
    return "A-100 is placed."
"""


def test_a_call_the_recording_shows_refused_is_not_a_data_quality_flag(
    suite: Path, tmp_path: Path
) -> None:
    """proctor's own export of a live trial reads back with its verdict: the gateway
    already refused the malformed call (invalid_arguments), so it is not flagged."""
    pytest.importorskip("opentelemetry.sdk")
    (tmp_path / "agents.py").write_text(CLUMSY)
    db, spans = str(tmp_path / "live.db"), tmp_path / "spans.jsonl"
    cli = CliRunner()
    ran = cli.invoke(
        main,
        [
            "run",
            str(suite),
            "--agent",
            f"{tmp_path}/agents.py:clumsy",
            "--store",
            db,
            "--json",
            str(tmp_path / "live.json"),
            "-q",
        ],
    )
    assert ran.exit_code == 0, ran.output
    exported = cli.invoke(
        main, ["export-otel", "latest", "--store", db, "--include-content", "--out", str(spans)]
    )
    assert exported.exit_code == 0, exported.output
    assert grade(spans, suite, tmp_path).exit_code == 0
    live = json.loads((tmp_path / "live.json").read_text())
    assert summary(tmp_path)["data_quality"] == {}
    assert summary(tmp_path)["per_task"][0]["passed"] == live["per_task"][0]["passed"] == 1


def otlp_request(order: str, trace: str | None) -> dict[str, Any]:
    """One OTLP request holding a whole session whose span ids are always the same (as a
    copied export's are); `trace`: its trace id, or none."""

    def attr(key: str, value: Any) -> dict[str, Any]:
        kind = "intValue" if isinstance(value, int) else "stringValue"
        return {"key": key, "value": {kind: str(value) if isinstance(value, int) else value}}

    spans = []
    for row in session_spans(T1, args=json.dumps({"order_id": order})):
        span_id, parent = row["context"]["span_id"], row["parent_id"]
        otlp = {
            "spanId": hashlib.sha256(span_id.encode()).hexdigest()[:16],
            "name": row["name"],
            "startTimeUnixNano": str(row["start_time"]),
            "endTimeUnixNano": str(row["end_time"]),
            "attributes": [attr(k, v) for k, v in row["attributes"].items()],
        }
        if parent:
            otlp["parentSpanId"] = hashlib.sha256(parent.encode()).hexdigest()[:16]
        if trace:
            otlp["traceId"] = trace
        spans.append(otlp)
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}


@pytest.mark.parametrize(
    ("trace", "message"),
    [
        (None, r":2: span \w+ again, without a trace id \(first at line 1\)"),
        (T2, r"span \w+ twice in one trace .*never merged"),
    ],
)
def test_requests_reusing_span_ids_are_refused_never_merged(
    tmp_path: Path, suite: Path, trace: str | None, message: str
) -> None:
    """Three sessions in three requests with one set of span ids (a copied export) were
    one session graded on the last request, with no message."""
    rows = [otlp_request(order, trace) for order in ("A-100", "B-200", "C-300")]
    path = write_lines(tmp_path / "copied.jsonl", rows)
    with pytest.raises(TraceInputError, match=message):
        load_sessions(path)
    result = grade(path, suite, tmp_path)
    assert result.exit_code == 2 and "Traceback" not in result.output
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(str(path)) and re.search(message, line), line
    # the same requests with span ids of their own are three sessions
    for n, row in enumerate(rows):
        for span in row["resourceSpans"][0]["scopeSpans"][0]["spans"]:
            span["spanId"] = f"{n}{span['spanId'][1:]}"
            if "parentSpanId" in span:
                span["parentSpanId"] = f"{n}{span['parentSpanId'][1:]}"
            span.pop("traceId", None)
    fresh = load_sessions(write_lines(tmp_path / "fresh.jsonl", rows))
    assert [s.calls()[0][1]["order_id"] for s in fresh] == ["A-100", "B-200", "C-300"]
