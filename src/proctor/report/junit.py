"""JUnit XML: one test case per task, so CI systems show agent failures like test failures.

The common JUnit schema (Jenkins, GitLab, GitHub test-report actions, Azure) is used:
`testsuites > testsuite > testcase` with `failure` and `error` children. A task fails when
any of its valid trials failed or timed out; the failure carries the failed checks of
every such trial. A task whose trials all broke in the harness is an `error` (not the
agent's fault, but nothing was tested). Characters XML 1.0 forbids are replaced, since
agent answers and evidence can contain anything.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from proctor.core.results import TrialResult

_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
EVIDENCE_CHARS = 400


def _clean(text: str) -> str:
    return _NOT_XML.sub("?", text)


def _trial_lines(r: TrialResult) -> list[str]:
    lines = [f"trial {r.trial} (seed {r.seed}): {r.status}, score {r.score:.2f}"]
    if r.error:
        error = r.error if len(r.error) <= EVIDENCE_CHARS else r.error[:EVIDENCE_CHARS] + "…"
        lines.append(f"  error: {error}")
    for c in r.failed_checks:
        severity = f", {c.severity}" if c.severity else ""
        evidence = json.dumps(c.evidence, default=str, ensure_ascii=False)
        if len(evidence) > EVIDENCE_CHARS:
            evidence = evidence[:EVIDENCE_CHARS] + "…"
        lines.append(f"  - {c.name} ({c.kind}{severity}): {evidence}")
    return lines


@dataclass(frozen=True)
class TaskFailure:
    """Why a task's trials do not pass: `failure` (the agent failed, or a reader could not
    tell) or `error` (nothing was tested); `kind` names it, `lines` list every such trial
    with its failed checks and their evidence, unescaped (each reader escapes for itself)."""

    element: Literal["failure", "error"]
    kind: str
    message: str
    lines: list[str]


def task_failure(trials: list[TrialResult]) -> TaskFailure | None:
    """None when a task's trials pass (the rules in this module's docstring); the JUnit
    report and the pytest plugin (proctor.api.pytest_plugin) both read a task this way."""
    failed = [r for r in trials if r.status in ("partial", "failed", "timeout")]
    errors = [r for r in trials if r.status in ("error", "sim_error")]  # harness or user broke
    if failed:
        counts = Counter(c.name for r in failed for c in r.failed_checks)
        checks = ", ".join(f"{name}×{n}" for name, n in counts.most_common())
        valid = len(trials) - len(errors)
        message = f"{len(failed)} of {valid} trials failed" + (f": {checks}" if checks else "")
        return TaskFailure("failure", "AgentFailure", message, _lines(failed))
    if review := [r for r in trials if r.status == "needs_review"]:
        message = f"{len(review)} of {len(trials)} trials need review: a reader could not tell"
        return TaskFailure("failure", "NeedsReview", message, _lines(review))
    if not trials or len(errors) == len(trials):
        message = "no trial finished" if not trials else f"all {len(trials)} trials errored"
        return TaskFailure("error", "HarnessError", message, _lines(errors))
    return None


def _lines(trials: list[TrialResult]) -> list[str]:
    return [line for r in trials for line in _trial_lines(r)]


def _testcase(suite: str, task_id: str, trials: list[TrialResult]) -> ET.Element:
    case = ET.Element(
        "testcase",
        classname=_clean(f"proctor.{suite}"),
        name=_clean(task_id),
        time=f"{sum(r.latency_s for r in trials):.3f}",
    )
    failure = task_failure(trials)
    if failure is not None:
        message = _clean(failure.message)
        child = ET.SubElement(case, failure.element, message=message, type=failure.kind)
        child.text = _clean("\n".join(failure.lines))
    errors = sum(r.status in ("error", "sim_error") for r in trials)
    passed = sum(r.passed for r in trials)
    out = ET.SubElement(case, "system-out")
    out.text = _clean(f"{passed}/{len(trials)} trials passed ({errors} harness errors)")
    return case


def junit_xml(
    run_id: str,
    suite: str,
    task_ids: list[str],
    results: list[TrialResult],
    problem: str | None = None,
) -> str:
    """The JUnit document for a run: every task in `task_ids`, even one with no trial.

    `problem`: why the run did not complete, or is invalid; it becomes an `error` test
    case of its own (`(run)`), so a CI report never shows a broken run as green.
    """
    by_task: dict[str, list[TrialResult]] = defaultdict(list)
    for r in sorted(results, key=lambda r: (r.task_id, r.trial)):
        by_task[r.task_id].append(r)
    cases = [_testcase(suite, t, by_task.get(t, [])) for t in task_ids]
    if problem is not None:
        case = ET.Element("testcase", classname=_clean(f"proctor.{suite}"), name="(run)", time="0")
        child = ET.SubElement(case, "error", message=_clean(problem), type="RunNotCompleted")
        child.text = _clean(f"run {run_id}: {problem}")
        cases.insert(0, case)
    failures = sum(case.find("failure") is not None for case in cases)
    errors = sum(case.find("error") is not None for case in cases)
    totals: dict[str, Any] = {
        "tests": str(len(cases)),
        "failures": str(failures),
        "errors": str(errors),
        "skipped": "0",
        "time": f"{sum(r.latency_s for r in results):.3f}",
    }
    root = ET.Element("testsuites", name="proctor", **totals)
    testsuite = ET.SubElement(root, "testsuite", name=_clean(f"{suite} (run {run_id})"), **totals)
    testsuite.extend(cases)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")


def write_junit(
    path: str | Path,
    run_id: str,
    suite: str,
    task_ids: list[str],
    results: list[TrialResult],
    problem: str | None = None,
) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = junit_xml(run_id, suite, task_ids, results, problem)
    path.write_text(text + "\n", encoding="utf-8")
