"""The Python API the CLI stands on: `proctor.evaluate` makes the run `proctor run` makes.

Every example suite runs through both, with one seed; their summaries and trials agree
except in what names the run (its id, wall time, trace ids). Then the decisions on a
RunResult (gate, compare, report) and the inputs evaluate refuses before any trial.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import proctor
from proctor.cli import main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
#: Every example suite, with an agent of its own that fails some tasks.
SUITES = {
    "clinical": "scripted",
    "support": "careless",
    "incident": "naive",
    "kyc": "hasty",
    "rooms": "hasty",
    "adversarial": "gullible",
}
#: What differs between two runs of one seed: the run's name and the clock.
NAMING = {"run_id", "trace_id", "wall_time_s", "latency_s", "created_at"}


def _named_out(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _named_out(v) for k, v in value.items() if k not in NAMING}
    if isinstance(value, list):
        return [_named_out(v) for v in value]
    return value


def _trials(results: list[Any]) -> list[Any]:
    rows = [_named_out(r.to_dict()) for r in results]
    return sorted(rows, key=lambda row: (row["task_id"], row["trial"]))


@pytest.mark.parametrize("example", sorted(SUITES))
def test_evaluate_agrees_with_the_cli(example: str, tmp_path: Path) -> None:
    agent = f"{EXAMPLES / example / 'agents.py'}:{SUITES[example]}"
    store = tmp_path / "p.db"
    summary_path = tmp_path / "cli.json"
    args = ["run", str(EXAMPLES / example), "--agent", agent, "-k", "2", "--seed", "3"]
    done = CliRunner().invoke(
        main, [*args, "--quiet", "--store", str(store), "--json", str(summary_path)]
    )
    assert done.exit_code in (0, 1), done.output
    by_cli = json.loads(summary_path.read_text())
    cli_trials = proctor.Store(store, readonly=True).trial_results(by_cli["run_id"])

    result = proctor.evaluate(EXAMPLES / example, agent, trials=2, seed=3)

    assert result.status == by_cli["status"]
    assert len(result.trials) == by_cli["trials"] == 2 * by_cli["tasks"]
    assert _named_out(result.to_json()) == _named_out(by_cli)
    assert _trials(result.trials) == _trials(list(cli_trials))
    assert {r.status for r in result.trials} & {"failed", "partial"}, "the agent fails something"


@pytest.fixture(scope="module")
def clinical() -> tuple[proctor.RunResult, proctor.RunResult]:
    tasks = proctor.load_tasks(EXAMPLES / "clinical", tags=["read_only"])
    agents = EXAMPLES / "clinical" / "agents.py"
    baseline = proctor.evaluate(tasks, f"{agents}:perfect", trials=3, seed=7)
    candidate = proctor.evaluate(tasks, f"{agents}:sloppy", trials=3, seed=7)
    return baseline, candidate


def test_load_tasks_filters(clinical: tuple[proctor.RunResult, proctor.RunResult]) -> None:
    baseline, _ = clinical
    every = proctor.load_tasks(EXAMPLES / "clinical")
    assert 0 < baseline.summary.tasks < len(every.tasks)
    assert all("read_only" in row.tags for row in baseline.summary.per_task)
    with pytest.raises(proctor.InputError, match="no task matches the filters"):
        proctor.load_tasks(EXAMPLES / "clinical", tags=["no-such-tag"])
    known = every.tasks[0].id
    with pytest.raises(proctor.InputError, match="no task 'no-such-task' in the suite"):
        proctor.load_tasks(EXAMPLES / "clinical", ids=[known, "no-such-task"])


def test_gate_and_compare_on_results(
    clinical: tuple[proctor.RunResult, proctor.RunResult], tmp_path: Path
) -> None:
    baseline, candidate = clinical
    rules = EXAMPLES / "clinical" / "gates.yaml"
    verdict = candidate.gate(rules, baseline)
    assert verdict.report["run_id"] == candidate.run_id
    assert verdict.report["baseline_id"] == baseline.run_id
    assert verdict.passed == all(row["status"] != "fail" for row in verdict.report["rules"])
    assert verdict.report["recommendation"]["decision"]
    # the module-level gate reads the same run as RunData: one verdict
    assert proctor.gate(candidate.data, rules, baseline.data).report == verdict.report
    compared = candidate.compare(baseline, resamples=200)
    assert compared == proctor.compare(baseline, candidate, resamples=200)
    success = compared["metrics"][0]
    assert success["baseline"] == baseline.summary.success_rate
    assert success["candidate"] == candidate.summary.success_rate


def test_relative_rules_without_a_baseline_are_refused(
    clinical: tuple[proctor.RunResult, proctor.RunResult],
) -> None:
    _, candidate = clinical
    relative = EXAMPLES / "clinical" / "gates.yaml"
    with pytest.raises(proctor.InputError, match="baseline"):
        proctor.api.decisions.check_rules(
            str(relative), proctor.load_rules(relative), baseline=False, currency=None
        )
    assert candidate.gate(relative).report["skipped"] > 0


def test_report_writes_the_run_with_its_traces(
    clinical: tuple[proctor.RunResult, proctor.RunResult], tmp_path: Path
) -> None:
    _, candidate = clinical
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    assert candidate.report(html=html, markdown=md) == [html, md]
    page = html.read_text(encoding="utf-8")
    assert candidate.run_id in page and candidate.trials[0].task_id in page
    assert candidate.run_id in md.read_text(encoding="utf-8")
    with pytest.raises(proctor.InputError, match="nothing to write"):
        candidate.report()


def test_the_report_command_writes_what_run_report_writes(tmp_path: Path) -> None:
    """`proctor report` is a shell over RunResult.report: for one stored run, with a
    baseline and rules, both write the same one-pager (gate, comparison, queue, program)."""
    agents = EXAMPLES / "support" / "agents.py"
    store = proctor.Store(tmp_path / "p.db")
    base = proctor.evaluate(EXAMPLES / "support", f"{agents}:scripted", trials=2, store=store)
    run = proctor.evaluate(EXAMPLES / "support", f"{agents}:careless", trials=2, store=store)
    rules = EXAMPLES / "support" / "gates.yaml"
    by_api, by_cli = tmp_path / "api.md", tmp_path / "cli.md"
    assert run.report(markdown=by_api, baseline=base, rules=rules) == [by_api]
    store.close()
    args = ["report", run.run_id[:8], "--store", str(tmp_path / "p.db"), "--md", str(by_cli)]
    done = CliRunner().invoke(main, [*args, "--baseline", base.run_id, "--rules", str(rules)])
    assert done.exit_code == 0, done.output
    assert f"report of run {run.run_id}: Markdown {by_cli}" in done.output
    page = by_api.read_text(encoding="utf-8")
    assert "Gate FAILED" in page and base.run_id in page
    assert by_cli.read_text(encoding="utf-8") == page


def test_inputs_are_refused_before_any_trial(tmp_path: Path) -> None:
    agents = EXAMPLES / "clinical" / "agents.py"
    store = tmp_path / "p.db"
    with pytest.raises(proctor.InputError, match="no-such-agent"):
        proctor.evaluate(EXAMPLES / "clinical", f"{agents}:no-such-agent", store=store)
    with pytest.raises(proctor.InputError, match="--executor ray"):
        proctor.evaluate(EXAMPLES / "clinical", f"{agents}:perfect", address="auto", store=store)
    with pytest.raises(proctor.SpecError):
        proctor.evaluate(tmp_path / "missing", f"{agents}:perfect", store=store)
    assert not store.exists(), "nothing ran, nothing was stored"


def test_the_readme_python_quick_start_runs_as_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's `proctor.evaluate` snippet, executed as printed (from a folder where
    `examples/` is the repository's), gives what it says: a gated run and its report."""
    readme = (EXAMPLES.parent / "README.md").read_text(encoding="utf-8")
    start = readme.index("```python\nimport proctor\n") + len("```python\n")
    code = readme[start : readme.index("```", start)]
    (tmp_path / "examples").symlink_to(EXAMPLES)
    monkeypatch.chdir(tmp_path)
    scope: dict[str, object] = {}
    exec(compile(code, "README.md", "exec"), scope)
    verdict = scope["verdict"]
    assert isinstance(verdict, proctor.GateVerdict)
    # the demo's candidate: the README's figures say its gate fails
    assert (verdict.passed, verdict.exit_code) == (False, 1)
    assert verdict.report["recommendation"]["decision"] == "do not release"
    assert (tmp_path / "report.html").stat().st_size > 0
