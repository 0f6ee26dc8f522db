"""OpenTelemetry: export a run as GenAI spans, import it back, grade it: same verdicts.
Also: foreign GenAI and OpenInference spans graded, and OTLP/HTTP to a loopback receiver."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from proctor import Misbehaviour, Runner, ScriptedAgent
from proctor.cli import main
from proctor.env.domain_finder import load_module_from_path
from proctor.store import Store
from proctor.traces.grading import grade_sessions
from proctor.traces.trace_files import load_sessions
from support_run import SUPPORT, support_suite

pytest.importorskip("opentelemetry.sdk", reason="opentelemetry-sdk is not installed ('.[otel]')")

from proctor.interop.otel_export import export_run


def verdicts(results: Any) -> dict[tuple[str, int], tuple[str, list[str]]]:
    return {
        (r.task_id, r.trial): (r.status, sorted(c.name for c in r.failed_checks)) for r in results
    }


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Any]:
    """A stored run whose trials pass and fail for many reasons (seeded misbehaviour)."""
    plans = load_module_from_path(SUPPORT / "agents.py").PLANS  # type: ignore[attr-defined]
    wobbly = Misbehaviour(
        skip_lookup=0.3, forbidden_call=0.3, corrupt_argument=0.2, false_success=0.3
    )
    agent = ScriptedAgent(plans, wobbly, name="wobbly")
    db = tmp_path_factory.mktemp("otel") / "p.db"
    with Store(db) as store:
        report = Runner(support_suite(), agent, trials=4, seed=3, store=store).run()
        results = list(report.results)
    return db, report.run_id, results


def spans_of(path: Path) -> list[dict[str, Any]]:
    return [
        span
        for line in path.read_text().splitlines()
        for rs in json.loads(line)["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
    ]


def attrs(span: dict[str, Any]) -> dict[str, Any]:
    return {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}


def test_round_trip_gives_the_same_verdicts(live: tuple[Path, str, Any], tmp_path: Path) -> None:
    db, run_id, results = live
    original = verdicts(results)
    assert {status for status, _ in original.values()} == {"passed", "partial", "failed"}
    out = tmp_path / "spans.jsonl"
    with Store(db) as store:
        export_run(store, run_id, out=out, include_content=True)
        graded = grade_sessions(load_sessions(out), support_suite(), store=store)
    assert verdicts(graded.results) == original
    assert graded.manifest.import_ is not None
    assert graded.manifest.import_["skipped_checks"] == []  # the final state came along
    assert graded.summary.cost.total_usd == pytest.approx(sum(r.usage.cost_usd for r in results))
    # the graded run keeps the trials' trace ids, and compares cleanly with the live run
    assert {r.trace_id for r in graded.results} == {r.trace_id for r in results}
    cli = CliRunner().invoke(main, ["compare", run_id, graded.run_id, "--store", str(db), "--json"])
    assert cli.exit_code == 0, cli.output
    comparison = json.loads(cli.output)
    assert comparison["tasks"] == 3 and not any(comparison["excluded"].values())
    assert comparison["groups"]["regressed"] == [] and comparison["groups"]["improved"] == []


def test_spans_follow_the_genai_conventions(live: tuple[Path, str, Any], tmp_path: Path) -> None:
    db, run_id, results = live
    out = tmp_path / "spans.jsonl"
    with Store(db) as store:
        _, count = export_run(store, run_id, out=out)
        trace, _, _ = store.trace(run_id, "cancel-eligible-order", 0)
    spans = spans_of(out)
    assert len(spans) == count
    roots = [s for s in spans if "parentSpanId" not in s]
    assert len(roots) == len(results) and len(out.read_text().splitlines()) == len(results)
    root = next(
        s
        for s in roots
        if attrs(s)["proctor.task_id"] == "cancel-eligible-order"
        and attrs(s)["proctor.trial"] == "0"
    )
    a = attrs(root)
    assert root["name"] == "invoke_agent wobbly" and a["gen_ai.agent.name"] == "wobbly"
    assert a["gen_ai.operation.name"] == "invoke_agent"
    assert int(a["gen_ai.usage.input_tokens"]) > 0 and a["proctor.run_id"] == run_id
    assert a["proctor.verdict"] in ("pass", "fail")
    children = [s for s in spans if s.get("parentSpanId") == root["spanId"]]
    tools = [attrs(s) for s in children if s["name"].startswith("execute_tool ")]
    assert [t["gen_ai.tool.name"] for t in tools] == [
        e.data["tool"] for e in trace.of_kind("tool_proposal")
    ]
    assert all(
        t["gen_ai.tool.call.id"] and t["gen_ai.operation.name"] == "execute_tool" for t in tools
    )
    chats = [s for s in children if s["name"].startswith("chat ")]
    assert len(chats) == len(list(trace.of_kind("model_call")))
    first = next(r for r in results if (r.task_id, r.trial) == ("cancel-eligible-order", 0))
    assert root["traceId"] == first.trace_id
    # content is opt-in: no arguments, results, messages or answers without it
    text = out.read_text()
    assert "gen_ai.tool.call.arguments" not in text and "customer_request" not in text
    assert "has been cancelled" not in text and "proctor.final_state" not in text


def test_export_is_deterministic(live: tuple[Path, str, Any], tmp_path: Path) -> None:
    db, run_id, _ = live
    with Store(db) as store:
        export_run(store, run_id, out=tmp_path / "a.jsonl", include_content=True)
        export_run(store, run_id, out=tmp_path / "b.jsonl", include_content=True)
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()


class Receiver:
    """An OTLP/HTTP traces receiver on loopback, keeping the decoded requests."""

    def __init__(self) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        self.requests: list[Any] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                receiver.requests.append((self.path, dict(self.headers), request))
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1/traces"


def test_export_to_an_otlp_endpoint(live: tuple[Path, str, Any]) -> None:
    db, run_id, results = live
    with Receiver() as receiver:
        out = CliRunner().invoke(
            main,
            [
                "export-otel",
                run_id,
                "--store",
                str(db),
                "--endpoint",
                receiver.url,
                "--header",
                "x-team=evals",
            ],
        )
    assert out.exit_code == 0, out.output
    assert len(receiver.requests) == len(results)  # one request per trial
    path, headers, request = receiver.requests[0]
    assert path == "/v1/traces" and headers.get("x-team") == "evals"
    names = [s.name for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
    assert any(n.startswith("invoke_agent ") for n in names)
    assert any(n.startswith("execute_tool ") for n in names)


def test_export_otel_input_errors(live: tuple[Path, str, Any]) -> None:
    db, run_id, _ = live
    neither = CliRunner().invoke(main, ["export-otel", run_id, "--store", str(db)])
    assert neither.exit_code == 2 and "either a file" in neither.output
    unknown = CliRunner().invoke(main, ["export-otel", "nope", "--store", str(db), "--out", "x"])
    assert unknown.exit_code == 2 and "no run matching" in unknown.output


GENAI_SPANS = [
    {
        "name": "invoke_agent support-bot",
        "context": {"trace_id": "0x" + "ab" * 16, "span_id": "0x" + "01" * 8},
        "parent_id": None,
        "start_time": "2025-01-01T10:00:00.000000Z",
        "end_time": "2025-01-01T10:00:05.000000Z",
        "attributes": {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "support-bot",
            "task_id": "do-not-cancel-shipped-order",
            "gen_ai.output.messages": json.dumps(
                [
                    {
                        "role": "assistant",
                        "parts": [
                            {
                                "type": "text",
                                "content": "B-200 has shipped, so it cannot be cancelled.",
                            }
                        ],
                    }
                ]
            ),
        },
        "status": {"status_code": "UNSET"},
    },
    {
        "name": "chat gpt-4o",
        "context": {"trace_id": "0x" + "ab" * 16, "span_id": "0x" + "02" * 8},
        "parent_id": "0x" + "01" * 8,
        "start_time": "2025-01-01T10:00:00.100000Z",
        "end_time": "2025-01-01T10:00:01.100000Z",
        "attributes": {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.usage.input_tokens": 1000,
            "gen_ai.usage.output_tokens": 100,
            "gen_ai.input.messages": json.dumps(
                [
                    {
                        "role": "user",
                        "parts": [{"type": "text", "content": "Please cancel order B-200."}],
                    }
                ]
            ),
        },
    },
    {
        "name": "execute_tool orders.get",
        "context": {"trace_id": "0x" + "ab" * 16, "span_id": "0x" + "03" * 8},
        "parent_id": "0x" + "01" * 8,
        "start_time": "2025-01-01T10:00:01.200000Z",
        "end_time": "2025-01-01T10:00:01.300000Z",
        "attributes": {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "orders.get",
            "gen_ai.tool.call.id": "call_1",
            "gen_ai.tool.call.arguments": json.dumps({"order_id": "B-200"}),
            "gen_ai.tool.call.result": json.dumps({"order_id": "B-200", "status": "shipped"}),
        },
    },
]


def test_foreign_genai_spans_are_graded(tmp_path: Path) -> None:
    path = tmp_path / "genai.jsonl"
    path.write_text("\n".join(json.dumps(s) for s in GENAI_SPANS) + "\n")
    [session] = load_sessions(path)
    assert session.prompt == "Please cancel order B-200." and session.agent == "support-bot"
    assert session.calls() == [("orders.get", {"order_id": "B-200"})]
    graded = grade_sessions([session], support_suite())
    [result] = graded.results
    assert result.status == "passed", [c.name for c in result.failed_checks]
    assert result.usage.cost_usd == pytest.approx((1000 * 2.5 + 100 * 10) / 1e6)  # priced
    assert result.trace_id == "ab" * 16  # links back to the production trace


def otlp_value(value: Any) -> dict[str, Any]:
    if isinstance(value, int):
        return {"intValue": str(value)}
    return {"stringValue": value}


def test_openinference_spans_are_graded(tmp_path: Path) -> None:
    def span(
        span_id: str, parent: str | None, name: str, start: int, **attributes: Any
    ) -> dict[str, Any]:
        row = {
            "traceId": "cd" * 16,
            "spanId": span_id * 8,
            "name": name,
            "startTimeUnixNano": str(start * 10**8),
            "endTimeUnixNano": str((start + 1) * 10**8),
            "attributes": [
                {"key": k.replace("__", "."), "value": otlp_value(v)} for k, v in attributes.items()
            ],
        }
        if parent:
            row["parentSpanId"] = parent * 8
        return row

    llm = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "gpt-4o-mini",
        "llm.token_count.prompt": 400,
        "llm.token_count.completion": 40,
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "Cancel my order C-404.",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "orders.get",
    }
    spans = [
        span(
            "0a",
            None,
            "agent",
            0,
            **{
                "openinference.span.kind": "AGENT",
                "output.value": "I could not find an order C-404.",
                "metadata": json.dumps({"task_id": "handle-missing-order"}),
                "session.id": "sess-9",
            },
        ),
        {
            **span("0b", "0a", "llm", 1),
            "attributes": [{"key": k, "value": otlp_value(v)} for k, v in llm.items()],
        },
        span(
            "0c",
            "0a",
            "orders.get",
            2,
            **{
                "openinference.span.kind": "TOOL",
                "tool.name": "orders.get",
                "input.value": json.dumps({"order_id": "C-404"}),
                "output.value": "no order with id 'C-404'",
            },
        ),
    ]
    spans[2]["status"] = {"code": 2, "message": "no order with id 'C-404'"}
    path = tmp_path / "oi.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}))
    [session] = load_sessions(path)
    assert (session.id, session.task_id, session.prompt) == (
        "sess-9",
        "handle-missing-order",
        "Cancel my order C-404.",
    )
    graded = grade_sessions([session], support_suite())
    [result] = graded.results
    assert result.status == "passed", [c.name for c in result.failed_checks]
    [error] = [e for e in session.events if e.kind == "tool_error"]
    assert error.data["tool"] == "orders.get"
    assert result.usage.input_tokens == 400
