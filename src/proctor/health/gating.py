"""`proctor gate --require-health`: a gate refuses to decide on a suite it cannot trust.

The gate reads the health report of the run's suite (proctor.health.stored_reports) and fails
when there is none, when the suite's verdict is unhealthy, or when a rule's slice rests
on a task that is not healthy: one whose verdict is not `healthy`, that the report did
not check, or whose content changed since (its digest differs from the run's). Each is
named (docs/architecture.md, Suite health). A report that is not signed by the store's
key, or contradicts itself, is no report (proctor.health.stored_reports.health_problems).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from proctor.core.runs import RunData
from proctor.decide.gate import Rule
from proctor.health.stored_reports import health_problems


def unhealthy_tasks(report: dict[str, Any], run: RunData) -> dict[str, str]:
    """Task id → why it cannot carry a gate, for the run's tasks."""
    checked = {t["task_id"]: t for t in report.get("tasks", [])}
    out = {}
    for task_id, digest in run.manifest.suite.task_digests.items():
        task = checked.get(task_id)
        if task is None:
            out[task_id] = "not checked by the health report"
        elif task["digest"] != digest:
            out[task_id] = "changed since its health check"
        elif task["verdict"] != "healthy":
            first = task["problems"][0]["detail"] if task["problems"] else ""
            out[task_id] = f"{task['verdict']}: {first}" if first else task["verdict"]
    return out


def health_gate(
    report: dict[str, Any] | None, run: RunData, rules: Sequence[Rule], key: bytes | None
) -> dict[str, Any]:
    """The health part of a gate's verdict: `refused`, the reasons, and per rule the
    unhealthy tasks its slice rests on. `key`: the store's health key, which signed the
    report if `proctor health` wrote it."""
    suite = run.manifest.suite
    if report is None:
        reason = (
            f"no health report for suite {suite.name!r} (digest {suite.digest}): "
            "run `proctor health` on it first"
        )
        return {"refused": True, "reasons": [reason], "report": None, "rules": []}
    problems = health_problems(report, key)
    if not problems and suite.digest != report["suite_digest"] and suite.name != report["suite"]:
        problems = [
            f"the health report is of suite {report['suite']!r} (digest "
            f"{report['suite_digest']}), not the run's {suite.name!r} ({suite.digest})"
        ]
    if problems:
        return {"refused": True, "reasons": problems, "report": None, "rules": []}
    reasons = []
    if report["suite_verdict"]["verdict"] != "healthy":
        reasons.append("the suite is unhealthy: " + "; ".join(report["suite_verdict"]["reasons"]))
    bad = unhealthy_tasks(report, run)
    infos = run.task_infos()
    rows = []
    for rule in rules:
        resting = sorted(t for t, info in infos.items() if t in bad and rule.selects(info))
        if resting:
            rows.append(
                {"rule": rule.text, "source": rule.source, "tasks": {t: bad[t] for t in resting}}
            )
            reasons.append(
                f"{rule.text} ({rule.source}) rests on unhealthy tasks: {', '.join(resting)}"
            )
    return {
        "refused": bool(reasons),
        "reasons": reasons,
        "report": {
            "suite": report["suite"],
            "suite_digest": report["suite_digest"],
            "verdict": report["suite_verdict"]["verdict"],
        },
        "rules": rows,
    }
