"""The review desk's labels as the loop reads them (docs/architecture.md, review/).

A trial's final label (adjudicated, or the reviewers agreeing) is ground truth: a promoted
failure carries its reason code and note, the program's figures compare people with the
judges, and a monitored production session shows the label of the graded trial that
shares its trace id.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from proctor.labels.ground_truth import GroundTruth, run_truth
from proctor.store.sqlite import Store


def human_verdicts(truth: GroundTruth) -> dict[tuple[str, int], bool]:
    """Per trial people gave a final label (`run_truth`): did they pass it?"""
    return {key: bool(label.passed) for key, label in truth.final.items()}


def final_label(truth: GroundTruth, task_id: str, trial: int) -> dict[str, Any] | None:
    """A trial's final label as JSON: verdict, reason code, note, reviewer, adjudicated."""
    label = truth.final.get((task_id, trial))
    if label is None:
        return None
    return {
        "verdict": label.value,
        "passed": label.passed,
        "reason": label.reason,
        "note": label.note,
        "reviewer": label.reviewer,
        "adjudicated": (task_id, trial) in truth.adjudicated,
        "run_id": label.run_id,
    }


def labels_by_trace(store: Store, trace_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The final label of each stored trial whose trace id is one of `trace_ids` (a
    production session graded with `proctor grade` keeps its own OpenTelemetry trace id)."""
    trials: dict[str, list[tuple[str, int, str]]] = {}
    for run_id, task_id, trial, trace_id in store.trials_by_trace(trace_ids):
        trials.setdefault(run_id, []).append((task_id, trial, trace_id))
    out: dict[str, dict[str, Any]] = {}
    for run_id, rows in trials.items():
        truth = run_truth(store, run_id)
        for task_id, trial, trace_id in rows:
            label = final_label(truth, task_id, trial)
            if label is not None:
                out.setdefault(trace_id, label)
    return out
