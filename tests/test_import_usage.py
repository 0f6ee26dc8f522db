"""Imported traces follow the usage rule live runs do (docs/architecture.md, Verdicts): a
token count or cost the recording left out is "not measured" (None), never 0 tokens or $0;
an unknown model's cost is not measured and its tokens are; a bad figure is flagged and
not measured. A cost budget or gate on a figure nothing measured fails, in every format.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from proctor import AgentInput, Runner, Toolbox
from proctor.cli import main
from proctor.core.results import NOT_MEASURED, TrialResult
from proctor.env.suite import load_suite
from proctor.store import Store
from proctor.traces.grading import grade_sessions
from proctor.traces.trace_files import load_sessions
from test_hostile_traces import TASK  # the same task: one order to cancel

ROOT = Path(__file__).resolve().parents[1]
ARGS = {"order_id": "A-100"}
RESULT = {"status": "placed"}
ANSWER = "Order A-100 is placed."


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    root = tmp_path / "suite"
    (root / "tasks").mkdir(parents=True)
    shutil.copy(ROOT / "examples" / "support" / "domain.py", root / "domain.py")
    (root / "tasks" / "cancel-a100.yaml").write_text(TASK)
    return root


# -- one session per format: a model call, an orders.get call, the answer ---------------


def openai_messages(path: Path, model: str, usage: dict[str, Any]) -> Path:
    call = {"id": "c1", "type": "function", "function": {"name": "orders.get"}}
    call["function"]["arguments"] = json.dumps(ARGS)
    messages = [
        {"role": "user", "content": "Cancel order A-100."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps(RESULT)},
        {"role": "assistant", "content": ANSWER, "model": model, "usage": usage},
    ]
    path.write_text(json.dumps([{"id": "s1", "task_id": "cancel-a100", "messages": messages}]))
    return path


def _span(sid: str, parent: str | None, name: str, attrs: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "context": {"trace_id": "a" * 32, "span_id": sid},
        "parent_id": parent,
        "start_time": 1_000_000_000,
        "end_time": 2_000_000_000,
        "attributes": {"task_id": "cancel-a100", **attrs},
    }


def genai_spans(path: Path, model: str, usage: dict[str, Any]) -> Path:
    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": model}
    chat |= {f"gen_ai.usage.{k}": v for k, v in usage.items()}
    tool = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "orders.get",
        "gen_ai.tool.call.arguments": json.dumps(ARGS),
        "gen_ai.tool.call.result": json.dumps(RESULT),
    }
    rows = [
        _span("r", None, "invoke_agent shop", {}),
        _span("c", "r", f"chat {model}", chat),
        _span("t", "r", "execute_tool orders.get", tool),
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def openinference_spans(path: Path, model: str, usage: dict[str, Any]) -> Path:
    names = {"input_tokens": "prompt", "output_tokens": "completion"}
    llm = {"openinference.span.kind": "LLM", "llm.model_name": model}
    llm |= {f"llm.token_count.{names[k]}": v for k, v in usage.items()}
    tool = {
        "openinference.span.kind": "TOOL",
        "tool.name": "orders.get",
        "input.value": json.dumps(ARGS),
        "output.value": json.dumps(RESULT),
    }
    agent = {"openinference.span.kind": "AGENT", "output.value": ANSWER}
    rows = [_span("r", None, "agent", agent), _span("c", "r", "llm", llm)]
    rows.append(_span("t", "r", "orders.get", tool))
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def inspect_log(path: Path, model: str, usage: dict[str, Any]) -> Path:
    call = {"id": "c1", "function": "orders.get", "arguments": ARGS, "type": "function"}
    sample = {
        "id": "cancel-a100",
        "epoch": 1,
        "input": "Cancel order A-100.",
        "messages": [
            {"role": "user", "content": "Cancel order A-100."},
            {"role": "assistant", "content": "", "tool_calls": [call], "model": model},
            {"role": "tool", "tool_call_id": "c1", "content": json.dumps(RESULT)},
            {"role": "assistant", "content": ANSWER, "model": model},
        ],
        "model_usage": {model: usage},
    }
    header = {"version": 2, "status": "success", "eval": {"task": "t", "model": model}}
    path = path.with_suffix(".json")
    path.write_text(json.dumps({**header, "samples": [sample]}))
    return path


FORMATS = {
    "openai": openai_messages,
    "otel-genai": genai_spans,
    "openinference": openinference_spans,
    "inspect": inspect_log,
}
KNOWN = "gpt-4o-mini"  # in the default price table
UNKNOWN = "acme-llm-9"  # in no price table


def graded(path: Path, suite: Path) -> TrialResult:
    [result] = grade_sessions(load_sessions(path), load_suite(suite)).results
    return result


def model_calls(path: Path) -> list[dict[str, Any]]:
    [session] = load_sessions(path)
    return [e.data for e in session.events if e.kind == "model_call"]


def grade_cli(path: Path, suite: Path, tmp_path: Path) -> tuple[Result, dict[str, Any]]:
    store, out = tmp_path / "p.db", tmp_path / "summary.json"
    args = ["grade", str(path), "--suite", str(suite), "--store", str(store), "--json", str(out)]
    done = CliRunner().invoke(main, args)
    assert done.exit_code == 0, done.output
    return done, json.loads(out.read_text())


def gate(tmp_path: Path, rule: str) -> dict[str, Any]:
    """The row of `rule` in `proctor gate latest --json`, with the command's exit code."""
    rules = tmp_path / "gates.yaml"
    rules.write_text(f"rules:\n  - {rule}\n")
    store = str(tmp_path / "p.db")
    done = CliRunner().invoke(
        main, ["gate", "latest", "--rules", str(rules), "--store", store, "--json"]
    )
    [row] = [r for r in json.loads(done.output)["rules"] if r["rule"] == rule]
    return {"exit": done.exit_code, **row}


# -- no usage recorded: not measured, and a cost budget or gate cannot pass ------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_model_calls_without_usage_are_not_measured(fmt: str, suite: Path, tmp_path: Path) -> None:
    path = FORMATS[fmt](tmp_path / "trace.jsonl", KNOWN, {})
    [call] = model_calls(path)
    assert (call["input_tokens"], call["output_tokens"], call["cost_usd"]) == (None, None, None)
    result = graded(path, suite)
    usage = result.usage
    assert usage.model_calls == 1
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (None, None, None)
    assert usage.cost_usd is None  # not $0: nothing reported it
    failed = {c.name: c for c in result.failed_checks}
    assert failed["max_cost_usd"].evidence["actual"] == NOT_MEASURED
    assert failed["max_tokens"].evidence["actual"] == NOT_MEASURED
    assert not any(c.name.startswith("data_quality") for c in result.checks)  # no defect

    done, summary = grade_cli(path, suite, tmp_path)
    assert summary["cost"]["total_usd"] is None and summary["cost"]["measured_trials"] == 0
    assert summary["tokens"]["measured_trials"] == 0
    assert summary["data_quality"] == {}
    assert NOT_MEASURED in done.output
    row = gate(tmp_path, "total_cost_usd <= 1")
    assert row["exit"] == 1 and row["status"] == "fail", row
    store = ["--store", str(tmp_path / "p.db")]
    shown = CliRunner().invoke(main, ["show", "latest", "--task", "cancel-a100", *store]).output
    assert f"tokens {NOT_MEASURED} · {NOT_MEASURED} ·" in " ".join(shown.split())  # tokens, $
    md = tmp_path / "report.md"
    assert CliRunner().invoke(main, ["report", "latest", "--md", str(md), *store]).exit_code == 0
    assert NOT_MEASURED in md.read_text() and "$0" not in md.read_text()


def test_a_count_reported_as_zero_is_measured(suite: Path, tmp_path: Path) -> None:
    """The case that makes the fix too wide: 0 recorded is a measurement, kept as 0."""
    usage = {"prompt_tokens": 0, "completion_tokens": 0}
    result = graded(openai_messages(tmp_path / "t.json", KNOWN, usage), suite)
    assert (result.usage.total_tokens, result.usage.cost_usd) == (0, 0.0)
    assert not result.failed_checks


# -- an unknown model: tokens measured, cost not ----------------------------------------

COUNTS = {
    "openai": {"prompt_tokens": 120, "completion_tokens": 15},
    "otel-genai": {"input_tokens": 120, "output_tokens": 15},
    "openinference": {"input_tokens": 120, "output_tokens": 15},
    "inspect": {"input_tokens": 120, "output_tokens": 15},
}


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_unknown_models_cost_is_not_measured(fmt: str, suite: Path, tmp_path: Path) -> None:
    path = FORMATS[fmt](tmp_path / "trace.jsonl", UNKNOWN, COUNTS[fmt])
    [call] = model_calls(path)
    assert call["cost_usd"] is None and call["unpriced"] is True  # as a live call is marked
    result = graded(path, suite)
    assert (result.usage.total_tokens, result.usage.cost_usd) == (135, None)
    assert [c.name for c in result.failed_checks] == ["max_cost_usd"]  # max_tokens passes


def test_genai_spans_in_the_older_token_names_are_read(suite: Path, tmp_path: Path) -> None:
    """`gen_ai.usage.prompt_tokens` / `completion_tokens` (the older GenAI conventions' names,
    as OpenLLMetry writes them) are the same counts, not a usage left out."""
    usage = {"prompt_tokens": 120, "completion_tokens": 15}
    result = graded(genai_spans(tmp_path / "trace.jsonl", KNOWN, usage), suite)
    assert result.usage.total_tokens == 135 and result.usage.cost_usd is not None


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_known_model_is_priced(fmt: str, suite: Path, tmp_path: Path) -> None:
    path = FORMATS[fmt](tmp_path / "trace.jsonl", KNOWN, COUNTS[fmt])
    [call] = model_calls(path)
    assert "unpriced" not in call
    result = graded(path, suite)
    assert result.usage.cost_usd == pytest.approx((120 * 0.15 + 15 * 0.6) / 1e6)
    assert result.status == "passed", [c.name for c in result.failed_checks]


# -- a bad figure: flagged, and not measured rather than 0 ------------------------------

BAD = [
    ("tokens", {"input_tokens": -500, "output_tokens": 15}),
    ("tokens", {"input_tokens": 10**15, "output_tokens": 15}),
    ("cost", {"input_tokens": 120, "output_tokens": 15, "cost_usd": -3.0}),
]


@pytest.mark.parametrize(("code", "figures"), BAD)
def test_a_bad_figure_is_flagged_and_not_measured(
    code: str, figures: dict[str, Any], suite: Path, tmp_path: Path
) -> None:
    usage = {k: v for k, v in figures.items() if k != "cost_usd"}
    path = genai_spans(tmp_path / "trace.jsonl", KNOWN, usage)
    if "cost_usd" in figures:
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        rows[1]["attributes"]["proctor.cost_usd"] = figures["cost_usd"]
        path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    [call] = model_calls(path)
    if code == "tokens":
        # the bad count is not measured, and no cost is worked out from a broken counter
        assert (call["input_tokens"], call["output_tokens"], call["cost_usd"]) == (None, 15, None)
    else:
        assert (call["input_tokens"], call["cost_usd"]) == (120, None)
    result = graded(path, suite)
    assert result.usage.cost_usd is None
    failed = {c.name for c in result.failed_checks}
    limit = "max_tokens" if code == "tokens" else "max_cost_usd"
    assert {f"data_quality:{code}", limit} <= failed
    _, summary = grade_cli(path, suite, tmp_path)
    assert summary["data_quality"] == {code: 1}


# -- a proctor export of a live trial whose usage nobody measured reads back the same ----


async def unmeasured_agent(input: AgentInput, toolbox: Toolbox) -> str:
    """A model-driven agent whose local server reports no usage: one call, no figures."""
    toolbox.record_model_call(model="local-llm")
    await toolbox.call("orders.get", ARGS)
    return ANSWER


def test_an_exported_live_trial_without_usage_reads_back_unflagged(
    suite: Path, tmp_path: Path
) -> None:
    pytest.importorskip("opentelemetry.sdk", reason="opentelemetry-sdk is not installed")
    from proctor.interop.otel_export import export_run

    out = tmp_path / "spans.jsonl"
    with Store(tmp_path / "p.db") as store:
        report = Runner(load_suite(suite), unmeasured_agent, trials=1, seed=1, store=store).run()
        [live] = report.results
        export_run(store, report.run_id, out=out, include_content=True)
        [again] = grade_sessions(load_sessions(out), load_suite(suite), store=store).results
    failed = ["max_cost_usd", "max_tokens"]  # not measured: the limits cannot pass
    assert sorted(c.name for c in live.failed_checks) == failed
    assert sorted(c.name for c in again.failed_checks) == failed  # no data-quality flag
    assert again.usage == live.usage
