"""ChatAgent against a scripted OpenAI-compatible server on loopback (no network)."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("openai", reason="the openai client is not installed (pip install '.[openai]')")

from openai_server import ScriptedChatServer, completion, tool_call, without_usage
from proctor.agents import AgentNotFound, load_agent
from proctor.agents.chat import ChatAgent
from proctor.agents.pricing import PriceTable
from proctor.cli import main
from proctor.core.results import NOT_MEASURED
from proctor.run import TrialSpec, run_trial
from support_run import calls, failed, run_support, support_suite

CANCEL_A100 = [
    completion(None, [tool_call("k1", "orders_get", {"order_id": "A-100"})]),
    completion(None, [tool_call("k2", "ask_user", {"question": "Shall I cancel order A-100?"})]),
    completion(
        None,
        [tool_call("k3", "orders_cancel", {"order_id": "A-100", "reason": "customer_request"})],
    ),
    completion("Order A-100 has been cancelled."),
]


def agent_for(server: ScriptedChatServer, **kwargs: object) -> ChatAgent:
    return ChatAgent("gpt-4o-mini", base_url=server.url, api_key="test-key", **kwargs)  # type: ignore[arg-type]


def test_tool_calling_trajectory_passes_and_is_priced() -> None:
    with ScriptedChatServer(list(CANCEL_A100)) as server:
        record = run_support("cancel-eligible-order", agent_for(server, temperature=0.0))
    assert record.result.status == "passed", failed(record)
    assert calls(record) == [
        ("orders.get", {"order_id": "A-100"}),
        ("orders.cancel", {"order_id": "A-100", "reason": "customer_request"}),
    ]
    # the tools were offered under API-safe names, with the domain's schema
    offered = {t["function"]["name"]: t["function"] for t in server.requests[0]["tools"]}
    assert set(offered) == {"orders_get", "orders_cancel", "ask_user"}
    assert offered["orders_get"]["parameters"]["required"] == ["order_id"]
    assert server.requests[0]["temperature"] == 0.0 and server.requests[0]["seed"] == 7
    # the tool result went back to the model, and the user's yes is a confirmation
    [looked_up] = server.tool_messages(1)
    assert json.loads(looked_up["content"])["status"] == "placed"
    assert [m["content"] for m in server.tool_messages(2)][-1] == "Yes, go ahead."
    assert len(list(record.trace.of_kind("confirmation"))) == 1
    model_calls = [e.data for e in record.trace.of_kind("model_call")]
    assert len(model_calls) == 4 and model_calls[0]["model"] == "gpt-4o-mini-2024-07-18"
    per_call = (100 * 0.15 + 20 * 0.60) / 1_000_000
    assert record.result.usage.cost_usd == pytest.approx(4 * per_call)
    assert record.result.usage.input_tokens == 400 and record.result.usage.model_calls == 4
    assert record.answer == "Order A-100 has been cancelled."


def test_a_server_that_reports_no_usage_is_not_measured_never_0_tokens_or_0_dollars() -> None:
    """A priced model whose server reports no usage: calls counted, tokens and cost "not
    measured" in the trace and the trial's usage, so the task's cost budget fails as not
    measured instead of passing at $0; a server that reports one count has that one
    measured, and no cost (it needs both). The one call's tokens are a lower bound of
    the four calls', so the token budget they seem to keep fails too."""
    replies = [without_usage(c) for c in CANCEL_A100]
    replies[0] = without_usage(CANCEL_A100[0], "prompt_tokens")
    with ScriptedChatServer(replies) as server:
        record = run_support("cancel-eligible-order", agent_for(server))
    assert failed(record) == ["max_cost_usd", "max_tokens"]
    cost, tokens = record.result.failed_checks
    assert cost.evidence["actual"] == NOT_MEASURED
    assert tokens.evidence == {"limit": 3000, "actual": 100, "unmeasured_calls": 3}
    model_calls = [e.data for e in record.trace.of_kind("model_call")]
    assert [(c.get("input_tokens"), c.get("output_tokens")) for c in model_calls] == [
        (100, None),
        *[(None, None)] * 3,
    ]
    assert all(c.get("cost_usd") is None and not c.get("unpriced") for c in model_calls)
    usage = record.result.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cost_usd) == (100, None, None)
    assert usage.model_calls == 4


def test_a_server_that_sends_zeros_or_a_broken_count_is_not_measured() -> None:
    """Zeros for both counts are no report (a completion always reads its prompt), and a
    count past any real prompt is a broken counter: neither makes the budget pass at $0."""
    replies = [dict(c) for c in CANCEL_A100]
    replies[0]["usage"] = {"prompt_tokens": 0, "completion_tokens": 0}
    replies[1]["usage"] = {"prompt_tokens": 10**12, "completion_tokens": 5}
    replies[2:] = [without_usage(c) for c in replies[2:]]
    with ScriptedChatServer(replies) as server:
        record = run_support("cancel-eligible-order", agent_for(server))
    # the one count kept (5 output tokens) is a lower bound of the four calls'
    assert failed(record) == ["max_cost_usd", "max_tokens"]
    model_calls = [e.data for e in record.trace.of_kind("model_call")]
    assert [(c.get("input_tokens"), c.get("output_tokens")) for c in model_calls] == [
        (None, None),
        (None, 5),
        *[(None, None)] * 2,
    ]
    assert all(c.get("cost_usd") is None for c in model_calls)


def test_forbidden_write_fails_the_trial() -> None:
    script = [
        completion(None, [tool_call("k1", "orders_get", {"order_id": "B-200"})]),
        completion(
            None,
            [tool_call("k2", "orders_cancel", {"order_id": "B-200", "reason": "customer_request"})],
        ),
        completion("I tried to cancel B-200."),
    ]
    with ScriptedChatServer(script) as server:
        record = run_support("do-not-cancel-shipped-order", agent_for(server))
    assert record.result.status == "failed"
    assert "forbidden:orders.cancel" in failed(record)


def test_malformed_tool_arguments_go_back_to_the_model_and_are_recorded() -> None:
    script = [
        completion(None, [tool_call("k1", "orders_get", '{"order_id": "C-404"')]),
        completion(None, [tool_call("k2", "orders_get", {"order_id": "C-404"})]),
        completion("I could not find an order C-404."),
    ]
    with ScriptedChatServer(script) as server:
        record = run_support("handle-missing-order", agent_for(server))
    [bad] = server.tool_messages(1)
    assert "invalid_arguments" in bad["content"] and "not valid JSON" in bad["content"]
    errors = [e.data["code"] for e in record.trace.of_kind("tool_error")]
    assert errors == ["invalid_arguments", "not_found"]
    assert calls(record)[0] == ("orders.get", '{"order_id": "C-404"')
    assert record.result.status == "passed", failed(record)


def test_a_rate_limit_storm_is_waited_out_not_counted() -> None:
    # more 429s than max_retries: the scheduler waits each Retry-After and tries again
    script: list = [(429, {"retry-after-ms": "1"})] * 4 + CANCEL_A100
    with ScriptedChatServer(script) as server:
        record = run_support("cancel-eligible-order", agent_for(server, max_retries=1))
    assert record.result.status == "passed"
    assert len(server.requests) == 8  # the four 429s and four completions
    assert record.result.usage.model_calls == 4


def test_a_rate_limit_longer_than_max_wait_is_infrastructure() -> None:
    with ScriptedChatServer([(429, {"retry-after": "30"})]) as server:
        record = run_support("cancel-eligible-order", agent_for(server, max_wait_s=5.0))
    assert record.result.status == "error"
    assert "HTTP 429" in (record.result.error or "")
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", [503, 401])
def test_provider_failure_after_retries_is_infrastructure(status: int) -> None:
    with ScriptedChatServer([(status, {})] * 3) as server:
        record = run_support("cancel-eligible-order", agent_for(server, max_retries=1))
    assert record.result.status == "error"
    assert f"HTTP {status}" in (record.result.error or "")
    assert len(server.requests) == (2 if status != 401 else 1)


def test_bad_request_is_the_agents_failure() -> None:
    with ScriptedChatServer([(400, {})]) as server:
        record = run_support("cancel-eligible-order", agent_for(server, max_retries=0))
    assert record.result.status == "failed"
    assert "agent_crashed" in failed(record)


def test_unreachable_endpoint_is_infrastructure() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    agent = ChatAgent("m", base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0)
    record = run_support("handle-missing-order", agent)
    assert record.result.status == "error"
    assert "unreachable" in (record.result.error or "")


def test_max_steps_stops_a_looping_model() -> None:
    looping = [
        completion(None, [tool_call(f"k{i}", "orders_get", {"order_id": "C-404"})]) for i in (1, 2)
    ]
    with ScriptedChatServer(looping) as server:
        record = run_support("handle-missing-order", agent_for(server, max_steps=2))
    assert len(server.requests) == 2
    notes = [e.data.get("text", "") for e in record.trace.of_kind("note")]
    assert any("max_steps=2" in n for n in notes)
    assert record.answer == "" and record.result.status in ("partial", "failed")


def test_a_trial_that_hits_max_steps_without_an_answer_never_passes() -> None:
    """Every step of the cancellation done, no answer: the world and the trajectory are
    right, and an empty answer mentions no refund; without the limit's check it passed."""
    with ScriptedChatServer(CANCEL_A100[:3]) as server:
        record = run_support("cancel-eligible-order", agent_for(server, max_steps=3))
    # every required part done, so `partial` (a failure, never a pass), not `passed`
    assert record.answer == "" and record.result.status == "partial"
    assert failed(record) == ["max_steps_reached"]
    [check] = [c for c in record.result.checks if c.name == "max_steps_reached"]
    assert check.kind == "answer" and check.blocks
    with ScriptedChatServer(CANCEL_A100) as server:
        answered = run_support("cancel-eligible-order", agent_for(server, max_steps=4))
    assert answered.result.status == "passed"
    assert all(c.name != "max_steps_reached" for c in answered.result.checks)


def test_max_tokens_and_sampling_options_reach_the_provider() -> None:
    agent = load_agent(
        "chat:m?base_url=http://127.0.0.1:9/v1&max_tokens=64&top_p=0.5&extra_body=%7B%22top_k%22%3A40%7D"
    )
    assert isinstance(agent, ChatAgent) and agent.sampling == {"max_tokens": 64, "top_p": 0.5}
    with ScriptedChatServer([completion("No order C-404.")]) as server:
        run_support(
            "handle-missing-order",
            agent_for(server, max_tokens=64, top_p=0.5, extra_body={"top_k": 40}),
        )
    request = server.requests[0]
    assert (request["max_tokens"], request["top_p"], request["top_k"]) == (64, 0.5, 40)
    with pytest.raises(ValueError, match="unknown option"):
        ChatAgent("m", base_url="http://127.0.0.1:9/v1", top_kk=3)  # type: ignore[arg-type]


def test_task_metadata_sets_the_system_prompt() -> None:
    base = next(t for t in support_suite().tasks if t.id == "handle-missing-order")
    settings = {"agent": {"system_prompt": "Be brief.", "temperature": 0.5}}
    task = base.task.model_copy(update={"metadata": settings})
    with ScriptedChatServer([completion("I could not find an order C-404.")]) as server:
        spec = TrialSpec("r", task, base.domain, 0, 1)
        asyncio.run(run_trial(spec, agent_for(server, system_prompt="default"), 10))
    first = server.requests[0]
    assert first["messages"][0] == {"role": "system", "content": "Be brief."}
    assert first["temperature"] == 0.5


def test_price_table_prefixes_overrides_and_unknown_models(tmp_path: Path) -> None:
    table = PriceTable()
    assert table.cost("gpt-4o-2024-08-06", 1_000_000, 0) == pytest.approx(2.5)
    assert table.cost("openai/gpt-4o-mini", 0, 1_000_000) == pytest.approx(0.6)
    assert table.cost("my-local-llama", 10, 10) is None
    prices = tmp_path / "prices.yaml"
    prices.write_text("my-local-llama: {input: 1, output: 2}\n")
    assert PriceTable.load(prices).cost("my-local-llama", 1_000_000, 1_000_000) == 3.0
    prices.write_text("my-local-llama: 3\n")
    with pytest.raises(ValueError, match="expected"):
        PriceTable.load(prices)


def test_agent_reference_and_configuration_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROCTOR_CHAT_BASE_URL", "http://127.0.0.1:9/v1")
    agent = load_agent("chat:llama3.1:8b?temperature=0.2&max_steps=5&seed=3")
    assert isinstance(agent, ChatAgent)
    assert (agent.model, agent.temperature, agent.max_steps, agent.seed) == (
        "llama3.1:8b",
        0.2,
        5,
        3,
    )
    assert agent.settings["endpoint"] == "http://127.0.0.1:9/v1"
    assert "key" not in json.dumps(agent.settings)
    with pytest.raises(AgentNotFound, match="unknown option 'temp'"):
        load_agent("chat:m?temp=1")
    with pytest.raises(AgentNotFound, match="max_steps='x'"):
        load_agent("chat:m?max_steps=x")
    monkeypatch.delenv("PROCTOR_CHAT_BASE_URL")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("PROCTOR_CHAT_API_KEY", raising=False)
    with pytest.raises(AgentNotFound, match="needs OPENAI_API_KEY"):
        load_agent("chat:gpt-4o")


def test_cli_runs_a_chat_model_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = [
        completion(None, [tool_call("k1", "orders_get", {"order_id": "C-404"})]),
        completion("I could not find an order C-404."),
    ]
    with ScriptedChatServer(script) as server:
        monkeypatch.setenv("PROCTOR_CHAT_BASE_URL", server.url)
        monkeypatch.setenv("PROCTOR_CHAT_API_KEY", "secret-test-key")
        db = tmp_path / "p.db"
        out = CliRunner().invoke(
            main,
            [
                "run",
                str(Path(__file__).resolve().parents[1] / "examples" / "support"),
                "--task",
                "handle-missing-order",
                "--agent",
                "chat:gpt-4o-mini?max_steps=4",
                "--store",
                str(db),
                "--quiet",
            ],
        )
    assert out.exit_code == 0, out.output
    from proctor.store import Store

    with Store(db) as store:
        run = store.run("latest")
    assert run["manifest"]["agent"]["name"] == "chat:gpt-4o-mini"
    assert run["manifest"]["model"] == "gpt-4o-mini"
    assert run["summary"]["success_rate"] == 1.0
    assert b"secret-test-key" not in db.read_bytes()
    bad = CliRunner().invoke(main, ["run", "examples/support", "--agent", "chat:?x=1"])
    assert bad.exit_code == 2 and "name a model" in bad.output


@pytest.mark.parametrize("redact", [None, "empty"])
def test_credentials_never_reach_the_store_exports_or_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, redact: str | None
) -> None:
    """A `user:password@` and a key in the agent's and the judge's URLs: nowhere in the
    store, the export, `show --json` or the reports, whatever PROCTOR_REDACT says."""
    from judge_runs import KYC
    from openai_server import judge_reply

    if redact is not None:
        (tmp_path / "redact.yaml").write_text("{}\n")
        monkeypatch.setenv("PROCTOR_REDACT", str(tmp_path / "redact.yaml"))
    monkeypatch.delenv("PROCTOR_CHAT_API_KEY", raising=False)
    script = [
        completion(None, [tool_call("k1", "orders_get", {"order_id": "C-404"})]),
        completion("I could not find an order C-404."),
    ]
    with ScriptedChatServer(script) as agent_server, ScriptedChatServer([judge_reply()]) as judge:
        secret_url = agent_server.url.replace("http://", "http://agent-user:pw-AGENT-SECRET@")
        judge_url = judge.url.replace("http://", "http://judge-user:pw-JUDGE-SECRET@")
        db = tmp_path / "p.db"
        out = CliRunner().invoke(
            main,
            ["run", str(KYC.parent / "support"), "--task", "handle-missing-order", "--agent",
             f"chat:gpt-4o-mini?base_url={secret_url}&max_steps=4",
             "--store", str(db), "--quiet"],
        )  # fmt: skip
        assert out.exit_code == 0, out.output
        judged = CliRunner().invoke(
            main,
            ["run", str(KYC / "tasks" / "cases.yaml"), "--task", "kyc-case-03", "--agent",
             f"{KYC}/agents.py:hasty", "--judge", f"chat:m?base_url={judge_url}",
             "--store", str(db), "--quiet"],
        )  # fmt: skip
        assert judged.exit_code == 0, judged.output
    # the requests carried the credentials: they were used, only never stored
    assert agent_server.requests and judge.requests
    from proctor.store import Store

    runner, written = CliRunner(), []
    with Store(db) as store:
        run_ids = [run["run_id"] for run in store.runs()]
    assert len(run_ids) == 2
    for run_ref in run_ids:
        shown = runner.invoke(main, ["show", run_ref, "--json", "--store", str(db)])
        export = tmp_path / f"{run_ref}.jsonl"
        runner.invoke(main, ["export", run_ref, "--out", str(export), "--store", str(db)])
        md, html = tmp_path / f"{run_ref}.md", tmp_path / f"{run_ref}.html"
        reported = runner.invoke(
            main, ["report", run_ref, "--md", str(md), "--html", str(html), "--store", str(db)]
        )
        assert reported.exit_code == 0, reported.output
        written += [shown.output, export.read_text(), md.read_text(), html.read_text()]
    written.append(db.read_bytes().decode("utf-8", "replace"))
    for text in written:
        for secret in ("pw-AGENT-SECRET", "pw-JUDGE-SECRET", "agent-user", "judge-user"):
            assert secret not in text
    assert any("127.0.0.1" in text for text in written)  # the endpoint itself is recorded
