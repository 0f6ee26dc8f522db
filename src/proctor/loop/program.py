"""The evaluation program's own figures: is the suite a good instrument?

- **coverage**: of the production sessions that have a task type (a tag), the share
  whose type the suite has a task for, and the types it has none for;
- **judge–human agreement**: on trials both a judge and a person verdicted (the review
  desk's final labels), the share where they agree and Cohen's kappa (agreement beyond
  what chance gives);
- **the suite's wall time**: how long a run of it took (`wall_time_s` in run summaries);
- **incidents first caught by the suite**: promoted tasks (`metadata.promoted_from`, see
  proctor.loop.promote) whose failure appeared again in a run made after the promotion:
  the suite caught the regression before production did. Those promoted from production
  sessions are the production incidents.

A figure that cannot be computed says why (`note`); it is never filled in.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from proctor.core.manifest import Manifest
from proctor.core.results import TrialResult
from proctor.core.summary import RunSummary
from proctor.env.suite import Suite
from proctor.stats.interrater import cohen_kappa
from proctor.store.sqlite import Store


def coverage(session_tags: Sequence[Sequence[str]], suite_tags: Iterable[str]) -> dict[str, Any]:
    suite = set(suite_tags)
    typed = [set(tags) for tags in session_tags if tags]
    per_tag = Counter(t for tags in typed for t in tags)
    covered = sum(1 for tags in typed if tags & suite)
    return {
        "sessions": len(session_tags),
        "typed": len(typed),
        "covered": covered,
        "rate": covered / len(typed) if typed else None,
        "by_tag": [
            {"tag": t, "sessions": n, "in_suite": t in suite} for t, n in per_tag.most_common()
        ],
        "untested": sorted(t for t in per_tag if t not in suite),
        "note": None if typed else "no production session has a task type (a tag)",
    }


def judge_verdicts(results: Iterable[TrialResult]) -> dict[tuple[str, int], bool]:
    """Per trial with judge checks: did every judge check pass?"""
    out: dict[tuple[str, int], bool] = {}
    for r in results:
        judged = [c for c in r.checks if c.kind == "judge"]
        if judged:
            out[(r.task_id, r.trial)] = all(c.passed for c in judged)
    return out


def judge_agreement(
    judged: dict[tuple[str, int], bool], human: dict[tuple[str, int], bool]
) -> dict[str, Any]:
    """Agreement of judges and people on the trials both verdicted."""
    pairs = [(judged[k], human[k]) for k in sorted(judged.keys() & human.keys())]
    kappa = cohen_kappa([a for a, _ in pairs], [b for _, b in pairs])
    note = None
    if not judged:
        note = "no judge checks in the run"
    elif not human:
        note = "no human labels for the run"
    elif not pairs:
        note = "no trial has both a judge verdict and a human label"
    return {
        "trials": len(pairs),
        "agreement": sum(a == b for a, b in pairs) / len(pairs) if pairs else None,
        "kappa": kappa,
        "note": note,
    }


def _moment(text: Any) -> float | None:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def incidents_caught(store: Store, suite: Suite) -> dict[str, Any]:
    """Promoted tasks of `suite` that failed in a stored run made after their promotion."""
    promoted = {
        t.id: t.task.metadata["promoted_from"]
        for t in suite.tasks
        if isinstance(t.task.metadata.get("promoted_from"), dict)
    }
    caught: dict[str, dict[str, Any]] = {}
    stored = store.runs(limit=-1)
    unreadable = [row["run_id"] for row in stored if row.get("unreadable")]
    runs = sorted((r for r in stored if not r.get("unreadable")), key=lambda r: r["created_at"])
    for row in runs:
        counts = store.task_counts(row["run_id"])
        for task_id, origin in promoted.items():
            if task_id in caught or task_id not in counts:
                continue
            since = _moment(origin.get("promoted_at"))
            failed = sum(counts[task_id][s] for s in ("partial", "failed", "timeout"))
            if failed and since is not None and row["created_at"] >= since:
                caught[task_id] = {
                    "task_id": task_id,
                    "source": origin.get("source"),
                    "promoted_from": f"{origin.get('task_id')}#{origin.get('trial')}",
                    "first_caught_in": row["run_id"],
                    "agent": Manifest.from_json(row["manifest"]).agent.name,
                }
    rows = list(caught.values())
    production = [r for r in rows if r["source"] == "production"]
    return {
        "promoted_tasks": len(promoted),
        "from_production": sum(1 for o in promoted.values() if o.get("source") == "production"),
        "caught": len(rows),
        "production_incidents_caught": len(production),
        "tasks": rows,
        "unreadable_runs": unreadable,
        "note": _incidents_note(bool(promoted), unreadable),
    }


def _incidents_note(promoted: bool, unreadable: list[str]) -> str | None:
    """Why the figure may be short: no promoted task, or runs that could not be read (a
    failure in one of them is not counted, so the figure is a lower bound)."""
    notes = [] if promoted else ["the suite has no promoted task"]
    if unreadable:
        notes.append(
            f"{len(unreadable)} stored run(s) unreadable ({', '.join(unreadable)}): "
            "a failure in them is not counted"
        )
    return "; ".join(notes) or None


def wall_time(summary: RunSummary | None) -> dict[str, Any]:
    value = summary.wall_time_s if summary else None
    return {
        "seconds": value,
        "trials": summary.trials if summary else None,
        "note": None if value is not None else "the run's summary does not record it",
    }


def program_figures(
    *,
    session_tags: Sequence[Sequence[str]] | None = None,
    suite_tags: Iterable[str] | None = None,
    run_results: Iterable[TrialResult] = (),
    human: dict[tuple[str, int], bool] | None = None,
    summary: RunSummary | None = None,
    store: Store | None = None,
    suite: Suite | None = None,
) -> dict[str, Any]:
    """The four figures from what the caller has; what it lacks says why."""
    return {
        "coverage": coverage(session_tags, suite_tags or ())
        if session_tags is not None
        else {"note": "no production sessions (see `proctor monitor`)", "typed": 0},
        "judge_human": judge_agreement(judge_verdicts(run_results), human or {}),
        "wall_time": wall_time(summary),
        "incidents": incidents_caught(store, suite)
        if store is not None and suite is not None
        else {"note": "needs the store and the suite", "promoted_tasks": 0},
    }
