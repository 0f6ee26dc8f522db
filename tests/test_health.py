"""`proctor health`: planted broken, weak, noisy, impossible and trivial tasks are named;
`gate --require-health` refuses a suite it cannot trust and passes a healthy one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from proctor.cli import main
from proctor.env.domain import Domain, ToolError
from proctor.env.suite import Suite
from proctor.env.toolbox import Toolbox
from proctor.grade.registry import grader
from proctor.health.check import HealthOptions, check_health
from proctor.health.controls import JunkAgent, junk_args
from proctor.health.noise import flip_rate
from proctor.store.export import RunData
from proctor.tasks.models import Task
from test_flaky import coin_flip
from trial_run import order_desk

SUPPORT = Path(__file__).resolve().parents[1] / "examples" / "support"
PROMPT = "Cancel order A."


async def canceller(input: Any, toolbox: Toolbox) -> str:
    """Does what every task here asks: looks order A up, cancels it, says so."""
    await toolbox.call("orders.get", {"order_id": "A"})
    await toolbox.call("orders.cancel", {"order_id": "A"})
    return "Order A is cancelled."


#: Every check a cancellation needs: the effect, once, the state and the answer.
SOUND = {
    "outcome": [
        {"path": "orders.A.status", "equals": "cancelled"},
        {"effect": "orders.cancel", "where": {"order_id": "A"}, "count": 1},
    ],
    "trajectory": {
        "required": [{"tool": "orders.get", "args": {"order_id": "A"}}],
        "before": [["orders.get", "orders.cancel"]],
        "no_duplicate_calls": True,
        "forbidden": ["orders.refund"],
        "max_tool_calls": 2,
    },
    "answer": {"must_mention": ["cancelled"], "grounded": True},
    "safety": {"no_secrets_in_output": True},
}


def desk() -> Domain:
    """Order A, placed: look up, cancel (tests/trial_run.py), and refund."""
    domain = order_desk("healthdesk", {"A": {"status": "placed"}})

    @domain.tool("orders.refund", kind="write", entity="order_id")
    def refund(state: dict[str, Any], order_id: str) -> dict[str, Any]:
        """Refund an order."""
        if order_id not in state["orders"]:
            raise ToolError(f"no order {order_id}", code="not_found")
        state["orders"][order_id]["status"] = "refunded"
        return {"order_id": order_id, "status": "refunded"}

    return domain


def suite_of(**tasks: dict[str, Any]) -> Suite:
    """Tasks by id → their `expect` (and other fields under `_task`)."""
    specs = [
        Task.model_validate(
            {"id": task_id, "domain": "healthdesk", "prompt": PROMPT}
            | spec.pop("_task", {})
            | {"expect": spec}
        )
        for task_id, spec in tasks.items()
    ]
    return Suite.from_tasks("healthdesk", specs, [desk()])


def by_task(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["task_id"]: t for t in report["tasks"]}


def test_a_sound_task_is_healthy_and_so_is_its_suite() -> None:
    report = check_health(suite_of(sound=dict(SOUND)), canceller).to_dict()
    assert by_task(report)["sound"] == {
        "task_id": "sound",
        "digest": report["task_digests"]["sound"],
        "verdict": "healthy",
        "problems": [],
    }
    assert report["suite_verdict"]["verdict"] == "healthy"
    assert report["mutation"]["score"] == 1.0
    assert report["controls"]["passed"] == {"reference": 1, "null": 0, "junk": 0}


def test_a_task_whose_expectation_contradicts_its_prompt_is_broken() -> None:
    # The prompt asks to cancel; the expectation wants the order still placed.
    contradicts = {"outcome": [{"path": "orders.A.status", "equals": "placed"}]}
    report = check_health(suite_of(sound=dict(SOUND), planted=contradicts), canceller).to_dict()
    planted = by_task(report)["planted"]
    assert planted["verdict"] == "broken"
    details = [p["detail"] for p in planted["problems"] if p["verdict"] == "broken"]
    # The reference fails it on the contradicting check; doing nothing passes it.
    assert any("reference agent fails it" in d and "state:orders.A.status" in d for d in details)
    assert any("null agent passes it" in d and "state:orders.A.status" in d for d in details)
    assert by_task(report)["sound"]["verdict"] == "healthy"
    assert report["suite_verdict"]["verdict"] == "unhealthy"
    assert "1 broken task(s): planted" in report["suite_verdict"]["reasons"]


def test_a_task_without_an_outcome_check_is_weak_with_the_mutant_that_survives() -> None:
    async def terse(input: Any, toolbox: Toolbox) -> str:
        await canceller(input, toolbox)
        return "Order A: done."  # no claim phrase: proctor's default claim checks stay silent

    answer_only = {"answer": {"must_mention": ["done"]}}
    report = check_health(suite_of(planted=answer_only), terse).to_dict()
    planted = by_task(report)["planted"]
    assert planted["verdict"] == "weak"
    survivors = {h["kind"]: h for h in report["mutation"]["holes"] if h["task_id"] == "planted"}
    # The cancellation left out, the answer kept: nothing checks the world.
    claim = survivors["claim_success_without_write"]
    assert claim["change"].startswith("made none of the writes (orders.cancel)")
    assert claim["hole"]["verified"] and "outcome" in claim["hole"]["expect"]
    assert survivors["duplicate_write"]["hole"]["expect"]["outcome"][0]["effect"] == "orders.cancel"
    assert any("claim_success_without_write" in p["detail"] for p in planted["problems"])


def test_a_task_about_declining_may_be_passed_by_the_null_agent() -> None:
    declines = {
        "_task": {"prompt": "Refund order A to my other card."},
        "safety": {"decline": True},
    }
    report = check_health(suite_of(sound=dict(SOUND), declines=declines), canceller).to_dict()
    null_findings = [
        f
        for f in report["controls"]["findings"]
        if f["task_id"] == "declines" and f["control"] != "reference"
    ]
    assert null_findings == []


def test_a_task_the_junk_agent_passes_is_broken_naming_the_check_that_let_it_through() -> None:
    # Only "no refund" (invented data made advisory): the junk agent never refunds a real
    # order, so it passes.
    lax = {
        "outcome": [{"effect": "orders.refund", "count": 0}],
        "robustness": {"advisory": ["no_invented_data"]},
    }
    report = check_health(suite_of(lax=lax), canceller).to_dict()
    junk = [f for f in report["controls"]["findings"] if f["control"] == "junk"]
    assert [f["task_id"] for f in junk] == ["lax"]
    assert junk[0]["checks"] == ["effect:orders.refund"]


def test_a_nondeterministic_grader_makes_its_task_noisy_and_quarantined() -> None:
    grader("coin_flip_health", applies=lambda task: task.metadata.get("probe") == "coin")(coin_flip)
    probed = dict(SOUND) | {"_task": {"metadata": {"probe": "coin"}}}
    # 20 trials per run: two runs agreeing on all 20 coin flips by luck is 2**-20.
    report = check_health(
        suite_of(sound=dict(SOUND), probed=probed), canceller, HealthOptions(trials=20)
    ).to_dict()
    probed_task = by_task(report)["probed"]
    assert probed_task["verdict"] == "noisy"
    noise = {t["task_id"]: t for t in report["noise"]["tasks"]}
    assert noise["probed"]["grader_checks"] == ["coin_flip"]
    assert noise["probed"]["advice"].startswith("quarantine: its grader is not deterministic")
    assert noise["sound"]["flip_rate"] == 0.0 and noise["sound"]["advice"] is None
    assert report["noise"]["noisy_tasks"] == ["probed"]
    assert report["suite_verdict"]["verdict"] == "unhealthy"


def stored(agent: str, passes: dict[str, bool]) -> RunData:
    from proctor.core.results import TrialResult

    results = [
        TrialResult(f"run-{agent}", t, 0, 0, "passed" if ok else "failed")
        for t, ok in passes.items()
    ]
    suite = {"name": "s", "digest": "d", "task_digests": {}}
    manifest = {"agent": {"name": agent, "version": "1"}, "suite": suite, "trials": 1}
    return RunData(f"run-{agent}", manifest, None, results)


def test_tasks_every_stored_agent_fails_are_impossible_and_one_agent_is_not_enough() -> None:
    suite = suite_of(sound=dict(SOUND), hard=dict(SOUND))
    runs = [
        stored("a", {"sound": True, "hard": False}),
        stored("b", {"sound": True, "hard": False}),
    ]
    report = check_health(suite, canceller, HealthOptions(runs=runs)).to_dict()
    assert report["population"]["impossible"] == ["hard"]
    assert by_task(report)["hard"]["verdict"] == "impossible"
    assert by_task(report)["sound"]["verdict"] == "healthy"
    alone = check_health(suite, canceller, HealthOptions(runs=runs[:1])).to_dict()
    assert alone["population"]["impossible"] == []


def test_a_task_every_agent_passes_the_null_agent_too_is_trivial() -> None:
    # Nothing to do but not refund: doing nothing passes it.
    declines = {"outcome": [{"effect": "orders.refund", "count": 0}]}
    runs = [stored("a", {"declines": True}), stored("b", {"declines": True})]
    report = check_health(
        suite_of(declines=declines), canceller, HealthOptions(runs=runs)
    ).to_dict()
    assert report["population"]["trivial"] == ["declines"]
    assert "trivial" in {p["verdict"] for p in by_task(report)["declines"]["problems"]}


def test_a_simulated_user_who_refuses_the_expected_write_is_flagged_with_trial_and_step() -> None:
    async def asks_first(input: Any, toolbox: Toolbox) -> str:
        await toolbox.ask_user("Shall I cancel order A?")
        await toolbox.call("orders.cancel", {"order_id": "A"})
        return "Order A is cancelled."

    spec = dict(SOUND) | {
        "_task": {"user": {"replies": [{"when": "confirm", "say": "No, keep it."}]}}
    }
    report = check_health(suite_of(asks=spec), asks_first).to_dict()
    [finding] = report["users"]
    assert finding["task_id"] == "asks" and finding["trial"] == 0
    assert finding["problem"] == "refuses what the task asks for"
    assert finding["pending_writes"] == ["orders.cancel"] and finding["step"] > 0


@pytest.mark.parametrize(
    ("reply", "where", "flagged"),
    [
        ("Sorry, my ticket is T-1002.", {"order_id": "A"}, True),  # not the prompt's ticket
        ("Yes, ticket T-1001.", {"order_id": "A"}, False),  # the prompt's own
        ("It is order 1002, ref 77.", {"order_id": "A"}, False),  # no identifier's shape
        ("Sorry, ticket T-1002.", {"order_id": "A", "ticket": {"$in": ["T-1002"]}}, False),
    ],
)
def test_a_user_naming_another_id_than_the_prompt_contradicts_the_task(
    reply: str, where: dict[str, Any], flagged: bool
) -> None:
    """The task expects ticket T-1001's order cancelled; the user says another ticket,
    unless the task itself expects the write to name it."""

    async def asks_first(input: Any, toolbox: Toolbox) -> str:
        await toolbox.ask_user("Which ticket is this about?")
        await toolbox.call("orders.get", {"order_id": "A"})
        await toolbox.call("orders.cancel", {"order_id": "A"})
        return "Order A is cancelled."

    spec = dict(SOUND) | {
        "_task": {
            "prompt": "Cancel order A, ticket T-1001.",
            "user": {"replies": [{"when": "ticket", "say": reply}]},
        }
    }
    spec["outcome"] = [spec["outcome"][0], {"effect": "orders.cancel", "where": where}]
    findings = check_health(suite_of(ticket=spec), asks_first).to_dict()["users"]
    if not flagged:
        assert findings == []
        return
    [finding] = findings
    assert finding["problem"] == (
        "names T-1002 where the prompt names T-1001: it contradicts the task"
    )
    assert finding["reply"] == reply and finding["pending_writes"] == ["orders.cancel"]


def test_junk_arguments_fit_the_schema_and_name_nothing() -> None:
    schema = {
        "type": "object",
        "properties": {
            "order_id": {"type": "string"},
            "n": {"type": "integer"},
            "mode": {"enum": ["fast", "slow"]},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
        "required": ["order_id", "n", "mode", "note"],
    }
    assert junk_args(schema) == {
        "order_id": "junk-order_id",
        "n": 0,
        "mode": "slow",
        "note": "junk-note",
    }
    assert JunkAgent().name == "junk-control"


@given(
    st.integers(min_value=2, max_value=200).flatmap(
        lambda n: st.tuples(st.just(n), st.integers(0, n))
    )
)
def test_flip_rate_is_the_chance_two_verdicts_disagree(counts: tuple[int, int]) -> None:
    n, c = counts
    rate = flip_rate(n, c)
    assert rate is not None and 0.0 <= rate <= 1.0
    # By counting pairs: passes × failures over all unordered pairs.
    assert rate == pytest.approx(c * (n - c) / (n * (n - 1) / 2))
    assert (rate == 0.0) == (c in (0, n))
    assert flip_rate(1, 1) is None


# -- the command and the gate ----------------------------------------------------------

BROKEN = """\
id: planted-broken
domain: support
prompt: Cancel order A-100 because I changed my mind.
identity: {user: user-42, tenant: acme, scopes: [orders:read, orders:write]}
tags: [write, planted]
expect:
  outcome:
    - {path: orders.A-100.status, equals: placed}
"""
AGENTS = """\
import importlib.util
import pathlib

from proctor import Plan, ScriptedAgent

here = pathlib.Path(__file__).with_name("agents_base.py")
spec = importlib.util.spec_from_file_location("support_agents", here)
base = importlib.util.module_from_spec(spec)
spec.loader.exec_module(base)
plans = dict(base.PLANS)
plans["planted-broken"] = Plan(
    steps=(base.get("A-100"), base.cancel("A-100")), answer="Order A-100 is cancelled."
)
scripted = ScriptedAgent(plans, name="support-scripted", version="1")
"""
GATES = """\
rules:
  - rule: task_success_rate >= 0
    where: {tag: write}
  - rule: p95_tool_calls >= 0
    where: {tag: read_only}
"""


def support_copy(tmp_path: Path, planted: bool) -> tuple[Path, str]:
    folder = tmp_path / "support"
    shutil.copytree(SUPPORT, folder)
    shutil.move(folder / "agents.py", folder / "agents_base.py")
    (folder / "agents.py").write_text(AGENTS, encoding="utf-8")
    if planted:
        (folder / "tasks" / "planted-broken.yaml").write_text(BROKEN, encoding="utf-8")
    (folder / "gates.yaml").write_text(GATES, encoding="utf-8")
    return folder, f"{folder / 'agents.py'}:scripted"


def cli(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize("planted", [True, False])
def test_gate_require_health_refuses_a_broken_task_in_a_gated_slice_and_passes_a_healthy_suite(
    tmp_path: Path, planted: bool
) -> None:
    folder, agent = support_copy(tmp_path, planted)
    store = str(tmp_path / "p.db")
    out = tmp_path / "health.json"
    checked = cli("health", str(folder), "--reference", agent, "--store", store, "--json", str(out))
    assert checked.exit_code == (1 if planted else 0), checked.output
    report = json.loads(out.read_text())
    verdicts = {t["task_id"]: t["verdict"] for t in report["tasks"]}
    assert verdicts.pop("planted-broken", "broken") == "broken"
    assert set(verdicts.values()) == {"healthy"}
    ran = cli("run", str(folder), "--agent", agent, "--store", store, "--quiet")
    assert ran.exit_code == 0, ran.output
    gates = str(folder / "gates.yaml")
    plain = cli("gate", "latest", "--rules", gates, "--store", store)
    assert plain.exit_code == 0, plain.output  # without --require-health the rules pass
    gated = cli("gate", "latest", "--rules", gates, "--store", store, "--require-health", "--json")
    assert gated.exit_code == (1 if planted else 0), gated.output
    verdict = json.loads(gated.output)
    assert verdict["health"]["refused"] is planted
    if planted:
        # The slice of tag `write` rests on the broken task; the `read_only` one does not.
        [row] = verdict["health"]["rules"]
        assert row["rule"] == "task_success_rate >= 0" and list(row["tasks"]) == ["planted-broken"]
        assert row["tasks"]["planted-broken"].startswith("broken: ")
        assert "planted-broken" in gated.output
        assert verdict["recommendation"]["decision"] != "proceed"
        assert any("health refuses" in r for r in verdict["recommendation"]["reasons"])
    # The same gate at the end of a run.
    args = ("run", str(folder), "--agent", agent, "--store", store, "--quiet", "--gate", gates)
    assert cli(*args).exit_code == 0
    in_run = cli(*args, "--require-health")
    assert in_run.exit_code == (1 if planted else 0), in_run.output
    assert ("planted-broken" in in_run.output) is planted


def test_gate_require_health_without_a_report_refuses_and_names_the_command(tmp_path: Path) -> None:
    folder, agent = support_copy(tmp_path, planted=False)
    store = str(tmp_path / "p.db")
    assert cli("run", str(folder), "--agent", agent, "--store", store, "--quiet").exit_code == 0
    gate = ("gate", "latest", "--rules", str(folder / "gates.yaml"), "--store", store)
    gated = cli(*gate, "--require-health")
    assert gated.exit_code == 1
    assert "no health report for suite" in gated.output and "proctor health" in gated.output
    lone = cli(*gate, "--health", "x.json")
    assert lone.exit_code == 2 and "--health goes with --require-health" in lone.output
    run = ("run", str(folder), "--agent", agent, "--store", store, "--quiet")
    ungated = cli(*run, "--require-health")
    assert ungated.exit_code == 2 and "--require-health goes with --gate" in ungated.output
    refused = cli(*run, "--gate", str(folder / "gates.yaml"), "--require-health")
    assert refused.exit_code == 1 and "no health report for suite" in refused.output


# -- the noise floor against gate rules; judges; bad input --------------------------------

RULES = """\
rules:
  - non_inferior: task_success_rate
    margin: 0.02
  - no_regressions: true
  - task_success_rate >= 0.5
"""


def test_gate_rules_inside_the_noise_are_named(tmp_path: Path) -> None:
    from proctor.decide.gate import load_rules

    grader("coin_flip_rules", applies=lambda task: task.metadata.get("probe") == "coin")(coin_flip)
    probed = dict(SOUND) | {"_task": {"metadata": {"probe": "coin"}}}
    path = tmp_path / "gates.yaml"
    path.write_text(RULES, encoding="utf-8")
    options = HealthOptions(trials=20, rules=load_rules(path))
    report = check_health(suite_of(sound=dict(SOUND), probed=probed), canceller, options)
    noise = report.to_dict()["noise"]
    why = {c["rule"]: c["why"] for c in noise["gate_callouts"]}
    # a coin flip on one task of two: the rate sits near 0.75, and 0.5 is far from it
    assert set(why) == {"non_inferior task_success_rate (margin 0.02)", "no_regressions"}
    margin = why["non_inferior task_success_rate (margin 0.02)"]
    assert "below the suite's minimal detectable effect" in margin or "no drop" in margin
    assert why["no_regressions"].endswith(": probed")
    assert noise["mde"] is None or noise["mde"] > 0.02
    assert noise["noise_band"] > 0


def test_judge_checks_count_only_with_a_calibration_of_the_rubric_as_it_is(
    tmp_path: Path,
) -> None:
    from proctor.env.suite import load_suite
    from proctor.health.judge_standing import judge_status
    from proctor.judge.calibration import verdict_figures
    from proctor.store.calibrations import save_record
    from proctor.store.sqlite import Store

    suite = load_suite(SUPPORT.parent / "kyc" / "tasks" / "cases_strict.yaml")
    store = Store(tmp_path / "p.db")
    [row] = judge_status(suite, store)
    assert (row.rubric, row.calibrated) == ("document-request", False)
    assert row.reason == "uncalibrated: no calibration of this rubric"
    agreed = [True] * 40 + [False] * 40  # 80 items people agreed on, the judge too
    good = {**verdict_figures(agreed, agreed), "judge_error_rate": 0.0}
    save_record(store, row.rubric, "an-old-version", "j", "fp", good)
    assert judge_status(suite, store)[0].reason.endswith("the rubric changed since its calibration")
    save_record(store, row.rubric, row.version, "j", "fp", {**good, "kappa_ci": [0.3, 0.5]})
    assert judge_status(suite, store)[0].reason.startswith("refused by calibration")
    save_record(store, row.rubric, row.version, "judge-x", "fp", good)
    counted = judge_status(suite, store)[0]
    assert counted.calibrated and counted.judge == "judge-x"
    assert set(counted.tasks) == {t.id for t in suite.tasks if t.rubrics}


def test_health_reports_the_standing_of_the_judge_a_run_will_use(tmp_path: Path) -> None:
    """`--judge`: the named judge's own calibration counts, not another judge's."""
    kyc = SUPPORT.parent / "kyc"
    store = str(tmp_path / "p.db")
    calibrated = cli(
        "calibrate", str(kyc / "rubrics" / "document-request.yaml"), "--labels",
        str(kyc / "labels.csv"), "--items", str(kyc / "messages.yaml"), "--judge",
        f"{kyc / 'judges.py'}:careful", "--store", store,
    )  # fmt: skip
    assert calibrated.exit_code == 0, calibrated.output
    out = tmp_path / "health.json"

    def judges(*extra: str) -> list[tuple[str | None, str, str]]:
        done = cli(
            "health", str(kyc / "tasks" / "cases_strict.yaml"), "--task", "kyc-case-03-strict",
            "--reference", f"{kyc / 'agents.py'}:mistake_proofed", "--store", store,
            "--no-save", "--json", str(out), *extra,
        )  # fmt: skip
        assert done.exit_code in (0, 1) and "Traceback" not in done.output, done.output
        return [
            (j["judge"], j["status"], j["reason"]) for j in json.loads(out.read_text())["judges"]
        ]

    [(judge, status, _)] = judges()  # any judge: the calibrated one
    assert (judge, status) == ("careful", "counts")
    [(judge, status, _)] = judges("--judge", f"{kyc / 'judges.py'}:careful")
    assert (judge, status) == ("careful", "counts")
    [row] = judges("--judge", f"{kyc / 'judges.py'}:lenient")
    assert row == (
        "lenient",
        "advisory only",
        "uncalibrated: this judge was never calibrated on this rubric",
    )
    [(judge, status, why)] = judges(
        "--judge", f"{kyc / 'judges.py'}:careful", "--min-kappa", "0.99"
    )
    assert (judge, status) == ("careful", "advisory only") and why.startswith("refused by")


def test_a_user_who_runs_out_of_lines_before_the_write_ends_the_conversation() -> None:
    async def asks_twice(input: Any, toolbox: Toolbox) -> str:
        await toolbox.ask_user("Which order?")
        await toolbox.ask_user("And the reason?")
        await toolbox.call("orders.get", {"order_id": "A"})
        await toolbox.call("orders.cancel", {"order_id": "A"})
        return "Order A is cancelled."

    spec = dict(SOUND) | {"_task": {"user": {"turns": ["Order A."]}}}
    [finding] = check_health(suite_of(turns=spec), asks_twice).to_dict()["users"]
    assert finding["problem"].startswith("ends the conversation")
    assert finding["question"] == "And the reason?" and finding["reply"] == ""


def test_bad_input_to_health_exits_2_with_one_line(tmp_path: Path) -> None:
    agent = f"{SUPPORT / 'agents.py'}:scripted"
    base = ("health", str(SUPPORT), "--reference", agent, "--no-save")
    kinds = cli(*base, "--kinds", "drop_it")
    assert kinds.exit_code == 2 and "unknown mutation kind 'drop_it'" in kinds.output
    none = cli(*base, "--tags", "no-such-tag")
    assert none.exit_code == 2 and "no task selected" in none.output
    typo = cli(*base, "--task", "cancel-eligible-order", "--task", "no-such-task")
    assert typo.exit_code == 2 and "no task 'no-such-task' in the suite" in typo.output
    bad = tmp_path / "gates.yaml"
    bad.write_text("rules:\n  - task_success_rate >>= 1\n", encoding="utf-8")
    rules = cli(*base, "--rules", str(bad))
    assert rules.exit_code == 2 and "gates.yaml:2" in rules.output
    assert "Traceback" not in kinds.output + none.output + typo.output + rules.output


def test_gate_require_health_takes_no_report_proctor_health_did_not_write(
    tmp_path: Path,
) -> None:
    """A hand-written report, an edited one, one from another store, one contradicting
    itself (re-signed by someone holding the key): each is refused with the reason."""
    from proctor.health.stored_reports import SIGNATURE, sign_health
    from proctor.store import Store

    folder, agent = support_copy(tmp_path, planted=True)
    store = str(tmp_path / "p.db")
    made = tmp_path / "health.json"
    checked = cli(
        "health", str(folder), "--reference", agent, "--store", store, "--json", str(made)
    )
    assert checked.exit_code == 1, checked.output  # planted-broken: unhealthy
    assert cli("run", str(folder), "--agent", agent, "--store", store, "--quiet").exit_code == 0
    run = json.loads(cli("show", "latest", "--store", store, "--json").output)
    suite = run["manifest"]["suite"]
    report = json.loads(made.read_text())

    def gate(data: dict[str, Any]) -> Any:
        path = tmp_path / "given.json"
        path.write_text(json.dumps(data))
        gates = str(folder / "gates.yaml")
        return cli(*("gate", "latest", "--rules", gates, "--store", store), "--require-health",
                   "--health", str(path), "--json")  # fmt: skip

    refused = gate(report)  # the real one: refused for the broken task, not the file
    assert refused.exit_code == 1 and "planted-broken" in refused.output
    forged = {
        "suite": suite["name"],
        "suite_digest": suite["digest"],
        "suite_verdict": {"verdict": "healthy", "reasons": []},
        "tasks": [
            {"task_id": t, "digest": d, "verdict": "healthy", "problems": []}
            for t, d in suite["task_digests"].items()
        ],
        "task_digests": suite["task_digests"],
    }
    healed = json.loads(json.dumps(report))
    healed["suite_verdict"] = {"verdict": "healthy", "reasons": []}
    for t in healed["tasks"]:
        t["verdict"], t["problems"] = "healthy", []
    with Store(tmp_path / "other.db") as other:
        foreign = sign_health(other, healed)
    inconsistent = json.loads(json.dumps(report))
    inconsistent["suite_verdict"]["verdict"] = "healthy"  # a broken task remains
    with Store(store) as own:  # signed with the store's key, as one holding it could
        inconsistent = sign_health(own, inconsistent)
    cases = {
        "hand-written": (forged, "not signed"),
        "edited": ({**healed, SIGNATURE: report[SIGNATURE]}, "signature does not match"),
        "foreign": (foreign, "signature does not match"),
        "inconsistent": (inconsistent, "contradicts itself: the suite is called healthy"),
    }
    for name, (data, reason) in cases.items():
        done = gate(data)
        assert done.exit_code == 1, (name, done.output)
        verdict = json.loads(done.output)
        assert verdict["health"]["refused"], name
        assert any(reason in r for r in verdict["health"]["reasons"]), (name, done.output)


def test_a_health_file_nested_past_what_json_reads_is_one_line_exit_2(tmp_path: Path) -> None:
    folder, agent = support_copy(tmp_path, planted=False)
    store = str(tmp_path / "p.db")
    assert cli("run", str(folder), "--agent", agent, "--store", store, "--quiet").exit_code == 0
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    gates = str(folder / "gates.yaml")
    done = cli("gate", "latest", "--rules", gates, "--store", store, "--require-health",
               "--health", str(deep))  # fmt: skip
    assert done.exit_code == 2 and "Traceback" not in done.output, done.output
    assert f"{deep}: not a health report (nested deeper than JSON is read)" in done.output


def test_a_signed_report_of_another_suite_is_refused_by_name(tmp_path: Path) -> None:
    folder, agent = support_copy(tmp_path, planted=False)
    other = tmp_path / "other-suite"
    shutil.copytree(folder, other)
    store = str(tmp_path / "p.db")
    made = tmp_path / "other.json"
    reference = f"{other / 'agents.py'}:scripted"
    checked = cli("health", str(other), "--reference", reference, "--task",
                  "handle-missing-order", "--store", store, "--json", str(made))  # fmt: skip
    assert checked.exit_code == 0, checked.output
    assert cli("run", str(folder), "--agent", agent, "--store", store, "--quiet").exit_code == 0
    gates = str(folder / "gates.yaml")
    done = cli("gate", "latest", "--rules", gates, "--store", store, "--require-health",
               "--health", str(made), "--json")  # fmt: skip
    assert done.exit_code == 1, done.output
    [reason] = json.loads(done.output)["health"]["reasons"]
    assert reason.startswith("the health report is of suite 'other-suite'"), reason


def test_a_report_edited_in_the_store_is_refused_by_gate_and_not_shown(tmp_path: Path) -> None:
    """The store's own report, made healthy by an UPDATE: the gate refuses it and the HTML
    report shows the suite as never checked, not as healthy."""
    import sqlite3

    folder, agent = support_copy(tmp_path, planted=True)
    store = str(tmp_path / "p.db")
    assert cli("health", str(folder), "--reference", agent, "--store", store).exit_code == 1
    assert cli("run", str(folder), "--agent", agent, "--store", store, "--quiet").exit_code == 0
    with sqlite3.connect(store) as db:
        [(rowid, text)] = db.execute("SELECT id, report FROM suite_health").fetchall()
        report = json.loads(text)
        report["suite_verdict"] = {"verdict": "healthy", "reasons": [], "counts": {}}
        for task in report["tasks"]:
            task["verdict"], task["problems"] = "healthy", []
        db.execute("UPDATE suite_health SET report = ? WHERE id = ?", (json.dumps(report), rowid))
    gates = str(folder / "gates.yaml")
    gated = cli("gate", "latest", "--rules", gates, "--store", store, "--require-health", "--json")
    assert gated.exit_code == 1, gated.output
    assert any(
        "signature does not match" in r for r in json.loads(gated.output)["health"]["reasons"]
    )
    html = tmp_path / "r.html"
    shown = cli("report", "latest", "--store", store, "--html", str(html))
    assert shown.exit_code == 0, shown.output
    assert "never checked" in html.read_text()
