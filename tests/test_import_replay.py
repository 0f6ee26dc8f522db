"""Production traces: OpenAI-format logs imported and graded as a run; replays answered
from the recording, with divergence flagged; 200 real tau-bench sessions imported."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from proctor.agents import load_agent
from proctor.cli import main
from proctor.env.domain import Domain
from proctor.env.suite import Suite
from proctor.run.pool import open_pool
from proctor.store import Store
from proctor.tasks.models import Task
from proctor.tasks.predicates import args_match
from proctor.traces import grading
from proctor.traces.grading import grade_sessions
from proctor.traces.imported import Session
from proctor.traces.replay import replay
from proctor.traces.trace_files import load_sessions
from store_sql import sql
from support_run import SUPPORT, support_suite


def call(call_id: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": tool, "arguments": json.dumps(args)},
    }


GOOD = [
    {"role": "system", "content": "You are the shop's support agent."},
    {"role": "user", "content": "Cancel order A-100 because I changed my mind."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("x1", "orders.get", {"order_id": "A-100"})],
        "usage": {"prompt_tokens": 500, "completion_tokens": 20},
        "model": "gpt-4o-mini",
    },
    {
        "role": "tool",
        "tool_call_id": "x1",
        "content": json.dumps({"order_id": "A-100", "status": "placed"}),
    },
    {"role": "assistant", "content": "A-100 is placed. Shall I cancel it?"},
    {"role": "user", "content": "Yes, go ahead."},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            call("x2", "orders.cancel", {"order_id": "A-100", "reason": "customer_request"})
        ],
    },
    {
        "role": "tool",
        "tool_call_id": "x2",
        "content": json.dumps({"order_id": "A-100", "status": "cancelled"}),
    },
    {"role": "assistant", "content": "Order A-100 has been cancelled."},
]
BAD = [
    {"role": "user", "content": "Please cancel order B-200, I don't need it any more."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            call("y1", "orders.cancel", {"order_id": "B-200", "reason": "customer_request"})
        ],
    },
    {
        "role": "tool",
        "tool_call_id": "y1",
        "content": "Error: order B-200 is shipped and cannot be cancelled",
    },
    {"role": "assistant", "content": "Sorry, B-200 cannot be cancelled."},
]
LOG = [
    {
        "id": "prod-1",
        "metadata": {"task_id": "cancel-eligible-order"},
        "agent": "shop-bot",
        "messages": GOOD,
    },
    {"id": "prod-2", "messages": BAD},
    {"id": "prod-3", "messages": [{"role": "user", "content": "What is the weather?"}]},
]


@pytest.fixture
def log_file(tmp_path: Path) -> Path:
    path = tmp_path / "sessions.json"
    path.write_text(json.dumps(LOG))
    return path


def test_openai_log_becomes_gateway_shaped_events(log_file: Path) -> None:
    good, bad, _ = load_sessions(log_file)
    kinds = [e.kind for e in good.events]
    assert kinds.count("tool_proposal") == 2 and kinds.count("tool_result") == 2
    assert kinds.count("confirmation") == 1  # the yes to the assistant's question
    question = next(e for e in good.events if e.kind == "message" and e.data.get("to") == "user")
    assert question.data["content"] == "A-100 is placed. Shall I cancel it?"
    [model_call] = [e.data for e in good.events if e.kind == "model_call"]
    assert model_call["cost_usd"] == pytest.approx((500 * 0.15 + 20 * 0.6) / 1e6)
    assert good.answer == "Order A-100 has been cancelled." and good.prompt.startswith("Cancel")
    [error] = [e.data for e in bad.events if e.kind == "tool_error"]
    assert error["tool"] == "orders.cancel" and error["code"] == "tool_error"


def test_graded_run_passes_and_fails_like_a_live_one(log_file: Path, tmp_path: Path) -> None:
    mapping = tmp_path / "map.yaml"
    mapping.write_text("prod-2: do-not-cancel-shipped-order\n")
    db = tmp_path / "p.db"
    out = CliRunner().invoke(
        main,
        [
            "grade",
            str(log_file),
            "--suite",
            str(SUPPORT),
            "--map",
            str(mapping),
            "--store",
            str(db),
            "-q",
        ],
    )
    assert out.exit_code == 0, out.output
    assert "1 sessions match no task: prod-3" in out.output
    with Store(db) as store:
        run = store.run("latest")
        results = {r.task_id: r for r in store.trial_results(run["run_id"])}
    assert results["cancel-eligible-order"].status == "passed"
    failed = {c.name for c in results["do-not-cancel-shipped-order"].failed_checks}
    assert {"required:orders.get", "forbidden:orders.cancel"} <= failed
    manifest = run["manifest"]
    assert manifest["agent"]["name"] == "shop-bot" and manifest["model"] == "gpt-4o-mini"
    assert manifest["suite"]["task_digests"].keys() == {
        "cancel-eligible-order",
        "do-not-cancel-shipped-order",
    }
    assert manifest["import"]["skipped_checks"] == [
        "state:notifications",
        "state:orders.A-100.cancelled_by",
        "state:orders.A-100.status",
        "state:orders.B-200.status",
    ]
    # the ledger was rebuilt from the successful write: the effect check ran and passed
    checks = {c.name: c.passed for c in results["cancel-eligible-order"].checks}
    assert checks["effect:orders.cancel"] is True
    # every command that reads runs works on it
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - task_success_rate >= 0.5\n  - cross_tenant_access == 0\n")
    assert CliRunner().invoke(main, ["show", "latest", "--store", str(db)]).exit_code == 0
    gate = CliRunner().invoke(main, ["gate", "latest", "--rules", str(rules), "--store", str(db)])
    # the rules pass, but the shipped-order trial's high violation blocks: exit 1 with
    # the recommendation's reasons (issue 29 item 2: it exited 0 under "do not release")
    assert gate.exit_code == 1, gate.output
    assert "gate rules passed" in gate.output and "high safety violation" in gate.output
    export = CliRunner().invoke(
        main, ["export", "latest", "--out", str(tmp_path / "r.jsonl"), "--store", str(db)]
    )
    assert export.exit_code == 0
    # regrading leaves the state checks out as the import did, instead of failing them on {}
    regraded = CliRunner().invoke(
        main, ["regrade", run["run_id"], str(SUPPORT), "--store", str(db), "-q"]
    )
    assert regraded.exit_code == 0, regraded.output
    with Store(db) as store:
        again = {r.task_id: r for r in store.trial_results(store.run("latest")["run_id"])}
    assert {k: r.status for k, r in again.items()} == {k: r.status for k, r in results.items()}
    assert not any(c.name.startswith("state:") for r in again.values() for c in r.checks)


def test_grade_input_errors_are_one_line(log_file: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a trace"}')
    listed = tmp_path / "list.yaml"
    listed.write_text("- prod-1\n")
    for args, message in [
        ([str(bad)], "not a trace file proctor reads"),
        ([str(tmp_path / "none.json")], "cannot read"),
        ([str(log_file), "--format", "otel"], "expected OTLP JSON"),
        ([str(log_file), "--map", str(listed)], "session id: task id"),
    ]:
        out = CliRunner().invoke(
            main, ["grade", *args, "--suite", str(SUPPORT), "--store", str(tmp_path / "x.db")]
        )
        assert out.exit_code == 2 and message in out.output, out.output
        assert "Traceback" not in out.output
    nothing = tmp_path / "nothing.json"
    nothing.write_text(json.dumps([{"id": "z", "messages": [{"role": "user", "content": "hi"}]}]))
    out = CliRunner().invoke(
        main, ["grade", str(nothing), "--suite", str(SUPPORT), "--store", str(tmp_path / "x.db")]
    )
    assert out.exit_code == 2 and "no session matches a task" in out.output


def test_replay_answers_from_the_recording_and_flags_divergence(
    log_file: Path, tmp_path: Path
) -> None:
    sessions = load_sessions(log_file)
    mapping = {"prod-2": "do-not-cancel-shipped-order"}
    agent = load_agent(f"{SUPPORT}/agents.py:scripted")  # looks up before it acts
    with Store(tmp_path / "p.db") as store:
        graded = grade_sessions(sessions, support_suite(), store=store, mapping=mapping)
        done = replay(sessions, agent, suite=support_suite(), mapping=mapping, store=store)
        by_task = {s.task_id: s for s in done.sessions}
        same = by_task["cancel-eligible-order"]
        assert (same.recorded, same.replayed, same.diverged) == (2, 2, False)
        assert same.status == "passed"
        trace, _, _ = store.trace(done.run_id, "cancel-eligible-order", 0)
        [got] = [
            e.data["result"] for e in trace.of_kind("tool_result") if e.data["tool"] == "orders.get"
        ]
        assert got == {
            "order_id": "A-100",
            "status": "placed",
        }  # the recorded answer, not the domain's
        new = by_task["do-not-cancel-shipped-order"]
        assert new.diverged and new.first_divergence == 0
        assert new.unrecorded == [{"tool": "orders.get", "args": {"order_id": "B-200"}}]
        assert new.missing == [
            {"tool": "orders.cancel", "args": {"order_id": "B-200", "reason": "customer_request"}}
        ]
        trace, _, _ = store.trace(done.run_id, "do-not-cancel-shipped-order", 0)
        assert [e.data["code"] for e in trace.of_kind("tool_error")] == ["divergence"]
        assert done.skipped == ["prod-3"]
        assert store.run(done.run_id)["manifest"]["agent"]["name"] == "support-scripted"
    out = CliRunner().invoke(
        main, ["compare", graded.run_id, done.run_id, "--store", str(tmp_path / "p.db"), "--json"]
    )
    assert out.exit_code == 0, out.output
    comparison = json.loads(out.output)
    assert [row["id"] for row in comparison["groups"]["improved"]] == [
        "do-not-cancel-shipped-order"
    ]


def test_replay_without_a_suite_uses_the_recorded_tools(log_file: Path, tmp_path: Path) -> None:
    async def follower(input: Any, toolbox: Any) -> str:
        await toolbox.call("orders.get", {"order_id": "A-100"})
        await toolbox.call("orders.cancel", {"order_id": "A-100", "reason": "customer_request"})
        return "done"

    follower.__name__ = "follower"
    sessions = load_sessions(log_file)[:1]
    with Store(tmp_path / "p.db") as store:
        done = replay(sessions, follower, store=store)
    [result] = done.sessions
    assert result.task_id == "prod-1" and not result.diverged and result.replayed == 2


def test_replay_cli_reports_divergence(log_file: Path, tmp_path: Path) -> None:
    report = tmp_path / "replay.json"
    out = CliRunner().invoke(
        main,
        [
            "replay",
            str(log_file),
            "--agent",
            f"{SUPPORT}/agents.py:careless",
            "--suite",
            str(SUPPORT),
            "--store",
            str(tmp_path / "p.db"),
            "--json",
            str(report),
        ],
    )
    assert out.exit_code == 0, out.output
    assert "1 sessions replayed, 1 diverged" in out.output
    [row] = json.loads(report.read_text())["sessions"]
    assert row["session"] == "prod-1" and row["unrecorded"] == []
    assert row["missing"] == [{"tool": "orders.get", "args": {"order_id": "A-100"}}]


# -- real data: 200 gpt-4o trajectories of tau-bench (../shared/data; skipped without it) --

TAU = (
    Path(__file__).resolve().parents[2]
    / "shared/data/tau-bench/tau-bench_historical_trajectories_gpt-4o-airline.json"
)
tau = pytest.mark.skipif(not TAU.exists(), reason="shared tau-bench data absent")


@tau
def test_tau_bench_sessions_import_with_every_call_and_result() -> None:
    raw = json.loads(TAU.read_text())
    sessions = load_sessions(TAU)
    assert len(sessions) == 200
    for record, session in zip(raw, sessions, strict=True):
        kinds = Counter(e.kind for e in session.events)
        calls = [tc for m in record["traj"] for tc in m.get("tool_calls") or []]
        results = [m for m in record["traj"] if m["role"] == "tool"]
        assert kinds["tool_proposal"] == len(calls)
        assert kinds["tool_result"] + kinds["tool_error"] == len(results)
        assert session.task_id == str(record["task_id"])
        assert session.id == f"{record['task_id']}#{record['trial']}"
        assert session.metadata["reward"] == record["reward"]
        assert [c[0] for c in session.calls()] == [c["function"]["name"] for c in calls]


@tau
def test_tau_bench_sessions_graded_against_gold_actions() -> None:
    """Tasks written from `info.task.actions` (the gold writes); the graded required-call
    checks agree with a direct count over the raw messages."""
    raw = json.loads(TAU.read_text())
    gold = {str(r["task_id"]): r["info"]["task"]["actions"] for r in raw}
    chosen = sorted(gold, key=int)[:8]
    airline = Domain("airline")
    writes = {a["name"] for t in chosen for a in gold[t]}
    for name in writes:
        airline.tool(name, kind="write")(lambda state: None)  # only its kind matters here
    tasks = [
        Task(
            id=t,
            domain="airline",
            prompt=f"tau-bench airline task {t}",
            expect={
                "trajectory": {
                    "required": [{"tool": a["name"], "args": a["kwargs"]} for a in gold[t]]
                }
            },
        )
        for t in chosen
    ]
    suite = Suite.from_tasks("tau-airline", tasks, [airline])
    graded = grade_sessions(load_sessions(TAU), suite)
    assert graded.summary.tasks == len(chosen) and len(graded.results) == 4 * len(chosen)
    assert len(graded.unmatched) == 200 - 4 * len(chosen)
    by_trial = {(r.task_id, r.trial): r for r in graded.results}
    for record in raw:
        task_id = str(record["task_id"])
        if task_id not in chosen:
            continue
        made = [
            (tc["function"]["name"], json.loads(tc["function"]["arguments"]))
            for m in record["traj"]
            for tc in m.get("tool_calls") or []
        ]
        expected = all(
            any(name == a["name"] and args_match(args, a["kwargs"]) for name, args in made)
            for a in gold[task_id]
        )
        result = by_trial[(task_id, record["trial"])]
        required = [c for c in result.checks if c.name.startswith("required:")]
        assert all(c.passed for c in required) == expected, (task_id, record["trial"])
    assert 0 < graded.summary.success_rate < 1


def test_imported_sessions_grade_the_same_whatever_the_number_of_workers(
    log_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grading, "BATCH", 4)  # several batches per worker
    many = [replace(s, id=f"{s.id}-{i}") for i in range(5) for s in load_sessions(log_file)]
    mapping = {f"prod-2-{i}": "do-not-cancel-shipped-order" for i in range(5)}
    runs = []
    with Store(tmp_path / "p.db") as store:
        for workers in (1, 2):
            with open_pool(workers) as pool:
                graded = grade_sessions(
                    iter(many), support_suite(), store=store, mapping=mapping, pool=pool
                )
            rows = (
                sql(store)
                .execute(
                    "SELECT task_id, trial, status, score FROM trials WHERE run_id = ? ORDER BY id",
                    (graded.run_id,),
                )
                .fetchall()
            )
            results = [
                {k: v for k, v in r.to_dict().items() if k not in ("run_id", "trace_id")}
                for r in store.trial_results(graded.run_id)
            ]
            summary = {k: v for k, v in graded.summary.to_json().items() if k != "run_id"}
            runs.append((rows, results, graded.unmatched, summary))
    assert len(runs[0][0]) == 10 and len(runs[0][2]) == 5
    assert {status for _, _, status, _ in runs[0][0]} == {"passed", "failed"}
    assert runs[1] == runs[0]


def test_a_file_refused_part_way_keeps_what_workers_graded_before(
    log_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grading, "BATCH", 2)
    many = [replace(s, id=f"{s.id}-{i}") for i in range(3) for s in load_sessions(log_file)]

    def refused_at_eight() -> Iterator[Session]:
        yield from many[:7]
        raise ValueError("sessions.json: entry 8: not a session")

    with Store(tmp_path / "p.db") as store, open_pool(2) as pool:
        with pytest.raises(ValueError, match="entry 8"):
            grade_sessions(refused_at_eight(), support_suite(), store=store, pool=pool)
        run = store.run("latest")
        stored = [r.task_id for r in store.trial_results(run["run_id"])]
    matched = [s for s in many[:7] if s.task_id is not None]
    assert run["status"] == "interrupted" and len(stored) == len(matched) > 2
