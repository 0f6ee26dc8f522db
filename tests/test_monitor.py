"""`proctor monitor`: figures on a generated production log with known rates, drift
against an offline run, the identifiers that join, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from proctor.cli import main
from proctor.env.suite import Suite
from proctor.env.toolbox import Toolbox
from proctor.run import Runner
from proctor.store import Store
from proctor.tasks.models import Task
from test_browser import driver, errors, open_page  # noqa: F401  (Chromium, as the report tests)
from test_promote import adjudicate
from trial_run import order_desk

N = 60  # sessions, 20 a day over three days
MAPPING = """\
tags:
  cancellation: {tools: [orders.cancel]}
  vip: {metadata: {tier: vip}}
escalation: [handoff.human]
inverses: {orders.cancel: orders.reinstate}
"""
#: The generator's own rules: session i has the property when the rule holds.
RULES = {
    "success": lambda i: i % 3 != 0,
    "escalation": lambda i: i % 4 == 0,
    "undo": lambda i: i % 5 == 0,
    "repeated_calls": lambda i: i % 6 == 0,
    "denied": lambda i: i % 10 == 3,
    "abandonment": lambda i: i % 12 == 7,
}


def _call(msgs: list[dict[str, Any]], tool: str, args: dict[str, Any], result: str, n: int) -> None:
    cid = f"call_{n}"
    msgs.append(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": cid,
                    "type": "function",
                    "function": {"name": tool, "arguments": json.dumps(args)},
                }
            ],
        }
    )
    msgs.append({"role": "tool", "tool_call_id": cid, "content": result})


def session(i: int, hostile: str = "") -> dict[str, Any]:
    order = {"order_id": f"A-{i}"}
    msgs: list[dict[str, Any]] = [{"role": "user", "content": f"Cancel order A-{i}"}]
    _call(msgs, "orders.get", order, '{"status": "placed"}', 1)
    if RULES["repeated_calls"](i):
        _call(msgs, "orders.get", order, '{"status": "placed"}', 2)
    if RULES["denied"](i):
        _call(msgs, "orders.refund", order, "error: permission denied for orders.refund", 3)
    _call(msgs, "orders.cancel", order, '{"status": "cancelled"}', 4)
    if RULES["undo"](i):
        _call(msgs, "orders.reinstate", order, '{"status": "placed"}', 5)
    if RULES["escalation"](i):
        _call(msgs, "handoff.human", {"reason": "unsure"}, '{"ok": true}', 6)
    if not RULES["abandonment"](i):
        msgs.append({"role": "assistant", "content": f"Order A-{i} is cancelled. {hostile}"})
    return {
        "id": f"sess-{i:03d}{hostile}",
        "model": "prod-model-2",
        "messages": msgs,
        "metadata": {
            "timestamp": f"2024-06-0{1 + i // 20}T{i % 20:02d}:00:00Z",
            "resolved": RULES["success"](i),
            "prompt_version": "v7",
            "tier": "vip" if i % 2 == 0 else "basic",
            "feedback": hostile or ("up" if i % 2 else None),
        },
    }


def write_log(folder: Path, sessions: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sessions.jsonl").write_text("\n".join(json.dumps(s) for s in sessions) + "\n")
    return folder


def expected(indexes: list[int], rule: str) -> tuple[int, int]:
    return sum(1 for i in indexes if RULES[rule](i)), len(indexes)


def monitor(tmp_path: Path, log: Path, *extra: str) -> tuple[Any, dict[str, Any]]:
    mapping = tmp_path / "map.yaml"
    mapping.write_text(MAPPING)
    out = tmp_path / "m.json"
    result = CliRunner().invoke(
        main, ["monitor", str(log), "--map", str(mapping), "--json", str(out), *extra]
    )
    return result, json.loads(out.read_text()) if out.exists() else {}


def test_figures_of_a_generated_log_equal_its_known_rates(tmp_path: Path) -> None:
    log = write_log(tmp_path / "prod", [session(i) for i in range(N)])
    result, data = monitor(tmp_path, log, "--store", str(tmp_path / "none.db"))
    assert result.exit_code == 0, result.output
    everyone = list(range(N))
    for rule in RULES:
        events, n = expected(everyone, rule)
        assert data["overall"][rule] == {"events": events, "n": n, "rate": events / n}, rule
    windows = data["windows"]
    assert [w["window"] for w in windows] == [
        "2024-06-01T00:00Z",
        "2024-06-02T00:00Z",
        "2024-06-03T00:00Z",
    ]
    for day, w in enumerate(windows):
        events, n = expected(list(range(20 * day, 20 * day + 20)), "success")
        assert (w["success"]["events"], w["sessions"]) == (events, n)
    vip = [i for i in everyone if i % 2 == 0]
    for rule in ("escalation", "undo", "success"):
        events, n = expected(vip, rule)
        assert (
            data["slices"]["tag:vip"][rule]["events"],
            data["slices"]["tag:vip"]["sessions"],
        ) == (events, n)
    assert data["slices"]["tag:cancellation"]["sessions"] == N
    assert data["overall"]["denied_per_proposal"] == pytest.approx(
        6 / sum(len([m for m in session(i)["messages"] if m.get("tool_calls")]) for i in everyone)
    )


def test_every_session_keeps_the_identifiers_that_join_it(tmp_path: Path) -> None:
    log = write_log(tmp_path / "prod", [session(i) for i in range(12)])
    result, data = monitor(tmp_path, log)
    assert result.exit_code == 0, result.output
    record = next(r for r in data["records"] if r["session_id"] == "sess-003")
    assert record["trace_id"] == "sess-003"  # the log's own id when it has no trace id
    assert record["model"] == "prod-model-2" and record["prompt_version"] == "v7"
    assert record["time"] == "2024-06-01T03:00:00+00:00"
    assert record["outcome"] is False and record["outcome_source"] == "logged"
    assert record["feedback"] == "up" and record["denied"] == 1
    assert record["review_label"] is None  # no review desk label for a log session


# -- a baseline run of the same task type, and drift ----------------------------------


async def good_agent(input: Any, toolbox: Toolbox) -> str:
    await toolbox.call("orders.get", {"order_id": "A-0"})
    await toolbox.call("orders.cancel", {"order_id": "A-0"})
    return "Order A-0 is cancelled."


def baseline_run(db: Path) -> str:
    task = Task.model_validate(
        {
            "id": "cancel",
            "domain": "proddesk",
            "tags": ["cancellation"],
            "prompt": "Cancel order A-0",
            "expect": {"outcome": [{"path": "orders.A-0.status", "equals": "cancelled"}]},
        }
    )
    suite = Suite.from_tasks(
        "prod", [task], [order_desk("proddesk", {"A-0": {"status": "placed"}})]
    )
    with Store(db) as store:
        return Runner(suite, good_agent, trials=40, store=store).run().run_id


def test_drift_is_a_test_against_the_baseline_holm_adjusted(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    run_id = baseline_run(db)
    log = write_log(tmp_path / "prod", [session(i) for i in range(N)])
    result, data = monitor(
        tmp_path, log, "--baseline", run_id, "--store", str(db), "--html", str(tmp_path / "m.html")
    )
    assert result.exit_code == 0, result.output
    rows = {(d["scope"], d["metric"]): d for d in data["drift"]}
    success = rows[("overall", "success_rate")]
    assert success["production"] == 40 / 60 and success["baseline"] == 1.0
    assert success["test"] == "fisher_exact" and success["drifted"]
    assert rows[("tag:cancellation", "escalation_rate")]["drifted"]  # 15/60 vs 0/40
    assert not rows[("overall", "denied_rate")]["drifted"]  # 6/60 vs 0/40: p = 0.08 before Holm
    assert all(d["p_holm"] >= d["p"] for d in data["drift"])
    assert ("tag:vip", "success_rate") not in rows  # no baseline task is vip
    assert "drift: overall success_rate" in result.output
    assert data["program"]["wall_time"]["seconds"] is not None
    assert data["program"]["coverage"] == {
        "sessions": N,
        "typed": N,
        "covered": N,
        "rate": 1.0,
        "by_tag": [
            {"tag": "cancellation", "sessions": N, "in_suite": True},
            {"tag": "vip", "sessions": 30, "in_suite": False},
        ],
        "untested": ["vip"],
        "note": None,
    }


def test_a_log_like_the_baseline_does_not_drift(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    run_id = baseline_run(db)
    calm = [session(i) for i in range(N) if all(not RULES[r](i) for r in RULES if r != "success")]
    calm = [{**s, "metadata": {**s["metadata"], "resolved": True}} for s in calm]
    log = write_log(tmp_path / "prod", calm)
    result, data = monitor(tmp_path, log, "--baseline", run_id, "--store", str(db))
    assert result.exit_code == 0, result.output
    assert data["drift"] and not any(
        d["drifted"] for d in data["drift"] if d["metric"].endswith("_rate")
    )
    assert "no drift" in result.output or "drift: overall latency_s" in result.output


def test_unreadable_files_are_skipped_and_said(tmp_path: Path) -> None:
    log = write_log(tmp_path / "prod", [session(i) for i in range(4)])
    (log / "notes.txt").write_text("not a trace")
    (log / "empty.json").write_text("[]")
    result, data = monitor(tmp_path, log)
    assert result.exit_code == 0, result.output
    reasons = {Path(s["path"]).name: s["reason"] for s in data["skipped"]}
    assert set(reasons) == {"notes.txt", "empty.json"}
    assert reasons["notes.txt"].startswith("line 1: not JSON")
    assert "not a trace file" in reasons["empty.json"] or "no sessions" in reasons["empty.json"]
    assert "skipped" in result.output


@pytest.mark.parametrize("what", ["empty", "unparsable"])
def test_nothing_to_monitor_exits_2_naming_the_files(tmp_path: Path, what: str) -> None:
    folder = tmp_path / "prod"
    folder.mkdir()
    if what == "unparsable":
        (folder / "a.jsonl").write_text("{not json\n")
    result, _ = monitor(tmp_path, folder)
    assert result.exit_code == 2
    assert "no production session to monitor" in result.output
    if what == "unparsable":
        assert "a.jsonl" in result.output
    assert "Traceback" not in result.output


def test_a_mapping_that_maps_nothing_exits_2(tmp_path: Path) -> None:
    log = write_log(tmp_path / "prod", [session(i) for i in range(3)])
    mapping = tmp_path / "nothing.yaml"
    mapping.write_text("tags:\n  refunds: {tools: [orders.refund_all]}\n")
    result = CliRunner().invoke(main, ["monitor", str(log), "--map", str(mapping)])
    assert result.exit_code == 2
    assert "maps nothing" in result.output and "nothing.yaml" in result.output


def test_a_bad_mapping_file_names_file_line_and_field(tmp_path: Path) -> None:
    log = write_log(tmp_path / "prod", [session(0)])
    mapping = tmp_path / "bad.yaml"
    mapping.write_text("tags:\n  x: {tools: [a]}\nescalations: [handoff.human]\n")
    result = CliRunner().invoke(main, ["monitor", str(log), "--map", str(mapping)])
    assert result.exit_code == 2
    assert f"{mapping}:3: escalations: unknown field" in result.output


def test_the_page_shows_hostile_log_text_as_text(tmp_path: Path) -> None:
    payload = "<script>alert(1)</script>"
    log = write_log(tmp_path / "prod", [session(i, payload if i == 1 else "") for i in range(6)])
    result, _ = monitor(tmp_path, log, "--html", str(tmp_path / "m.html"))
    assert result.exit_code == 0, result.output
    page = (tmp_path / "m.html").read_text()
    assert payload not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    head = page.split("</head>")[0]  # the page runs nothing: no script, none allowed
    assert "<script" not in page and "default-src" in head and "script-src" not in head


def test_the_page_in_chromium_runs_nothing_and_shows_the_payload(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    browser = request.getfixturevalue("driver")  # Chromium, set up as the report tests do
    payload = "<img src=x onerror=\"document.title='pwned'\">"
    log = write_log(tmp_path / "prod", [session(i, payload if i == 2 else "") for i in range(N)])
    page = tmp_path / "m.html"
    result, _ = monitor(tmp_path, log, "--html", str(page))
    assert result.exit_code == 0, result.output
    open_page(browser, page)
    assert browser.title.startswith("proctor monitor")
    cells = browser.execute_script(
        "return Array.from(document.querySelectorAll('#sessions td:first-child'))"
        ".map(td => td.textContent)"
    )
    assert f"sess-002{payload}" in cells
    assert browser.execute_script("return document.querySelectorAll('#sessions img').length") == 0
    assert browser.execute_script("return document.querySelectorAll('#windows svg').length") == 1
    assert errors(browser) == []


def test_otel_spans_are_monitored_graded_against_the_suite_and_timed(tmp_path: Path) -> None:
    support = Path(__file__).resolve().parents[1] / "examples" / "support"
    db, spans = tmp_path / "p.db", tmp_path / "spans" / "run.jsonl"
    agent = f"{support / 'agents.py'}:careless"
    for args in (
        ["run", str(support), "--agent", agent, "--store", str(db), "-q"],
        ["export-otel", "latest", "--out", str(spans), "--store", str(db), "--include-content"],
    ):
        done = CliRunner().invoke(main, args)
        assert done.exit_code == 0, done.output
    mapping = tmp_path / "map.yaml"
    mapping.write_text("escalation: [handoff.human]\n")  # tags come from the suite's tasks
    out = tmp_path / "m.json"
    result = CliRunner().invoke(
        main,
        ["monitor", str(spans.parent), "--map", str(mapping), "--suite", str(support),
         "--json", str(out), "--store", str(db)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["sessions"] == 3 and data["skipped"] == []
    assert all(r["outcome_source"] == "graded" and r["time"] for r in data["records"])
    assert data["overall"]["success"] == {"events": 0, "n": 3, "rate": 0.0}  # careless fails all
    assert data["slices"]["tag:write"]["sessions"] == 1  # cancel-eligible-order's tags
    assert data["program"]["coverage"]["rate"] == 1.0
    assert all(r["review_label"] is None for r in data["records"])  # nobody labelled yet
    with Store(db) as store:  # a reviewer adjudicates the trial one session came from
        adjudicate(
            store, store.run("latest")["run_id"], "handle-missing-order", 0, "false_claim", "x"
        )
    again = CliRunner().invoke(
        main,
        ["monitor", str(spans.parent), "--map", str(mapping), "--suite", str(support),
         "--json", str(out), "--store", str(db)],
    )  # fmt: skip
    assert again.exit_code == 0, again.output
    labelled = [r for r in json.loads(out.read_text())["records"] if r["review_label"]]
    assert [r["task_id"] for r in labelled] == ["handle-missing-order"]
    assert labelled[0]["review_label"]["reason"] == "false_claim"
