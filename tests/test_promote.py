"""`proctor promote`: a failed trial becomes a minimal task that fails the original trace
and passes a trace that fixes the failure, for live trials and imported sessions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from proctor.agents import load_agent
from proctor.cli import main
from proctor.core.results import TrialResult
from proctor.env.domain import Domain, ToolError
from proctor.env.suite import Suite, load_suite
from proctor.env.toolbox import Toolbox
from proctor.grade.context import GradeContext
from proctor.loop.promote import PromoteError, ReviewNote, promote
from proctor.review.auth import add_reviewer
from proctor.run import Runner
from proctor.run.trial import judge, usage_of
from proctor.store import Store
from proctor.store.label_tables import LabelRow, add_adjudication
from proctor.tasks.models import Task
from store_sql import sql
from trial_run import run_member

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SUPPORT = EXAMPLES / "support"


def invoke(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


def promote_cancel(db: Path, out: Path, *extra: str) -> Any:
    """`proctor promote latest` of the support example's cancel-eligible-order#0."""
    return invoke(
        "promote", "latest", "--task", "cancel-eligible-order", "--out", str(out),
        "--store", str(db), "--suite", str(SUPPORT), *extra,
    )  # fmt: skip


def regrade_original(
    store: Store, run_id: str, task_id: str, trial: int, promoted: Any
) -> TrialResult:
    """The stored trace of the original trial, graded against the promoted task (what
    `regrade` does to a stored trial)."""
    trace, _, outcome = store.trace(run_id, task_id, trial)
    assert outcome is not None
    result = TrialResult(run_id, promoted.task.id, trial, 0, "error")
    ctx = GradeContext(promoted.task, trace, outcome, usage_of(trace.events), 1.0, promoted.domain)
    judge(result, ctx, [], None, None)
    return result


async def support_fixed(input: Any, toolbox: Toolbox) -> str:
    """What the support agent should have done: look up, confirm, cancel once."""
    await toolbox.call("orders.get", {"order_id": "A-100"})
    await toolbox.ask_user("Order A-100 is placed. Shall I cancel it?")
    await toolbox.call("orders.cancel", {"order_id": "A-100", "reason": "customer_request"})
    return "Order A-100 has been cancelled."


async def support_careless(input: Any, toolbox: Toolbox) -> str:
    """The careless agent's cancel: no lookup first."""
    await toolbox.ask_user("Shall I cancel order A-100?")
    await toolbox.call("orders.cancel", {"order_id": "A-100", "reason": "customer_request"})
    return "Order A-100 has been cancelled."


def test_a_live_failure_becomes_a_task_that_fails_the_trace_and_passes_the_fix(
    tmp_path: Path,
) -> None:
    db, out = tmp_path / "p.db", tmp_path / "regression"
    careless = f"{SUPPORT / 'agents.py'}:careless"
    ran = invoke("run", str(SUPPORT), "--agent", careless, "--store", str(db), "-q")
    assert ran.exit_code == 0, ran.output
    done = promote_cancel(db, out)
    assert done.exit_code == 0, done.output
    [written] = out.glob("*.yaml")
    assert invoke("validate", str(out)).exit_code == 0
    data = yaml.safe_load(written.read_text())
    assert data["suites"] == ["regression"] and "promoted" in data["tags"]
    # the failed expectations, and only those
    assert data["expect"]["trajectory"] == {
        "required": [{"tool": "orders.get", "args": {"order_id": "A-100"}}],
        "before": [["orders.get", "orders.cancel"]],
    }
    assert set(data["expect"]) == {"trajectory"}
    # the slice the trial touched, not the world: B-200 and D-300 are not in it
    assert list(data["initial_state"]["orders"]) == ["A-100"]
    origin = data["metadata"]["promoted_from"]
    assert origin["task_id"] == "cancel-eligible-order" and origin["source"] == "live"
    assert origin["failed_checks"] == ["order:orders.get<orders.cancel", "required:orders.get"]

    store = Store(db)
    promoted = load_suite(out).tasks[0]
    run_id = store.run("latest")["run_id"]
    again = regrade_original(store, run_id, "cancel-eligible-order", 0, promoted)
    assert again.status == "failed"
    assert {c.name for c in again.failed_checks} == set(origin["failed_checks"])
    assert run_member(promoted, support_fixed).result.status == "passed"
    assert run_member(promoted, support_careless).result.status == "failed"


def test_faults_the_trial_met_are_pinned_to_the_call_they_hit(tmp_path: Path) -> None:
    suite = load_suite(EXAMPLES / "incident").select(ids=["close-lost-response"])
    store = Store(tmp_path / "p.db")
    naive = load_agent(f"{EXAMPLES / 'incident' / 'agents.py'}:naive")
    run = Runner(suite, naive, store=store).run()
    done = promote(store, run.run_id, "close-lost-response", 0, suite, tmp_path / "out")
    assert [f.model_dump(exclude_none=True) for f in done.task.faults] == [
        {"tool": "close_incident", "error": "lost_response", "call": 1}
    ]
    assert "effect:close_incident" in done.failed_checks
    promoted = load_suite(done.path).tasks[0]
    careful = load_agent(f"{EXAMPLES / 'incident' / 'agents.py'}:careful")
    assert run_member(promoted, careful).result.status == "passed"
    assert run_member(promoted, naive).result.status == "failed"


def openai_session(final_state: dict[str, Any] | None) -> dict[str, Any]:
    """A production chat log: the model cancels A-100 without looking it up."""
    call = {
        "id": "call_1",
        "type": "function",
        "function": {
            "name": "orders.cancel",
            "arguments": json.dumps({"order_id": "A-100", "reason": "asked"}),
        },
    }
    record: dict[str, Any] = {
        "id": "prod-7",
        "task_id": "cancel-eligible-order",
        "model": "gpt-4o-mini",
        "messages": [
            {
                "role": "user",
                "content": "Cancel order A-100 please, reach me at pat.buyer@example.com",
            },
            {"role": "assistant", "content": "Shall I cancel order A-100?"},
            {"role": "user", "content": "yes"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {
                "role": "tool",
                "tool_call_id": "call_1",
                "content": json.dumps({"order_id": "A-100", "status": "cancelled"}),
            },
            {"role": "assistant", "content": "Order A-100 is cancelled."},
        ],
    }
    if final_state is not None:
        record["final_state"] = final_state
    return record


def test_an_imported_openai_session_is_promoted_redacted_and_replays(tmp_path: Path) -> None:
    db, out, log = tmp_path / "p.db", tmp_path / "regression", tmp_path / "prod.jsonl"
    state = {"orders": {"A-100": {"status": "cancelled", "owner": "user-42", "tenant": "acme"}}}
    log.write_text(json.dumps(openai_session(state)) + "\n")
    graded = invoke("grade", str(log), "--suite", str(SUPPORT), "--store", str(db), "-q")
    assert graded.exit_code == 0, graded.output
    done = promote_cancel(db, out, "--reason", "wrong_tool", "--note", "cancelled blind")
    assert done.exit_code == 0, done.output
    [written] = out.glob("*.yaml")
    text = written.read_text()
    assert "pat.buyer@example.com" not in text  # a personal value the task does not need
    data = yaml.safe_load(text)
    assert "[REDACTED:email]" in data["prompt"]
    assert data["suites"] == ["regression", "replay"] and "production" in data["tags"]
    assert data["user"] == {"replies": [{"when": "confirm", "say": "yes"}]}
    assert data["metadata"]["promoted_from"]["source"] == "production"
    assert "wrong_tool: cancelled blind" in data["description"]
    assert invoke("validate", str(out)).exit_code == 0
    store = Store(db)
    promoted = load_suite(out).tasks[0]
    again = regrade_original(
        store, store.run("latest")["run_id"], "cancel-eligible-order", 0, promoted
    )
    assert again.status == "failed" and "required:orders.get" in {
        c.name for c in again.failed_checks
    }
    assert run_member(promoted, support_fixed).result.status == "passed"


def test_bad_input_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    db, out = tmp_path / "p.db", tmp_path / "out"
    scripted = f"{SUPPORT / 'agents.py'}:scripted"
    assert invoke("run", str(SUPPORT), "--agent", scripted, "--store", str(db), "-q").exit_code == 0
    common = ["--out", str(out), "--store", str(db), "--suite", str(SUPPORT)]
    passing = invoke("promote", "latest", "--task", "handle-missing-order", *common)
    assert passing.exit_code == 2 and "passed: nothing to promote" in passing.output
    unknown = invoke("promote", "latest", "--task", "handle-missing-order", "--trial", "4", *common)
    assert unknown.exit_code == 2 and "no trial handle-missing-order#4" in unknown.output
    log = tmp_path / "prod.jsonl"
    log.write_text(json.dumps(openai_session(None)) + "\n")
    assert (
        invoke("grade", str(log), "--suite", str(SUPPORT), "--store", str(db), "-q").exit_code == 0
    )
    stateless = invoke("promote", "latest", "--task", "cancel-eligible-order", *common)
    assert stateless.exit_code == 2 and "no recorded state" in stateless.output
    assert "Traceback" not in stateless.output
    assert not out.exists()


def customer_desk() -> Domain:
    desk = Domain(
        "custdesk",
        base_state={
            "customers": {
                "ann@example.org": {"name": "Ann", "backup": "ann.private@example.net"},
                "bob@example.org": {"name": "Bob", "backup": "bob.private@example.net"},
            }
        },
    )

    @desk.tool("customers.get")
    def get(state: dict[str, Any], email: str) -> dict[str, Any]:
        """A customer by e-mail."""
        if email not in state["customers"]:
            raise ToolError("no such customer", code="not_found")
        return dict(state["customers"][email])

    @desk.tool("customers.delete", kind="write", entity="email")
    def delete(state: dict[str, Any], email: str) -> dict[str, Any]:
        """Delete a customer."""
        del state["customers"][email]
        return {"deleted": email}

    return desk


async def deleter(input: Any, toolbox: Toolbox) -> str:
    await toolbox.call("customers.get", {"email": "ann@example.org"})
    await toolbox.call("customers.delete", {"email": "ann@example.org"})
    return "Done."


def test_values_the_task_needs_are_kept_and_said_the_rest_redacted(tmp_path: Path) -> None:
    task = Task.model_validate(
        {
            "id": "lookup-ann",
            "domain": "custdesk",
            "prompt": "What is the name of ann@example.org?",
            "expect": {"trajectory": {"forbidden": ["customers.delete"]}},
        }
    )
    suite = Suite.from_tasks("desk", [task], [customer_desk()])
    store = Store(tmp_path / "p.db")
    run = Runner(suite, deleter, store=store).run()
    done = promote(
        store,
        run.run_id,
        "lookup-ann",
        0,
        suite,
        tmp_path / "out",
        review=ReviewNote("unsafe", "deleted the customer", "rita"),
    )
    text = done.path.read_text()
    assert "ann@example.org" in text  # addresses the world: the calls name it
    assert "ann.private@example.net" not in text and "bob" not in text  # not needed / not read
    assert done.kept_values == [
        {
            "value": "ann@example.org",
            "where": "prompt",
            "why": "an argument of the trial's customers.get call",
        }
    ]
    assert "Reviewer rita adjudicated it: unsafe: deleted the customer" in done.task.description
    assert done.shim is None  # a domain built in Python: its caller knows where it lives


def test_a_failure_no_expectation_states_is_refused(tmp_path: Path) -> None:
    task = Task.model_validate({"id": "crash", "domain": "custdesk", "prompt": "Hi"})
    suite = Suite.from_tasks("desk", [task], [customer_desk()])

    async def crashes(input: Any, toolbox: Toolbox) -> str:
        raise RuntimeError("boom")

    store = Store(tmp_path / "p.db")
    run = Runner(suite, crashes, store=store).run()
    with pytest.raises(PromoteError, match="no expectation of the task states"):
        promote(store, run.run_id, "crash", 0, suite, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def adjudicate(store: Store, run_id: str, task_id: str, trial: int, reason: str, note: str) -> None:
    """What an adjudicator's label on the review desk stores."""
    add_reviewer(store, "rita", "", adjudicator=True)
    [(reviewer_id,)] = sql(store).execute("SELECT id FROM reviewers WHERE name = 'rita'").fetchall()
    label = LabelRow(
        reviewer_id, "rita", run_id, task_id, trial, "fail", False, reason, note, False, "1", 0.0
    )
    add_adjudication(store, reviewer_id, label)


def test_the_review_desk_s_adjudication_travels_into_the_description(tmp_path: Path) -> None:
    db, out = tmp_path / "p.db", tmp_path / "out"
    careless = f"{SUPPORT / 'agents.py'}:careless"
    assert invoke("run", str(SUPPORT), "--agent", careless, "--store", str(db), "-q").exit_code == 0
    with Store(db) as store:
        run_id = store.run("latest")["run_id"]
        adjudicate(store, run_id, "cancel-eligible-order", 0, "wrong_tool", "no lookup first")
    assert promote_cancel(db, out).exit_code == 0
    [written] = out.glob("*.yaml")
    data = yaml.safe_load(written.read_text())
    assert "Reviewer rita adjudicated it (fail): wrong_tool: no lookup first" in data["description"]
    assert data["metadata"]["review"] == {
        "reason": "wrong_tool",
        "note": "no lookup first",
        "reviewer": "rita",
        "verdict": "fail",
        "adjudicated": True,
    }


HOSTILE_IDS = ["../../../escaped", "/tmp/absolute-promoted", "a/b:c", "..", "C:/x", "-rf"]


@pytest.mark.parametrize("hostile", HOSTILE_IDS)
def test_promote_never_writes_outside_out(tmp_path: Path, hostile: str) -> None:
    """A foreign task id (as an importer keeps it) and a `--id`, each holding `../`, an
    absolute path or separators: the file lands in --out, under a name of its own."""
    suite = tmp_path / "deep" / "er" / "suite"
    (suite / "tasks").mkdir(parents=True)
    (suite / "domain.py").write_text((SUPPORT / "domain.py").read_text())
    task = (SUPPORT / "tasks" / "cancel-eligible-order.yaml").read_text()
    (suite / "tasks" / "t.yaml").write_text(
        task.replace("id: cancel-eligible-order", f"id: '{hostile}/t'")
    )
    (suite / "agents.py").write_text(
        "async def careless(input, toolbox):\n"
        "    await toolbox.ask_user('Shall I cancel order A-100?')\n"
        "    await toolbox.call('orders.cancel', {'order_id': 'A-100', 'reason': 'x'})\n"
        "    return 'Order A-100 has been cancelled.'\n"
    )
    db, out = tmp_path / "p.db", tmp_path / "deep" / "er" / "out"
    ran = invoke("run", str(suite), "--agent", f"{suite}/agents.py:careless", "--store", str(db))
    assert ran.exit_code == 0, ran.output
    before = {p for p in tmp_path.rglob("*") if p.is_file() and p.parent != tmp_path}
    common = ["--task", f"{hostile}/t", "--out", str(out), "--store", str(db)]
    for extra in ([], ["--id", hostile]):
        done = invoke("promote", "latest", *common, "--suite", str(suite), *extra)
        assert done.exit_code == 0, done.output
    written = {p for p in tmp_path.rglob("*") if p.is_file() and p.parent != tmp_path} - before
    assert all(out in p.parents for p in written), written  # the domain's shim too
    tasks = [p for p in written if p.suffix == ".yaml"]
    assert len(tasks) == 2 and all(p.parent == out for p in tasks), tasks
    assert not Path("/tmp/absolute-promoted.yaml").exists()
    ids = {yaml.safe_load(p.read_text())["id"] for p in tasks}
    assert hostile in ids  # the task keeps the id it was given; only its file name is safe
