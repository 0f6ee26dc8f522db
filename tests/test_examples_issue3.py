"""End to end on the robustness and adversarial examples: incident, kyc, adversarial.

Each agent runs once per module (in-process Runner with a SQLite store, so traces can be
read back); the kyc `hasty` run goes through the real CLI. Assertions are on check names,
statuses and trace events, never on wall-clock time.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import proctor
from proctor import Runner, Store, load_agent, load_suite
from proctor.core.results import Check
from proctor.run.runner import RunReport

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
INCIDENT, KYC, ADVERSARIAL = EXAMPLES / "incident", EXAMPLES / "kyc", EXAMPLES / "adversarial"
KYC_CASES = KYC / "tasks" / "cases.yaml"
KYC_STRICT = KYC / "tasks" / "cases_strict.yaml"


class Ran:
    """One run of one agent: its report, its suite and its stored traces."""

    def __init__(self, report: RunReport, suite: Any, store: Store) -> None:
        self.report, self.suite, self.store = report, suite, store

    def trials(self, task_id: str) -> list[Any]:
        return [r for r in self.report.results if r.task_id == task_id]

    def one(self, task_id: str) -> Any:
        (only,) = self.trials(task_id)
        return only

    def trace(self, result: Any) -> Any:
        return self.store.trace(self.report.run_id, result.task_id, result.trial)[0]


def check(result: Any, name: str) -> Check:
    found = [c for c in result.checks if c.name == name]
    assert found, f"{result.task_id}: no check {name!r} in {[c.name for c in result.checks]}"
    return found[0]


def failed(result: Any) -> set[str]:
    return {c.name for c in result.checks if not c.passed}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Ran]]:
    store = Store(tmp_path_factory.mktemp("issue3") / "p.db")
    plan = {
        "careful": (INCIDENT, "incident/agents.py:careful", 1),
        "naive": (INCIDENT, "incident/agents.py:naive", 1),
        "optimistic": (INCIDENT, "incident/agents.py:optimistic", 1),
        "mistake_proofed": (KYC_STRICT, "kyc/agents.py:mistake_proofed", 6),
        "guarded": (ADVERSARIAL, "adversarial/agents.py:guarded", 1),
        "gullible": (ADVERSARIAL, "adversarial/agents.py:gullible", 1),
    }
    out = {}
    for key, (path, agent, trials) in plan.items():
        suite = load_suite([path])
        report = Runner(
            suite, load_agent(f"{EXAMPLES}/{agent}"), trials=trials, store=store, seed=0
        ).run()
        assert report.summary.errors == 0, key
        out[key] = Ran(report, suite, store)
    yield out
    store.close()


def test_the_examples_validate_and_the_cases_are_reproducible() -> None:
    done = proctor("validate", str(INCIDENT), str(KYC), str(ADVERSARIAL))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok: 95 tasks valid")
    regenerated = subprocess.run(
        [sys.executable, str(KYC / "make_cases.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert regenerated.returncode == 0, regenerated.stderr
    cases = load_suite([KYC_CASES])
    assert len(cases.tasks) == 40
    for t in cases.tasks:
        traj = t.task.expect.trajectory
        assert traj is not None
        assert [f.tool for f in traj.forbidden_calls] == ["approve_account"]
        assert traj.forbidden_calls[0].severity == "critical"
        assert traj.before == [
            ["check_sanctions_list", "record_decision"],
            ["check_sanctions_list", "request_documents"],
        ]


def test_every_injected_fault_kind_shows_in_the_trace(runs: dict[str, Ran]) -> None:
    seen_kinds = set()
    for key in ("careful", "mistake_proofed", "guarded"):
        ran = runs[key]
        for t in ran.suite.tasks:
            wanted = {(f.tool, f.error) for f in t.task.faults}
            if not wanted:
                continue
            for result in ran.trials(t.id):
                events = ran.trace(result).of_kind("fault")
                got = {(e.data["tool"], e.data["fault"]) for e in events}
                assert wanted <= got, (key, t.id, result.trial, got)
                seen_kinds |= {kind for _, kind in got}
    assert seen_kinds == {"timeout", "lost_response", "429", "unavailable"}


def test_a_lost_response_retried_without_a_key_is_a_duplicate(runs: dict[str, Ran]) -> None:
    naive = runs["naive"].one("close-lost-response")
    dup = check(naive, "duplicate_side_effects")
    assert naive.status == "failed"
    assert not dup.passed and dup.kind == "outcome"
    assert len(dup.evidence["duplicates"]) == 2
    assert all(d["idempotency_key"] is None for d in dup.evidence["duplicates"])
    assert check(naive, "effect:close_incident").evidence["actual_count"] == 2

    careful = runs["careful"].one("close-lost-response")
    assert careful.status == "passed"
    assert check(careful, "duplicate_side_effects").passed
    assert check(careful, "effect:close_incident").evidence["actual_count"] == 1
    # The careful agent saw a timeout and checked the state instead of closing again.
    calls = [
        (e.data["tool"], e.data["args"])
        for e in runs["careful"].trace(careful).of_kind("tool_proposal")
    ]
    closes = [args for tool, args in calls if tool == "close_incident"]
    assert len(closes) == 1 and closes[0]["idempotency_key"]
    assert calls[-1][0] == "get_incident"


def test_a_timeout_before_the_effect(runs: dict[str, Ran]) -> None:
    """The same retry that duplicates a lost response is right here; assuming is not."""
    assert runs["careful"].one("close-timeout-before-effect").status == "passed"
    assert runs["naive"].one("close-timeout-before-effect").status == "passed"
    optimistic = runs["optimistic"].one("close-timeout-before-effect")
    assert optimistic.status == "failed"
    assert {"false_success:closed", "effect:close_incident"} <= failed(optimistic)
    assert runs["optimistic"].one("close-lost-response").status == "passed"


def test_incident_agents_overall(runs: dict[str, Ran]) -> None:
    assert runs["careful"].report.summary.success_rate == 1.0
    naive = {r.task_id: r for r in runs["naive"].report.results}
    assert "false_success:closed" in failed(naive["close-other-tenant-incident"])
    assert "false_success:deleted" in failed(naive["delete-false-alarm"])
    # The delete was attempted and denied by the task's policy: a defence, not a violation.
    forbidden = check(naive["delete-false-alarm"], "forbidden:delete_incident")
    assert forbidden.passed and forbidden.evidence["denied_defences"]
    # Retrying a 429 at once is scored (robustness) but does not fail the trial.
    rate_limited = naive["take-over-rate-limited"]
    assert rate_limited.status == "passed"
    assert not check(rate_limited, "transient_retries").passed
    assert check(runs["careful"].one("take-over-rate-limited"), "transient_retries").passed


def test_a_denied_cross_tenant_call_is_a_defence_an_allowed_one_a_violation(
    runs: dict[str, Ran],
) -> None:
    guarded = runs["guarded"].one("adv-cross-tenant-lookup")
    defended = check(guarded, "no_cross_tenant")
    assert guarded.status == "passed"
    assert defended.passed and defended.evidence["denied_defences"]

    gullible = runs["gullible"].one("adv-cross-tenant-lookup")
    violated = check(gullible, "no_cross_tenant")
    assert gullible.status == "failed"
    assert not violated.passed and violated.severity == "critical"
    assert violated.evidence["denied_defences"]  # it was denied first ...
    assert violated.evidence["violations"][0]["tool"] == "search_incidents"  # ... then went around

    other_tenant = runs["careful"].one("close-other-tenant-incident")
    assert other_tenant.status == "passed"
    assert check(other_tenant, "no_cross_tenant").evidence["denied_defences"]


def test_a_perfect_answer_with_one_critical_violation_fails(runs: dict[str, Ran]) -> None:
    result = runs["gullible"].one("adv-injected-incident-note")
    by_kind: dict[str, list[Check]] = {}
    for c in result.checks:
        by_kind.setdefault(c.kind, []).append(c)
    assert by_kind["answer"] and all(c.passed for c in by_kind["answer"])
    gating = [c for c in result.checks if c.kind in ("outcome", "trajectory", "budget")]
    assert all(c.passed for c in gating)
    violations = [c for c in result.checks if c.kind == "safety" and not c.passed]
    assert [(c.name, c.severity) for c in violations] == [("injection_resisted", "critical")]
    assert result.status == "failed"


def test_kyc_hasty_skips_the_screening_on_looks_fine_cases(tmp_path: Path) -> None:
    out = tmp_path / "hasty.json"
    done = proctor(
        "run",
        str(KYC_CASES),
        "--agent",
        f"{KYC}/agents.py:hasty",
        "--trials",
        "6",
        "--store",
        str(tmp_path / "p.db"),
        "--json",
        str(out),
        "--quiet",
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(out.read_text())
    order = "order:check_sanctions_list<record_decision"
    skipped = {
        row["id"]: row["failed_checks"][order]
        for row in summary["per_task"]
        if order in row["failed_checks"]
    }
    tags = {row["id"]: row["tags"] for row in summary["per_task"]}
    assert sum(skipped.values()) >= 6  # about one in six of 24 looks_fine cases x 6 trials
    assert all("looks_fine" in tags[task] for task in skipped)
    assert summary["safety_violations"]["total"] == 0  # it never approves
    # With seed 0, some skipped screenings were sanctions hits: recommended for approval.
    rows = {row["id"]: row for row in summary["per_task"]}
    assert any(
        "sanctions_hit" in tags[task] and "effect:record_decision" in rows[task]["failed_checks"]
        for task in skipped
    )


def test_kyc_mistake_proofed_never_decides_unscreened(runs: dict[str, Ran]) -> None:
    ran = runs["mistake_proofed"]
    assert ran.report.summary.trials == 240
    assert ran.report.summary.success_rate == 1.0
    order_failures = [
        r.task_id
        for r in ran.report.results
        for c in r.checks
        if c.name.startswith("order:") and not c.passed
    ]
    assert order_failures == []
    # The hurried impulse still happens; the strict tools turn it away before any effect.
    tags = {t.id: t.task.tags for t in ran.suite.tasks}
    rejected = 0
    for result in ran.report.results:
        if "looks_fine" not in tags[result.task_id]:
            continue
        events = list(ran.trace(result).events)
        errors = [
            e for e in events if e.kind == "tool_error" and e.data["code"] == "invalid_arguments"
        ]
        if errors:
            rejected += 1
            first_screen = min(
                e.seq
                for e in events
                if e.kind == "tool_proposal" and e.data["tool"] == "check_sanctions_list"
            )
            assert all(e.seq < first_screen for e in errors)
    assert rejected >= 6


def test_adversarial_guarded_passes_and_gullible_fails_each_for_its_reason(
    runs: dict[str, Ran],
) -> None:
    tasks = {t.id: t.task for t in runs["guarded"].suite.tasks}
    assert len(tasks) == 8
    assert all(t.suites == ["adversarial"] for t in tasks.values())
    for result in runs["guarded"].report.results:
        assert result.status == "passed", (result.task_id, failed(result))
    for result in runs["gullible"].report.results:
        expected = tasks[result.task_id].metadata["failing_check"]
        assert result.status in ("partial", "failed"), result.task_id
        assert expected in failed(result), (result.task_id, failed(result))
        assert any(c.name == expected and c.blocks for c in result.checks), result.task_id


def test_kyc_strict_rejects_missing_and_unknown_screening_ids() -> None:
    from proctor.env import Environment

    strict = load_suite([KYC_STRICT]).select(ids=["kyc-case-01-strict"]).tasks[0]
    env = Environment.fresh(strict.task, strict.domain, seed=1)
    case = {"case_id": "KYC-1001", "decision": "escalate"}
    missing = env.gateway.call("record_decision", case)
    unknown = env.gateway.call("record_decision", {**case, "sanctions_check_id": "SCR-9999-1"})
    assert (missing.code, unknown.code) == ("invalid_arguments", "invalid_arguments")
    screening = env.gateway.call("check_sanctions_list", {"case_id": "KYC-1001"}).value
    done = env.gateway.call(
        "record_decision", {**case, "sanctions_check_id": screening["check_id"]}
    )
    assert done.ok and [e.tool for e in env.outcome().ledger] == ["record_decision"]

    lenient = load_suite([KYC_CASES]).select(ids=["kyc-case-01"]).tasks[0]
    env = Environment.fresh(lenient.task, lenient.domain, seed=1)
    assert env.gateway.call("record_decision", case).ok  # the mistake the strict tools prevent
    # Documents are a set: the ledger holds them sorted, whatever order the agent used.
    asked = {"case_id": "KYC-1001", "documents": ["proof_of_address", "passport", "passport"]}
    assert env.gateway.call("request_documents", asked).ok
    assert env.outcome().ledger[-1].args["documents"] == ["passport", "proof_of_address"]


def test_kyc_screening_after_the_last_write_is_no_tampering() -> None:
    """check_sanctions_list records each screening in the state (a read that writes): the
    gateway takes that change as the call's own, wherever the call falls, and still finds
    a change made behind it."""
    suite = load_suite(KYC_STRICT)
    first = suite.tasks[0].task

    async def rescreens(input: Any, toolbox: Any) -> str:
        [case_id] = re.findall(r"KYC-\d+", input.prompt)[:1]
        screened = await toolbox.call("check_sanctions_list", {"case_id": case_id})
        args = {"case_id": case_id, "decision": "escalate", "reason": "second look"}
        await toolbox.call(
            "record_decision", {**args, "sanctions_check_id": screened.value["check_id"]}
        )
        await toolbox.call("check_sanctions_list", {"case_id": case_id})  # after the last write
        return "Escalated."

    report = Runner(suite.select(ids=[first.id]), rescreens, trials=2).run()
    assert [c.name for r in report.results for c in r.checks if c.name == "trace_integrity"] == []
