"""Imported eval sets judged as their tools judge them with a model: an ADK final response
compared with the agent's answer, tau2's natural-language assertions held, each task's
own text shown to the judge as its reference, run through the gateway."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import proctor, shared_data
from proctor import Plan, ScriptedAgent, Step, load_suite
from proctor.env.suite import Suite
from proctor.judge.calibration_records import CalibrationPolicy, Standing
from proctor.judge.grader import Judging
from proctor.judge.judgment import JudgeView
from proctor.judge.panel import JudgePanel
from proctor.judge.scripted_judge import ScriptedJudge
from proctor.run import Runner
from proctor.tasks.models import JudgeExpect
from proctor.tasks.rubrics import Rubric
from test_import_adk import DOMAIN, invocation

REFERENCE = "Order ORD-77 holds x=1."
MATCHING = "Done: order ORD-77 now holds x=1."
#: Mentions every number and identifier of the reference (must_mention passes) and says
#: the opposite: only a judge comparing with the reference can fail it.
CONTRADICTING = "Order ORD-77 could not take x=1: it holds nothing."
EVALSET: dict[str, Any] = {
    "eval_set_id": "shop_set",
    "eval_cases": [
        {
            "eval_id": "add_x",
            "conversation": [invocation("Add one x.", [("a", {"x": 1})], REFERENCE)],
            "rubrics": [
                {"rubric_id": "r1", "rubric_content": {"text_property": "The agent is polite."}}
            ],
        }
    ],
}
ADD_X = (Step("a", {"x": 1}),)


def words(text: str) -> set[str]:
    return {w.strip(".,:;").casefold() for w in text.split()}


def careful(seen: list[JudgeView]) -> Callable[[Rubric, JudgeView], float]:
    """What a careful reader scores: top when the answer says all the reference says and
    negates nothing, lowest otherwise; no reference, nothing to compare with."""

    def truth(rubric: Rubric, view: JudgeView) -> float:
        seen.append(view)
        reference = dict(view.shown).get("reference")
        if not reference:
            return rubric.scores[0]
        said = words(view.text)
        denied = said & {"not", "nothing", "no", "never"}
        holds = words(reference) <= said and not denied
        return rubric.scores[-1] if holds else rubric.scores[0]

    return truth


def judged(suite: Suite, truth: Any, calibrated: bool = False) -> Judging:
    """The Judging of `suite` by a noiseless ScriptedJudge of `truth`; `calibrated` as if
    the judge had a calibration record meeting the policy on every rubric."""
    judge = ScriptedJudge(truth, noise=0.0)
    rubrics = [r for t in suite.tasks for r in t.rubrics]
    judging = Judging.prepare(
        JudgePanel([judge]), [judge.name], rubrics, None, CalibrationPolicy(), "m"
    )
    if calibrated:
        judging.standings = {v: Standing(True, "calibrated (test)") for v in judging.standings}
    return judging


@pytest.fixture
def adk(tmp_path: Path) -> Path:
    (tmp_path / "domain.py").write_text(DOMAIN)
    (tmp_path / "shop.evalset.json").write_text(json.dumps(EVALSET))
    done = proctor(
        "import", "adk", str(tmp_path / "shop.evalset.json"), "--domain", "shop",
        "--out", str(tmp_path / "tasks"), "--rubric-dir", str(tmp_path / "rubrics"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return tmp_path


def adk_run(world: Path, answer: str) -> tuple[dict[str, Any], list[JudgeView]]:
    suite = load_suite([world])
    seen: list[JudgeView] = []
    judging = judged(suite, careful(seen))
    agent = ScriptedAgent({"add_x": Plan(ADD_X, answer)})
    result = Runner(suite, agent, timeout_s=None, judging=judging).run().results[0]
    return {c.name: c for c in result.checks}, seen


def test_an_adk_final_response_is_the_judge_reference(adk: Path) -> None:
    task = yaml.safe_load((adk / "tasks" / "add_x.yaml").read_text())
    assert task["expect"]["judge"] == [
        {"rubric": "../rubrics/final-response-match.yaml", "reference": REFERENCE},
        {"rubric": "../rubrics/assertions-hold.yaml", "reference": "- The agent is polite."},
    ]
    assert sorted(p.name for p in (adk / "rubrics").iterdir()) == [
        "assertions-hold.yaml",
        "final-response-match.yaml",
    ]
    assert proctor("validate", str(adk)).returncode == 0


def test_a_contradicting_answer_fails_the_judge_a_matching_one_passes(adk: Path) -> None:
    good, seen = adk_run(adk, MATCHING)
    bad, _ = adk_run(adk, CONTRADICTING)
    for checks in (good, bad):  # the deterministic reading cannot tell them apart
        assert checks["mentions:ORD-77"].passed and checks["mentions:1"].passed
    assert good["judge:final-response-match"].passed
    assert not bad["judge:final-response-match"].passed
    shown = [dict(v.shown) for v in seen]
    assert {"reference": REFERENCE} in shown  # the judge was shown this task's response
    assert {
        "reference": "- The agent is polite.",
        "messages": shown[1]["messages"],
        "tool_calls": shown[1]["tool_calls"],
    } in shown
    assert shown[1]["tool_calls"][0]["tool"] == "a"


AGENTS = """
from proctor import Plan, ScriptedAgent, Step

agent = ScriptedAgent({"add_x": Plan((Step("a", {"x": 1}),), %r)})
"""
JUDGE = """
from proctor import ScriptedJudge

judge = ScriptedJudge(lambda rubric, view: rubric.scores[-1], noise=0.0)
"""


def test_without_a_judge_the_judge_checks_are_not_run(adk: Path) -> None:
    (adk / "agents.py").write_text(AGENTS % MATCHING)
    (adk / "judges.py").write_text(JUDGE)
    common = ("run", str(adk), "--agent", f"{adk / 'agents.py'}:agent", "--store")
    plain = proctor(*common, str(adk / "a.db"), "--json", str(adk / "a.json"))
    assert plain.returncode == 0, plain.stderr
    assert "tasks have rubrics but no --judge: their judge checks are not run" in plain.stderr
    summary = json.loads((adk / "a.json").read_text())
    assert summary["judges"]["checks"] == 0
    judge = f"{adk / 'judges.py'}:judge"
    done = proctor(*common, str(adk / "b.db"), "--json", str(adk / "b.json"), "--judge", judge)
    assert done.returncode == 0, done.stderr
    assert json.loads((adk / "b.json").read_text())["judges"]["checks"] == 2


def test_the_chat_judge_reads_the_reference_as_data(adk: Path) -> None:
    pytest.importorskip("openai", reason="the openai client is not installed")
    from openai_server import ScriptedChatServer, judge_reply
    from proctor.judge.chat_judge import ChatJudge

    suite = load_suite([adk])
    with ScriptedChatServer([judge_reply(3), judge_reply(3)]) as server:
        judge = ChatJudge("gpt-4.1-mini", base_url=server.url, api_key="k")
        rubrics = [r for t in suite.tasks for r in t.rubrics]
        judging = Judging.prepare(
            JudgePanel([judge]), ["chat"], rubrics, None, CalibrationPolicy(), "m"
        )
        agent = ScriptedAgent({"add_x": Plan(ADD_X, MATCHING)})
        Runner(suite, agent, timeout_s=None, judging=judging).run()
    text = "\n".join(m["content"] for m in server.requests[0]["messages"])
    heading = "the task's reference, which the rubric compares with"
    pair = f'"datum": "{heading}",\n  "content": {json.dumps(REFERENCE)}'
    assert pair in text


def test_rubric_files_are_never_overwritten_nor_read_as_tasks(adk: Path) -> None:
    def into(name: str, rubric_dir: Path) -> Any:
        (adk / name).mkdir()
        (adk / name / "domain.py").write_text(DOMAIN)
        out = ("--out", str(adk / name / "tasks"), "--rubric-dir", str(rubric_dir))
        return proctor("import", "adk", str(adk / "shop.evalset.json"), "--domain", "shop", *out)

    inside = into("inside", adk / "inside" / "tasks" / "rubrics")
    assert inside.returncode == 2 and "inside the task folder" in inside.stderr
    assert not (adk / "inside" / "tasks").exists()
    same = into("same", adk / "rubrics")
    assert same.returncode == 0, same.stderr  # the same rubric content is kept
    (adk / "other").mkdir()
    (adk / "other" / "final-response-match.yaml").write_text(
        (adk / "rubrics" / "final-response-match.yaml").read_text().replace("any words", "prose")
    )
    clash = into("clash", adk / "other")
    assert clash.returncode == 2 and "would overwrite a different rubric" in clash.stderr
    assert not (adk / "clash" / "tasks").exists()
    assert not (adk / "other" / "assertions-hold.yaml").exists()


def test_a_reference_needs_a_rubric_that_shows_it(adk: Path) -> None:
    path = adk / "tasks" / "add_x.yaml"
    task = yaml.safe_load(path.read_text())
    task["expect"]["judge"][0].pop("reference")
    path.write_text(yaml.safe_dump(task, sort_keys=False))
    done = proctor("validate", str(adk))
    assert done.returncode == 2
    assert "shows the task's `reference`: give it beside `rubric`" in done.stderr
    assert "add_x.yaml:" in done.stderr
    rubric = adk / "rubrics" / "assertions-hold.yaml"
    rubric.write_text(rubric.read_text().replace("- reference\n", ""))
    task["expect"]["judge"] = task["expect"]["judge"][1:]
    path.write_text(yaml.safe_dump(task, sort_keys=False))
    done = proctor("validate", str(adk))
    assert "does not show `reference`: the judge would never see it" in done.stderr


def test_a_judge_entry_without_the_new_fields_keeps_its_digest() -> None:
    assert JudgeExpect(rubric="r.yaml").model_dump(mode="json") == {"rubric": "r.yaml"}


TAU2 = shared_data("tau2-mock")
needs_tau2 = pytest.mark.skipif(not TAU2.exists(), reason="shared tau2 data absent")


def tau2_suite(tmp_path: Path, gating: str | None = None) -> Suite:
    """The mock domain imported with rubrics; `gating`: a task given NL_ASSERTION."""
    source = tmp_path / "tau2"
    shutil.copytree(TAU2, source)
    tasks = json.loads((source / "tasks.json").read_text())
    for task in tasks:
        if task["id"] == gating:
            task["evaluation_criteria"]["reward_basis"] = ["DB", "COMMUNICATE", "NL_ASSERTION"]
    (source / "tasks.json").write_text(json.dumps(tasks, indent=1))
    out = tmp_path / "out" / "tasks"
    done = proctor(
        "import",
        "tau2",
        str(source),
        "--out",
        str(out),
        "--rubric-dir",
        str(out.parent / "rubrics"),
    )
    assert done.returncode == 0, done.stderr
    return load_suite([out])


def gold_plans() -> dict[str, Plan]:
    plans = {}
    for task in json.loads((TAU2 / "tasks.json").read_text()):
        criteria = task.get("evaluation_criteria") or {}
        steps = tuple(
            Step(a["name"], a.get("arguments", {})) for a in criteria.get("actions") or []
        )
        plans[task["id"]] = Plan(steps, " ".join(criteria.get("communicate_info") or []) or "Done.")
    return plans


def tau2_results(suite: Suite, calibrated: bool) -> dict[str, Any]:
    """Gold replays judged by a judge that fails every assertion, counted or not."""
    seen: list[JudgeView] = []

    def unmet(rubric: Rubric, view: JudgeView) -> float:
        seen.append(view)
        return rubric.scores[0]

    judging = judged(suite, unmet, calibrated)
    results = Runner(suite, ScriptedAgent(gold_plans()), timeout_s=None, judging=judging).run()
    assert any("- The user is complimented" in dict(v.shown)["reference"] for v in seen)
    return {r.task_id: r for r in results.results}


@needs_tau2
def test_tau2_assertions_outside_the_reward_basis_never_decide(tmp_path: Path) -> None:
    suite = tau2_suite(tmp_path)
    judged_ids = {t.id for t in suite.tasks if t.rubrics}
    assert len(judged_ids) == 8  # every task with natural-language assertions
    assert all(e.advisory for t in suite.tasks for e in t.task.expect.judge)
    results = tau2_results(suite, calibrated=True)
    failed = {i for i, r in results.items() if not r.passed}
    assert failed == {"update_task_with_history_and_env_assertions"}  # as without a judge
    checks = [c for r in results.values() for c in r.checks if c.kind == "judge"]
    assert len(checks) == 8 and not any(c.passed or c.blocks for c in checks)
    assert all(c.evidence["calibrated"] and c.severity is None for c in checks)


@needs_tau2
def test_tau2_assertions_in_the_reward_basis_decide_once_calibrated(tmp_path: Path) -> None:
    suite = tau2_suite(tmp_path, gating="create_task_1_nl_eval")
    entry = suite.select(ids=["create_task_1_nl_eval"]).tasks[0].task.expect.judge[0]
    assert not entry.advisory and entry.reference == (
        "- The task is created successfully\n- The user is complimented"
    )
    assert not tau2_results(suite, calibrated=True)["create_task_1_nl_eval"].passed
    assert tau2_results(suite, calibrated=False)["create_task_1_nl_eval"].passed
