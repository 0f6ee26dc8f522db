"""The Markdown one-pager: the figures of the JSON summary, in words, on one page."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import proctor
from proctor import Store
from proctor.decide.gate import load_rules
from proctor.report.inputs import gather
from proctor.report.markdown import code, esc, render_markdown
from report_runs import EXAMPLES, PWN, StoredRun, run_example, run_hostile

#: A printed page holds about 60 lines of rendered Markdown at a normal size.
PAGE_LINES = 60


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


@pytest.mark.parametrize(
    ("suite", "agent", "trials"),
    [("clinical", "sloppy", 5), ("support", "careless", 3), ("adversarial", "gullible", 3)],
)
def test_markdown_states_the_figures_of_the_json_summary(
    tmp_path: Path, suite: str, agent: str, trials: int
) -> None:
    folder = str(EXAMPLES / suite)
    db, summary_path, md = tmp_path / "p.db", tmp_path / "s.json", tmp_path / "r.md"
    done = proctor(
        "run",
        folder,
        "--agent",
        f"{folder}/agents.py:{agent}",
        "--trials",
        str(trials),
        "--store",
        str(db),
        "--json",
        str(summary_path),
        "--quiet",
    )
    assert done.returncode == 0, done.stderr
    done = proctor("report", "latest", "--store", str(db), "--md", str(md))
    assert done.returncode == 0, done.stderr
    s = json.loads(summary_path.read_text())
    text = md.read_text(encoding="utf-8")

    def figure(pattern: str) -> tuple[str, ...]:
        match = re.search(pattern, text)
        assert match, pattern
        return match.groups()

    k = s["trials_per_task"]
    rate, tasks, low, high = figure(
        r"Task success: \*\*(\S+)\*\*, the mean over (\d+) tasks? of each task's pass rate "
        r"\(pass@1: a single attempt succeeds this often; 95% CI (\S+)–(\S+), clustered by task\)"
    )
    assert (rate, int(tasks)) == (pct(s["success_rate"]), s["tasks"])
    assert rate == pct(s["pass_at_k"]["1"])  # one definition: pass@1 is the success rate
    assert (low, high) == (pct(s["success_ci"][0]), pct(s["success_ci"][1]))
    passed, valid, pooled, partial = figure(
        r"Pooled over trials: (\d+) of (\d+) valid trials passed \((\S+)\); (\S+) were partial"
    )
    assert (int(passed), int(valid)) == (s["passed_trials"], s["valid_trials"])
    assert (pooled, partial) == (pct(s["pooled_success_rate"]), pct(s["partial_rate"]))
    assert figure(rf"pass\^{k}: \*\*(\S+)\*\*") == (pct(s["pass_hat_k"][str(k)]),)
    always = sum(1 for row in s["per_task"] if row["n"] and row["passed"] == row["n"])
    assert figure(r"Of (\d+) tasks?, (\d+) always succeeded") == (str(s["tasks"]), str(always))
    total, severities = figure(r"(\d+) safety violations? \(([^)]*)\)")
    assert int(total) == s["safety_violations"]["total"] > 0
    stated = {sev: int(n) for n, sev in re.findall(r"(\d+) (\w+)", severities)}
    assert stated == s["safety_violations"]["by_severity"]
    cost_total, per_success = figure(r"Total \$(\S+) for \d+ trials; ([^;]+);")
    assert float(cost_total) == pytest.approx(s["cost"]["total_usd"], abs=5e-5)
    expected = s["cost"]["per_passed_trial_usd"]
    assert per_success == (
        "no trial passed" if expected is None else f"${expected:.4f} per passed trial"
    )
    latency, calls = figure(r"p95 latency (\S+) s and p95 (\d+) tool calls")
    assert float(latency) == pytest.approx(s["latency_s"]["p95"], abs=5e-3)
    assert int(calls) == round(s["tool_calls"]["p95"])
    assert figure(r"was given (\d+) tasks?") == (str(s["tasks"]),)
    assert len(text.splitlines()) <= PAGE_LINES


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, StoredRun]:
    store = Store(tmp_path_factory.mktemp("md") / "p.db")
    out = {name: run_example(store, name) for name in ("support", "clinical", "adversarial")}
    out["hostile"] = run_hostile(store)
    return out


def test_violations_are_listed_one_by_one(runs: dict[str, StoredRun]) -> None:
    stored = runs["support"]
    text = render_markdown(gather(stored.run))
    lines = text.splitlines()
    for v in stored.run.summary.safety_violations.trials:
        head = f"- {v.severity}: {code(v.check)} on {code(v.task_id)}, trial"
        (line,) = [line for line in lines if line.startswith(head)]
        assert str(v.trial) in re.findall(r"\d+", line.split(", trial")[1])
    # Longer lists are capped to keep one page, and say how many lines are elsewhere.
    clinical = render_markdown(gather(runs["clinical"].run))
    assert re.search(r"^- … \d+ more in the HTML report\.$", clinical, re.M)
    assert len(clinical.splitlines()) <= PAGE_LINES


def test_escalation_is_reported_from_the_checks(runs: dict[str, StoredRun]) -> None:
    stored = runs["adversarial"]
    checks = [c for r in stored.run.results for c in r.checks if c.name == "escalated"]
    assert checks
    ok = sum(c.passed for c in checks)
    text = render_markdown(gather(stored.run))
    assert f"escalated to a human in {ok} of {len(checks)} trials that required it" in text
    support = render_markdown(gather(runs["support"].run))
    assert "no task in this suite tested handing off to a human" in support


def test_recommendation_follows_the_figures(runs: dict[str, StoredRun]) -> None:
    stored = runs["support"]
    rules = [r for r in load_rules(EXAMPLES / "support" / "gates.yaml") if r.kind == "test"]
    failed = render_markdown(gather(stored.run, rules=rules))
    assert "**Recommendation: do not release.** The release gate failed" in failed
    assert "Gate FAILED" in failed
    no_gate = render_markdown(gather(stored.run))
    severe = stored.run.summary.safety_violations.by_severity
    blocking = severe.get("critical", 0) + severe.get("high", 0)
    assert blocking == 6  # careless cancels B-200 and the missing C-404, three trials each
    assert f"**Recommendation: do not release.** The run had {blocking} critical or high" in no_gate


def test_a_clean_run_is_not_praised_without_a_gate(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.db")
    from proctor import Runner
    from proctor.agents import load_agent
    from proctor.env.suite import load_suite
    from proctor.store.export import store_run

    ref = f"{EXAMPLES}/support/agents.py:scripted"
    suite = load_suite([EXAMPLES / "support"])
    report = Runner(suite, load_agent(ref), trials=3, store=store, agent_ref=ref).run()
    run = store_run(store, report.run_id)
    text = render_markdown(gather(run))
    assert "**Recommendation: no release decision yet.** No release gate was evaluated" in text
    rules = [r for r in load_rules(EXAMPLES / "support" / "gates.yaml") if r.kind == "test"]
    gated = render_markdown(gather(run, rules=rules))
    assert "**Recommendation: may proceed, after human review.** The release gate passed" in gated
    queued = gather(run).queue["queued"]
    assert f"read the {queued} trial" in gated


def test_names_from_task_files_stay_text(runs: dict[str, StoredRun], tmp_path: Path) -> None:
    rules = tmp_path / "gates.yaml"
    rules.write_text(
        "- rule: task_success_rate >= 0.5\n"
        f"  where: {{tag: '<b>{PWN}</b>'}}\n"
        "- rule: task_success_rate >= 0.9\n"
        "  where: {tag: '`x` **y** [z](javascript:alert(1))'}\n"
    )
    text = render_markdown(gather(runs["hostile"].run, rules=load_rules(rules)))
    assert f"on `tag=<b>{PWN}</b>`:" in text
    assert "on ``tag=`x` **y** [z](javascript:alert(1))``:" in text
    # Outside code spans, no raw angle bracket or link syntax survives (a backslash-escaped
    # one is text: the recommendation names the failed rules, `>=` and slices included).
    outside = re.sub(r"(`+).*?\1", "", text)
    assert not re.search(r"(?<!\\)[<>]|(?<!\\)\]\(", outside)
    assert "\\<b\\>" in outside  # the hostile slice is named, escaped
    assert "hostile\\_agent" in text  # free text is escaped, not code
    assert esc("a <b>|*c*") == r"a \<b\>\|\*c\*"
    assert code("x`y") == "``x`y``" and code("`x") == "`` `x ``"
