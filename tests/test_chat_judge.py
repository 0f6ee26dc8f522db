"""ChatJudge against a scripted OpenAI-compatible server on loopback: the answer format,
retries, rate limits, the cache on regrade, what the judge is shown, pairwise orders."""

from __future__ import annotations

import asyncio
import json
import os
import socket
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

pytest.importorskip("openai", reason="the openai client is not installed (pip install '.[openai]')")

from judge_runs import KYC, RUBRIC, calibrate_for_test, judge_checks, judged_run
from openai_server import ScriptedChatServer, completion, judge_reply, without_usage
from proctor.cli import main
from proctor.judge.chat_judge import ChatJudge
from proctor.judge.judgment import JudgeView
from proctor.judge.pairwise import compare_pairwise
from proctor.judge.panel import JudgePanel
from proctor.report.judge_tables import judge_statements
from proctor.store import Store
from proctor.tasks.rubrics import load_rubric


def chat_judge(server: ScriptedChatServer, **options: Any) -> ChatJudge:
    return ChatJudge("gpt-4.1-mini", base_url=server.url, api_key="k", **options)


def user_text(request: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in request["messages"] if m["role"] == "user")


def test_the_justification_comes_before_the_score(tmp_path: Path) -> None:
    score_first = json.dumps({"score": 4, "justification": "Clear.", "confidence": 0.9})
    script = [completion(score_first), judge_reply(2, "Internal codes, no greeting.")]
    with ScriptedChatServer(script) as server, Store(tmp_path / "p.db") as store:
        report = judged_run([chat_judge(server)], store, tasks=("kyc-case-03",))
    [check] = judge_checks(report)
    assert check.evidence["members"][0]["score"] == 2
    assert check.evidence["justification"] == "Internal codes, no greeting."
    assert len(server.requests) == 2
    # the second request shows the model its first answer and what was wrong with it
    retry = server.requests[1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": score_first}
    assert "justification must come before the score" in retry[-1]["content"]
    assert server.requests[0]["response_format"]["type"] == "json_schema"


GARBAGE = [
    completion("Score: 4. Looks fine to me."),
    completion(json.dumps({"justification": "ok", "score": 9, "confidence": 1})),
    completion("[]"),
]


def test_malformed_answers_are_a_judge_error_never_a_pass(tmp_path: Path) -> None:
    """A calibrated judge decides: its error is the harness's, the trial an `error`."""
    with ScriptedChatServer(GARBAGE) as server, Store(tmp_path / "p.db") as store:
        judge = chat_judge(server, max_attempts=3)
        calibrate_for_test(store, judge)
        report = judged_run([judge], store, tasks=("kyc-case-03",))
    [result] = report.results
    assert result.status == "error"
    assert (result.error or "").startswith("judge failed:")
    assert "not a JSON object" in (result.error or "")  # the last answer's problem
    assert "score 9 is not one of [1, 2, 3, 4]" in user_text(server.requests[2])
    assert result.metrics["judge_error"] == 1.0 and result.metrics["judge_calls"] == 3.0
    assert report.summary.judges.errors == 1 and report.summary.errors == 1
    assert len(server.requests) == 3


def test_an_advisory_judge_s_errors_are_counted_never_invalidate_the_run(tmp_path: Path) -> None:
    with ScriptedChatServer(GARBAGE) as server, Store(tmp_path / "p.db") as store:
        report = judged_run([chat_judge(server, max_attempts=3)], store, tasks=("kyc-case-03",))
    [result] = report.results
    [check] = judge_checks(report)
    assert result.status in ("passed", "failed") and result.error is None
    assert check.severity is None and not check.passed
    assert "no valid answer in 3 attempts" in check.evidence["judge_error"]
    assert result.metrics["judge_error"] == 1.0 and result.metrics["judge_calls"] == 3.0
    judges = report.summary.judges
    assert judges.errors == 1 and report.summary.errors == 0
    assert judges.advisory_checks == 1 and judges.calibrated_checks == 0


def test_a_429_storm_with_retry_after_loses_no_judgment(tmp_path: Path) -> None:
    storm: list[Any] = [(429, {"retry-after-ms": "5"})] * 6 + [judge_reply(4)]
    with ScriptedChatServer(storm) as server, Store(tmp_path / "p.db") as store:
        report = judged_run([chat_judge(server, max_retries=1)], store, tasks=("kyc-case-03",))
    [result] = report.results
    [check] = judge_checks(report)
    assert result.status != "error" and check.evidence["score"] == 4
    assert len(server.requests) == 7


def test_an_unreachable_judge_endpoint_is_the_harness_error(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    judge = ChatJudge("m", base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0)
    with Store(tmp_path / "p.db") as store:
        calibrate_for_test(store, judge)
        report = judged_run([judge], store, tasks=("kyc-case-03",))
    [result] = report.results
    assert result.status == "error" and "unreachable" in (result.error or "")


def test_the_judge_sees_expected_values_only_when_the_rubric_shows_them(tmp_path: Path) -> None:
    hidden = load_rubric(RUBRIC)
    shown = hidden.model_copy(update={"shows": ["expected", "tool_calls"]})
    with ScriptedChatServer([judge_reply(), judge_reply()]) as server:
        with Store(tmp_path / "a.db") as store:
            judged_run([chat_judge(server)], store, tasks=("kyc-case-03",), rubric=hidden)
        with Store(tmp_path / "b.db") as store:
            judged_run([chat_judge(server)], store, tasks=("kyc-case-03",), rubric=shown)
    blind, told = user_text(server.requests[0]), user_text(server.requests[1])
    # the expectation (decision request_info) and the screening result are not shown
    # unless the rubric says so; the subject and the task's prompt always are
    for text in (blind, told):
        assert "Missing documents:" in text or "To complete your application" in text
        assert "Review onboarding case KYC-1003" in text or "KYC-1003" in text
    assert "request_info" not in blind and "check_sanctions_list" not in blind
    assert "request_info" in told and "check_sanctions_list" in told


def test_regrade_and_report_make_no_new_judge_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "p.db"
    with ScriptedChatServer([judge_reply(4)] * 20) as server:
        monkeypatch.setenv("PROCTOR_CHAT_API_KEY", "test-key")
        ref = f"chat:gpt-4.1-mini?base_url={server.url}"
        runner = CliRunner()
        common = ["--store", str(db)]
        tasks = str(KYC / "tasks" / "cases.yaml")
        ran = runner.invoke(
            main,
            ["run", tasks, "--agent", f"{KYC}/agents.py:hasty", "-k", "3", "--judge", ref,
             "--tags", "missing_docs", "--quiet", *common],
        )  # fmt: skip
        assert ran.exit_code == 0, ran.output
        calls = len(server.requests)
        assert calls > 0
        regraded = runner.invoke(main, ["regrade", "latest", "--quiet", *common])
        assert regraded.exit_code == 0, regraded.output
        assert "0 new judge calls (hit rate 100%)" in regraded.output
        reported = runner.invoke(
            main,
            [
                "report",
                "latest",
                "--md",
                str(tmp_path / "r.md"),
                "--html",
                str(tmp_path / "r.html"),
                *common,
            ],
        )
        assert reported.exit_code == 0, reported.output
        assert len(server.requests) == calls  # neither regrade nor report called the judge
        spans = tmp_path / "spans.jsonl"
        exported = runner.invoke(
            main, ["export-otel", "latest", "--out", str(spans), "--include-content", *common]
        )
        assert exported.exit_code == 0, exported.output
        replayed = runner.invoke(
            main,
            ["replay", str(spans), "--agent", f"{KYC}/agents.py:hasty", "--suite", tasks,
             "--judge", ref, *common],
        )  # fmt: skip
        assert replayed.exit_code == 0, replayed.output
        assert len(server.requests) == calls  # the replay wrote the same requests: cached
    with Store(db) as store:
        first, second = store.runs()[2], store.runs()[1]
        assert second["manifest"]["regraded_from"] == first["run_id"]
        s1, s2 = first["summary"]["judges"], second["summary"]["judges"]
        assert s1["calls"] == calls and s2["calls"] == 0
        assert s2["cache_hits"] == s1["checks"] == s2["checks"] == 30
        replayed_run = store.runs()[0]["summary"]["judges"]
        assert replayed_run["checks"] == replayed_run["cache_hits"] == 30
        assert replayed_run["calls"] == 0
    for report in ("r.md", "r.html"):
        assert "uncalibrated: no calibration of this rubric" in (tmp_path / report).read_text()
    assert "test-key" not in db.read_bytes().decode("utf-8", "replace")
    assert os.environ["PROCTOR_CHAT_API_KEY"] == "test-key"


def test_pairwise_asks_both_orders_and_a_flip_is_a_tie() -> None:
    rubric = load_rubric(RUBRIC)
    base = JudgeView("Request the passport.", ("Passport missing, upload it.",))
    cand = JudgeView("Request the passport.", ("Dear Ana, please send your passport photo page.",))
    prefer_first = completion(
        json.dumps({"justification": "The first one.", "preference": "1", "confidence": 0.6})
    )
    with ScriptedChatServer([prefer_first, prefer_first]) as server:
        panel = JudgePanel([chat_judge(server)])
        report = asyncio.run(
            compare_pairwise(
                panel, {"t": [rubric]}, {("t", rubric.id): [base]}, {("t", rubric.id): [cand]}
            )
        )
    shown = []
    for request in server.requests:
        text = user_text(request)
        one, two = text.index('"response 1: '), text.index('"response 2: ')
        shown.append((text[one:two], text[two:]))
    # one order showed the baseline first, the other the candidate
    assert {(base.subject[0] in a, cand.subject[0] in b) for a, b in shown} == {
        (True, True),
        (False, False),
    }
    assert report["pairs"] == 1 and report["ties"] == 1 and report["win_rate"] == 0.5
    assert report["position_consistency"] == 0.0 and report["judge_calls"] == 2


def test_a_judge_is_its_model_url_path_and_decoding_not_its_host_and_port() -> None:
    def fp(url: str = "http://10.0.0.5:8000/v1", model: str = "m", **kw: Any) -> str:
        return ChatJudge(model, base_url=url, api_key="k", **kw).fingerprint

    base = fp()
    assert fp("http://10.0.0.5:8000/deployment-b/v1") != base  # another deployment, one host
    assert fp("http://10.0.0.5:8001/v1") != base  # unknown to be the same: --same-as says so
    assert fp(model="m2") != base
    for setting in ({"temperature": 0.7}, {"seed": 3}, {"max_tokens": 50}):
        assert fp(**setting) != base, setting
    assert fp("http://u:pw@10.0.0.5:8000/v1") == base  # credentials are not the judge
    judge = ChatJudge("m", base_url="http://u:pw@10.0.0.5:8000/v1?api_key=s", api_key="k")
    assert judge.identity["endpoint"] == "http://10.0.0.5:8000/v1?api_key=REMOVED"


def test_the_provider_reported_model_is_recorded() -> None:
    with ScriptedChatServer([judge_reply(3)]) as server:
        panel = JudgePanel([chat_judge(server, seed=7)])
        asyncio.run(panel.score(load_rubric(RUBRIC), JudgeView("p", ("text",))))
    assert server.requests[0]["seed"] == 7
    [member] = panel.describe()["members"]
    assert member["reported_models"] == ["gpt-4o-mini-2024-07-18"]
    assert member["identity"]["model"] == "gpt-4.1-mini"


def test_compare_with_a_failing_judge_says_so_in_one_line(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    db, tasks = str(tmp_path / "p.db"), str(KYC / "tasks" / "cases.yaml")
    runner = CliRunner()
    for seed in ("1", "2"):
        ran = runner.invoke(
            main,
            ["run", tasks, "--agent", f"{KYC}/agents.py:hasty", "--task", "kyc-case-03",
             "--store", db, "--quiet", "--seed", seed],
        )  # fmt: skip
        assert ran.exit_code in (0, 1), ran.output
    with Store(Path(db)) as store:
        first, second = (run["run_id"] for run in store.runs()[::-1])
    ref = f"chat:m?base_url=http://127.0.0.1:{port}/v1&max_retries=0"
    out = runner.invoke(main, ["compare", first, second, "--judge", ref, "--store", db])
    assert out.exit_code == 2, out.output
    assert out.output.count("\n") == 1 and "the judge gave no verdict" in out.output
    assert "Traceback" not in out.output


def test_an_unpriced_judge_s_cost_is_not_measured(tmp_path: Path) -> None:
    with ScriptedChatServer([judge_reply(4)]) as server, Store(tmp_path / "p.db") as store:
        judge = ChatJudge("local-model", base_url=server.url, api_key="k")
        report = judged_run([judge], store, tasks=("kyc-case-03",))
    [result] = report.results
    assert "judge_cost_usd" not in result.metrics and result.metrics["judge_calls"] == 1.0
    assert report.summary.judges.cost_usd is None  # not $0


def test_a_judge_whose_server_reports_no_usage_is_not_measured_never_0(tmp_path: Path) -> None:
    """A priced judge model (gpt-4.1-mini) whose server reports no usage: its call is
    counted, its tokens and cost are "not measured" in the trial's metrics, the summary
    and the report's judge line, never 0 tokens and $0 (as the simulated user's are)."""
    reply = without_usage(judge_reply(4))
    with ScriptedChatServer([reply]) as server, Store(tmp_path / "p.db") as store:
        report = judged_run([chat_judge(server)], store, tasks=("kyc-case-03",))
    [result] = report.results
    assert result.metrics["judge_calls"] == 1.0
    assert not {"judge_input_tokens", "judge_output_tokens", "judge_cost_usd"} & set(result.metrics)
    judges = report.summary.judges
    assert judges is not None and judges.calls == 1
    assert (judges.input_tokens, judges.output_tokens, judges.cost_usd) == (None, None, None)
    [line] = [x for x in judge_statements(report.manifest, judges) if x.startswith("Judges made")]
    assert "tokens not measured, cost not measured" in line, line
