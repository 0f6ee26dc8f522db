"""Judges in runs: simulated judges and their biases, calibration deciding what a judge
may do (the KYC example), ensembles, routing to people, self-preference."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judge_runs import KYC, RUBRIC, judge_checks, judged_run, kyc_agents
from proctor.cli import main
from proctor.core.manifest import Manifest
from proctor.core.results import GATING_KINDS, Check
from proctor.judge.grader import self_preference_warnings
from proctor.judge.judgment import JudgeView
from proctor.judge.panel import JudgePanel
from proctor.judge.scripted_judge import ScriptedJudge
from proctor.review.queue import review_queue
from proctor.store import Store
from proctor.store.export import store_run
from proctor.tasks.rubrics import load_rubric

judges: Any = __import__("proctor.env.domain_finder", fromlist=["x"]).load_module_from_path(
    KYC / "judges.py"
)
MISSING_DOCS = ("kyc-case-03", "kyc-case-06", "kyc-case-11", "kyc-case-12", "kyc-case-15")


def test_an_advisory_judge_check_never_fails_a_trial() -> None:
    advisory = Check("judge:r", "judge", False, 0.0, None)
    calibrated = Check("judge:r", "judge", False, 0.0, "high")
    gateable = Check("judge:r", "judge", False, 0.0, "medium")
    assert not advisory.blocks and calibrated.blocks and not gateable.blocks


def test_simulated_judges_err_the_way_they_are_told() -> None:
    rubric = load_rubric(RUBRIC)
    curt = "To complete your application we still need a copy of your passport. Upload them."
    short = JudgeView("p", (curt,), agent_model="gpt-4o")
    careful = ScriptedJudge(judges.quality, noise=0.0)
    lenient = ScriptedJudge(judges.quality, noise=0.0, leniency=1.0)
    own = ScriptedJudge(judges.quality, noise=0.0, model="gpt-4.1-mini", self_preference=1.0)

    def score(judge: ScriptedJudge, view: JudgeView) -> int:
        return asyncio.run(judge.score(rubric, view)).score

    assert score(careful, short) == 2 and score(lenient, short) == 3
    assert score(own, short) == 3  # the agent's model is of its family
    assert score(own, dataclasses.replace(short, agent_model="claude-sonnet-4")) == 2
    noisy = ScriptedJudge(judges.quality, noise=1.0, seed=4)
    assert score(noisy, short) == score(noisy, short)  # seeded by the view: reproducible
    first = JudgeView("p", ("Dear Ana, please send your passport.",))
    biased = ScriptedJudge(judges.quality, noise=0.0, position_bias=2.0)
    winner = asyncio.run(biased.prefer(rubric, short, first)).winner
    assert winner == "1"  # the worse text, shown first, wins on position alone
    assert asyncio.run(careful.prefer(rubric, short, first)).winner == "2"


def _calibrate(store: Path, judge: str) -> str:
    out = CliRunner().invoke(
        main,
        ["calibrate", str(RUBRIC), "--labels", str(KYC / "labels.csv"), "--items",
         str(KYC / "messages.yaml"), "--judge", f"{KYC}/judges.py:{judge}", "--store", str(store)],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    return out.output


def test_calibration_refuses_the_biased_judge_whose_checks_stay_advisory(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    assert "REFUSED: kappa" in _calibrate(db, "lenient")
    with Store(db) as store:
        judged = judged_run([judges.lenient], store, tasks=MISSING_DOCS, trials=4)
        plain = judged_run([judges.careful], Store(":memory:"), tasks=MISSING_DOCS, trials=4)
    checks = judge_checks(judged)
    assert checks and all(c.severity is None and not c.evidence["calibrated"] for c in checks)
    assert all("refused by calibration" in c.evidence["standing"] for c in checks)
    # advisory: the verdicts are those the deterministic checks alone give
    assert [r.status for r in judged.results] == [r.status for r in plain.results]
    assert judged.summary.judges.calibrated_pass_rate is None
    assert judged.summary.judges.advisory_checks == len(checks)


def test_a_calibrated_judge_gates(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    assert "ACCEPTED" in _calibrate(db, "careful")
    with Store(db) as store:
        report = judged_run([judges.careful], store, tasks=MISSING_DOCS, trials=4)
        assert [c.severity for c in judge_checks(report)] == ["high"] * 20
        failed = [r for r in report.results if any(c.kind == "judge" and not c.passed
                                                   for c in r.checks)]  # fmt: skip
        # the agent's curt requests fail the judge, and so the trial
        assert failed and all(r.status in ("partial", "failed") for r in failed)
        deterministic = [c for r in failed for c in r.checks if c.kind != "judge"]
        assert all(c.passed for c in deterministic)
        assert report.summary.judges.calibrated_pass_rate == pytest.approx(1 - len(failed) / 20)
        gates = tmp_path / "gates.yaml"
        gates.write_text("- judge_pass_rate >= 0.95\n- advisory_judge_checks == 0\n")
        out = CliRunner().invoke(
            main, ["gate", report.run_id, "--rules", str(gates), "--store", str(db)]
        )
        assert out.exit_code == 1 and "judge_pass_rate" in out.output
        # a changed rubric is a new version: the record no longer covers it
        edited = load_rubric(RUBRIC).model_copy(update={"question": "Is it clear?"})
        again = judged_run([judges.careful], store, tasks=MISSING_DOCS[:1], rubric=edited)
        [check] = judge_checks(again)
        assert check.severity is None and "rubric changed" in check.evidence["standing"]


def test_judge_verdicts_people_should_see_are_routed(tmp_path: Path) -> None:
    strict = ScriptedJudge(judges.quality, name="strict", noise=0.0, leniency=-0.5)
    kind = ScriptedJudge(judges.quality, name="kind", noise=0.0, leniency=1.5)
    with Store(tmp_path / "p.db") as store:
        report = judged_run([strict, kind], store, tasks=MISSING_DOCS, trials=4)
        queue = review_queue(store_run(store, report.run_id))
    checks = judge_checks(report)
    split = [c for c in checks if not c.evidence["unanimous"]]
    assert split and all(len(c.evidence["members"]) == 2 for c in checks)
    routed = {(i["task_id"], i["trial"]): i for i in queue["items"]}
    for r in report.results:
        [check] = [c for c in r.checks if c.kind == "judge"]
        item = routed.get((r.task_id, r.trial), {"reasons": []})
        assert ("judges_split" in item["reasons"]) == (not check.evidence["unanimous"])
        disagrees = check.passed != all(c.passed for c in r.checks if c.kind in GATING_KINDS)
        assert ("judge_disagreement" in item["reasons"]) == disagrees
        unsure = check.evidence["confidence"] < 0.5
        assert ("judge_unsure" in item["reasons"]) == unsure


def test_a_judge_of_the_agents_family_is_warned_about() -> None:
    own = ScriptedJudge(judges.quality, name="own", model="gpt-4.1-mini")
    other = ScriptedJudge(judges.quality, name="other", model="claude-sonnet-4")
    panel = JudgePanel([own, other])
    warnings = self_preference_warnings(panel, "gpt-4o-2024-08-06")
    assert len(warnings) == 1 and "judge own" in warnings[0] and "openai" in warnings[0]


def test_the_kyc_readme_shows_what_the_commands_print(tmp_path: Path) -> None:
    readme = (KYC / "README.md").read_text(encoding="utf-8")
    db = tmp_path / "p.db"
    for judge in ("lenient", "careful"):
        out = _calibrate(db, judge)
        table_row = next(line for line in out.splitlines() if line.startswith("│ all"))
        assert table_row in readme, f"{judge}: {table_row}"
        verdict = next(line for line in out.splitlines() if line.startswith(("ACC", "REF")))
        assert verdict.rstrip() in readme
    # the second calibration of the rubric is compared with the first
    assert "previous calibration #1" in out and "another judge" in out
    assert "kappa 0.40 → 0.97" in out
    assert kyc_agents().hasty.curt > 0


def test_the_committed_calibration_set_is_what_its_script_writes() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, str(KYC / "make_calibration.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = (KYC / "labels.csv").read_text(encoding="utf-8").splitlines()[1:]
    assert len(rows) == 128 and {r.split(",")[2] for r in rows} == {"Sana Qureshi", "Hamza Malik"}


def test_pairwise_says_when_length_explains_the_preference() -> None:
    from proctor.judge.pairwise import compare_pairwise

    rubric = load_rubric(RUBRIC)
    flat = ScriptedJudge(lambda rubric, view: 3.0, noise=0.0, length_bias=1.0, tie_margin=0.1)
    base = {(f"t{i}", rubric.id): [JudgeView("p", ("Send your passport.",))] for i in range(12)}
    cand = {
        (f"t{i}", rubric.id): [
            JudgeView("p", ("Send your passport." + " Thank you." * (i % 4) * 6,))
        ]
        for i in range(12)
    }
    rubrics = {f"t{i}": [rubric] for i in range(12)}
    report = asyncio.run(compare_pairwise(JudgePanel([flat]), rubrics, base, cand, seed=1))
    length = report["length"]
    assert report["pairs"] == 12 and report["position_consistency"] == 1.0
    assert report["candidate_wins"] == 9 and report["ties"] == 3  # every longer text wins
    assert length["correlation"] > 0.7 and length["explains_preference"]
    assert length["win_rate_at_equal_length"] < report["win_rate"]
    low, high = report["win_rate_ci"]
    assert low <= report["win_rate"] <= high


def test_compare_with_a_judge_pairs_the_runs_rubric_tasks(tmp_path: Path) -> None:
    import json

    db = tmp_path / "p.db"
    with Store(db) as store:
        ids = [
            judged_run([judges.careful], store, tasks=MISSING_DOCS, trials=3, seed=seed).run_id
            for seed in (1, 2)
        ]
    out = CliRunner().invoke(
        main,
        ["compare", *ids, "--store", str(db), "--judge", f"{KYC}/judges.py:careful", "--tasks",
         str(KYC / "tasks" / "cases.yaml"), "--json"],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    pairwise = json.loads(out.output)["pairwise"]
    assert pairwise["pairs"] == 15 and pairwise["tasks"] == 5  # 5 tasks x 3 trials
    assert pairwise["candidate_wins"] + pairwise["baseline_wins"] + pairwise["ties"] == 15
    assert pairwise["judge_calls"] <= 30  # two orders a pair, equal pairs from the cache
    exported = tmp_path / "run.jsonl"
    CliRunner().invoke(main, ["export", ids[0], "--out", str(exported), "--store", str(db)])
    refused = CliRunner().invoke(
        main,
        ["compare", str(exported), ids[1], "--store", str(db), "--judge",
         f"{KYC}/judges.py:careful"],
    )  # fmt: skip
    assert refused.exit_code == 2 and "exported run files carry no traces" in refused.output


def test_a_calibrated_judge_counts_only_the_checks_its_tasks_let_decide() -> None:
    """A task whose judge entry is advisory keeps its checks advisory under a calibrated
    judge: the report does not count them among the checks that decide."""
    from proctor.core.summary import Judges
    from proctor.report.judge_tables import judge_statements

    row = {"version": "v1", "calibrated": True, "reason": "calibrated #3", "record": {}}
    manifest = Manifest.from_json(
        {
            "trials": 1,
            "agent": {"name": "a"},
            "suite": {"name": "s", "digest": "d"},
            "judges": {"name": "careful", "rubrics": {"tone": row}, "warnings": []},
        }
    )
    counts = {"checks": 5, "passed": 4, "calibrated": 3, "calibrated_passed": 2}
    figures = Judges.model_validate({"by_rubric": {"judge:tone": counts}})
    [line, _spent] = judge_statements(manifest, figures)
    assert (
        "its checks count (2/3 passed; 2 more advisory by their task's judge entry, 2 passed)"
        in line
    )
