"""A figure some model calls left out is a lower bound, and every reader says so.

A trial whose agent made three model calls, two priced and one not, spent at least the two
calls' cost: shown as a total, a report under-states it and a cost gate passes on it. So
the trial's usage marks the figure `partial` (stored with it), the summary counts such
trials, the reports print the figure as "≥", and a gate on it fails, saying why — what a
budget check already did for one trial (docs/architecture.md, Verdicts: Usage).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from judge_runs import judged_run
from openai_server import ScriptedChatServer, judge_reply, without_usage
from proctor import AgentResult, Runner, Store, load_suite
from proctor.api.decisions import gate, run_data
from proctor.core.results import TrialResult, Usage
from proctor.core.trace import USER_SIM_KEY, TraceEvent
from proctor.decide.compare import Pairing, paired_metric
from proctor.decide.summarize import (
    EFFICIENCY_WEIGHTS,
    LATENCY_BASELINE_S,
    combined_efficiency,
    model_spending,
)
from proctor.judge.chat_judge import ChatJudge
from proctor.report.fmt import spent_text
from proctor.report.html import render_html
from proctor.report.inputs import gather
from proctor.report.markdown import render_markdown
from proctor.report.terminal import cost_text
from proctor.report.trace_text import print_trace
from proctor.run.simulator import user_spending
from proctor.store.export import store_run
from proctor.store.sqlite import encode_trial

MINI = Path(__file__).parent / "fixtures" / "mini"
READ = load_suite(MINI).select(ids=["read-item"])


async def read_a(toolbox: Any) -> str:
    got = await toolbox.call("items.get", {"item_id": "a"})
    return f"Item a is {got.value['colour']}."


def agent_with(calls: list[dict[str, Any]], total: Usage | None = None) -> Any:
    """An agent that records `calls` as its model calls, reads item a and answers, with
    its own usage `total` when given."""

    async def agent(input: Any, toolbox: Any) -> Any:
        for call in calls:
            toolbox.record_model_call(model="m", **call)
        answer = await read_a(toolbox)
        return answer if total is None else AgentResult(answer, total)

    return agent


PRICED = {"input_tokens": 100, "output_tokens": 10, "cost_usd": 0.004}
UNPRICED = {"input_tokens": 100, "output_tokens": 10}
SILENT: dict[str, Any] = {}
ALL = ("input_tokens", "output_tokens", "cost_usd")


def stored_run(tmp_path: Path, agent: Any, trials: int = 2) -> tuple[Any, Path]:
    """The run's report, its results read before the store closes, and the store's path."""
    db = tmp_path / "p.db"
    with Store(db) as store:
        report = Runner(READ, agent, trials=trials, store=store).run()
        assert report.results
    return report, db


def rule_row(db: Path, run_id: str, rule: str, tmp_path: Path) -> dict[str, Any]:
    """The gate's row for `rule` (a gates file of it alone) on the stored run."""
    rules = tmp_path / "gates.yaml"
    rules.write_text(f"rules:\n  - {rule}\n")
    with Store(db) as store:
        verdict = gate(run_id, rules, store=store)
    [row] = [r for r in verdict.report["rules"] if r["rule"] == rule]
    return row


def test_a_run_with_an_unpriced_call_reports_its_cost_as_a_lower_bound(tmp_path: Path) -> None:
    report, db = stored_run(tmp_path, agent_with([PRICED, PRICED, UNPRICED]))
    for result in report.results:
        assert result.usage.cost_usd == pytest.approx(0.008)
        assert result.usage.partial == ("cost_usd",)  # every call counted its tokens
    with Store(db) as store:  # stored with the trial, read back as it was
        run = store.run(report.run_id)
        assert [r.usage for r in store.trial_results(report.run_id)] == [
            r.usage for r in report.results
        ]
    summary = report.summary
    assert (summary.cost.partial_trials, summary.tokens.partial_trials) == (2, 0)
    assert run["summary"]["cost"]["partial_trials"] == 2
    assert cost_text(summary).startswith("≥ $0.0080 (a lower bound: 2 trials made model calls")
    assert cost_text(summary, "mean", "p95") == "≥ $0.0080 / ≥ $0.0080"
    with Store(db) as store:
        data = run_data(report.run_id, store)
        page = render_html(
            gather(data), lambda task, trial: store.trace(report.run_id, task, trial)[0]
        )
        trace = store.trace(report.run_id, "read-item", 0)[0]
        text = render_markdown(gather(data))
    assert re.search(r"Total ≥ \$0\.0160 for 2 trials \(a lower bound: 2 trials", text), text
    assert "≥ $0.0080" in page and "a lower bound: 2 trials made model calls" in page
    [row] = summary.per_task  # the task's row and its cell in the report's table
    assert (row.cost_usd, row.cost_partial_trials) == (pytest.approx(0.016), 2)
    assert "≥ $0.0160" in page
    console = Console(record=True, width=200)
    print_trace(report.results[0], trace, console)
    assert "300 in / 30 out tokens · ≥ $0.0080 · seed" in console.export_text()
    # the wrong pass: $0.016 seems within $0.02, but the unpriced call spent something
    row = rule_row(db, report.run_id, "total_cost_usd <= 0.02", tmp_path)
    assert row["status"] == "fail", row
    assert "a lower bound: 2 trials made model calls that reported no cost" in row["reason"]
    tokens = rule_row(db, report.run_id, "mean_tokens <= 1000", tmp_path)
    assert tokens["status"] == "pass", tokens  # every call counted its tokens


def test_a_fully_measured_run_shows_totals_and_its_gates_read_them(tmp_path: Path) -> None:
    """The other side: with every call priced nothing is a lower bound."""
    report, db = stored_run(tmp_path, agent_with([PRICED, PRICED]))
    summary = report.summary
    assert (summary.cost.partial_trials, summary.tokens.partial_trials) == (0, 0)
    assert all(r.usage.partial == () for r in report.results)
    assert cost_text(summary) == "$0.0080"
    assert "cost_partial_trials" not in summary.per_task[0].to_json()
    with Store(db) as store:
        stored = store.select("usage", "SELECT usage FROM trials")
    assert all('"partial"' not in text for (text,) in stored)  # the stored form unchanged
    assert rule_row(db, report.run_id, "total_cost_usd <= 0.02", tmp_path)["status"] == "pass"


@pytest.mark.parametrize(
    ("calls", "total", "partial"),
    [
        ([PRICED, SILENT], None, ALL),
        # the agent's own total above the calls' sum counted what they left out
        ([PRICED, SILENT], Usage(input_tokens=500, output_tokens=50, cost_usd=0.02), ()),
        # ... a total not above it says nothing more than the calls: still a lower bound
        ([PRICED, SILENT], Usage(input_tokens=500, output_tokens=5, cost_usd=0.004), ALL[1:]),
        ([PRICED, UNPRICED], Usage(cost_usd=0.001), ("cost_usd",)),
    ],
)
def test_an_agent_s_own_total_above_the_calls_is_its_word(
    tmp_path: Path, calls: list[dict[str, Any]], total: Usage | None, partial: tuple[str, ...]
) -> None:
    report, _ = stored_run(tmp_path, agent_with(calls, total), trials=1)
    [result] = report.results
    assert result.usage.partial == partial


def test_a_model_call_that_reports_nothing_makes_every_figure_partial(tmp_path: Path) -> None:
    report, _ = stored_run(tmp_path, agent_with([PRICED, SILENT]), trials=1)
    summary = report.summary
    assert report.results[0].usage.partial == ALL
    assert (summary.cost.partial_trials, summary.tokens.partial_trials) == (1, 1)


def test_a_stored_usage_without_the_mark_reads_as_a_total() -> None:
    """Rows stored before the mark existed read back with none (their figures were
    shown as totals then; nothing recorded says otherwise)."""
    assert Usage.stored({"cost_usd": 0.1, "model_calls": 2}).partial == ()
    assert Usage.stored({"cost_usd": 0.1, "partial": ["cost_usd"]}).partial == ("cost_usd",)


# -- sums (property) ---------------------------------------------------------------------------

CALL = st.builds(
    Usage,
    input_tokens=st.none() | st.integers(0, 10**6),
    output_tokens=st.none() | st.integers(0, 10**6),
    cost_usd=st.none() | st.integers(0, 10**4).map(lambda c: c / 64),  # exact sums
    model_calls=st.just(1),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(CALL, min_size=1, max_size=6), st.randoms(use_true_random=False))
def test_a_sum_of_calls_is_partial_where_some_reported_a_figure_and_some_not(
    calls: list[Usage], rng: Any
) -> None:
    expected = tuple(
        name for name in ALL if {getattr(c, name) is None for c in calls} == {True, False}
    )
    total = sum(calls, Usage())
    assert total.partial == expected
    shuffled = calls[:]
    rng.shuffle(shuffled)
    again = sum(shuffled, Usage())  # in any order, the same mark and sums
    assert (again.partial, again.to_dict()) == (total.partial, total.to_dict())
    assert Usage.stored(total.to_dict()) == total


# -- the judges' and the simulated user's spending ----------------------------------------------


def test_judges_whose_calls_partly_reported_usage_spend_at_least_that(tmp_path: Path) -> None:
    """Two judges on a panel, one server reporting no usage: the trial's judge usage is
    the reporting judge's, a lower bound; the summary and the judges' line say so."""
    with (
        ScriptedChatServer([judge_reply(4)]) as counted,
        ScriptedChatServer([without_usage(judge_reply(4))]) as silent,
        Store(tmp_path / "p.db") as store,
    ):
        judges = [
            ChatJudge("gpt-4.1-mini", base_url=server.url, api_key="k", name=name)
            for server, name in ((counted, "counted"), (silent, "silent"))
        ]
        report = judged_run(judges, store, tasks=("kyc-case-03",))
    [result] = report.results
    assert result.metrics["judge_calls"] == 2.0
    assert result.metrics["judge_partial_cost_usd"] == 1.0
    figures = report.summary.judges
    assert figures is not None and figures.cost_usd is not None and figures.cost_usd > 0
    assert figures.partial == list(ALL)
    assert re.match(r"≥ [\d,]+ tokens, ≥ \$", spent_text(figures))


def test_a_trial_s_usage_as_stored_keeps_the_mark() -> None:
    """What `encode_trial` writes for a partial usage, and only for one."""
    partial = Usage(100, 10, 0.004, 2)
    partial.partial = ("cost_usd",)
    for usage, mark in ((partial, ',"partial":["cost_usd"]'), (Usage(100, 10, 0.004, 2), "")):
        result = TrialResult("r", "t", 0, 1, "passed", usage=usage)
        text = encode_trial(result, None, None, None).row[9]
        assert text.endswith(f'"model_calls":2{mark}}}'), text


def test_a_user_model_whose_calls_partly_reported_usage_spent_at_least_that() -> None:
    """The model user's notes: one call priced, one not, one reply replayed (no call, no
    spending): the trial's cost is marked a lower bound, its tokens are not; the run's
    figures say the same."""
    spent = [
        {"calls": 1, "input_tokens": 300, "output_tokens": 40, "cost_usd": 0.001},
        {"calls": 1, "input_tokens": 300, "output_tokens": 40},
        {"calls": 0},
    ]
    events = [
        TraceEvent(i + 1, 0.0, "note", {USER_SIM_KEY: {"spent": s}}) for i, s in enumerate(spent)
    ]
    metrics = user_spending(events)
    assert metrics["user_cost_usd"] == 0.001 and metrics["user_partial_cost_usd"] == 1.0
    assert "user_partial_input_tokens" not in metrics
    assert model_spending([(metrics, 1)], "user")["partial"] == ["cost_usd"]
    # trials apart: one priced its call, another made a call that reported nothing
    other = user_spending(events[1:2])
    priced = user_spending(events[:1])
    assert model_spending([(priced, 1), (other, 1)], "user")["partial"] == ["cost_usd"]
    assert "partial" not in model_spending([(priced, 1)], "user")


def test_a_candidate_s_unpriced_calls_cannot_make_it_non_inferior_on_cost(tmp_path: Path) -> None:
    """Baseline: three priced calls a trial ($0.012). Candidate: one priced, two not: its
    lower bound ($0.004) would pass non-inferiority at any margin; its trials' cost is
    not measured instead, so no task pairs and the figure proves nothing."""
    db = tmp_path / "p.db"
    with Store(db) as store:
        runs = [
            Runner(READ, agent_with(calls), trials=3, store=store).run().run_id
            for calls in ([PRICED] * 3, [PRICED, UNPRICED, UNPRICED])
        ]
        base, cand = (store_run(store, run_id) for run_id in runs)
    metric = paired_metric("mean_cost_usd")
    assert metric is not None
    pairing = Pairing(base, cand)
    figure = pairing.figure(metric, pairing.tasks, margin=0.001)
    assert figure["tasks"] == 0 and figure["non_inferior"]["passed"] is False
    tokens = paired_metric("mean_tokens")  # every call counted its tokens: they pair
    assert tokens is not None and pairing.figure(tokens, pairing.tasks)["tasks"] == 1


def test_a_complete_figure_is_none_where_it_is_only_a_lower_bound() -> None:
    """What comparisons and monitors read: a total only where every call reported it."""
    usage = Usage(100, 10, 0.004, 2, partial=("cost_usd",))
    assert (usage.complete("cost"), usage.complete("tokens")) == (None, 110.0)
    assert Usage(100, 10, 0.004, 2).complete("cost") == 0.004
    assert Usage(model_calls=1).complete("tokens") is None  # nothing measured


def test_tokens_that_are_a_lower_bound_do_not_score_efficiency(tmp_path: Path) -> None:
    """Seed 003's combined score reads tokens only where every call counted them: 110
    tokens of one call, with another call that counted none, would score as frugal."""
    report, _ = stored_run(tmp_path, agent_with([PRICED, SILENT]), trials=1)
    [result] = report.results
    latency = min(LATENCY_BASELINE_S / max(result.latency_s, 1e-3), 1.0)
    assert combined_efficiency(result, None) == pytest.approx(latency)  # tokens left out
    counted, _ = stored_run(tmp_path / "all", agent_with([PRICED, PRICED]), trials=1)
    weighed = EFFICIENCY_WEIGHTS["tokens"] * 1.0 + EFFICIENCY_WEIGHTS["latency"] * latency
    expected = weighed / (EFFICIENCY_WEIGHTS["tokens"] + EFFICIENCY_WEIGHTS["latency"])
    assert combined_efficiency(counted.results[0], None) == pytest.approx(expected)
