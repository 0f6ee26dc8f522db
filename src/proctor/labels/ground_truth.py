"""Labels are data: what a reviewer may submit, what counts as ground truth, the file format.

A label is a verdict on the rubric's scale, a reason code from the rubric's list, an
evidence note (required for a fail, bounded in size) and the "task is ambiguous or broken"
flag. A flag keeps every trial of its task out of ground truth (bad data must not become
fake truth) and lists the task for its owners.

Ground truth of a trial, in order: the newest adjudication (final); else nothing when its
task is flagged; else the reviewers' common verdict when all of them agree; else it is a
disagreement waiting for an adjudicator.

The labels file (`proctor review export`) is what `proctor calibrate` reads: CSV or JSON
lines with exactly the columns `item, label, labeller, slice, rubric, note`, one row per
reviewer and trial (or, `final=True`, one per trial with its ground truth, labelled by
`final`). A trial's item is `RUN/TASK#TRIAL`; the rubric is `desk@VERSION`; the note
starts with the reason code (so no cell starts with `=`: a spreadsheet runs no note
quoting an agent as a formula).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proctor.core.results import TaskInfo
from proctor.labels.desk_settings import DeskSettings
from proctor.labels.label_file import COLUMNS, Label
from proctor.labels.label_file import write_labels as write_label_file
from proctor.store import desk
from proctor.store import label_tables as stored
from proctor.store.label_tables import LabelRow
from proctor.store.sqlite import Store

LABEL_COLUMNS = COLUMNS
FINAL = "final"


class LabelError(ValueError):
    """A submission that is not a label; `str()` is one line naming the field."""


@dataclass(frozen=True, slots=True)
class Submission:
    """One reviewer's verdicts on the trials of an item (two for a blinded pair)."""

    verdicts: tuple[str, ...]
    reason: str
    note: str
    ambiguous: bool


def parse_submission(
    settings: DeskSettings, form: Mapping[str, str], trials: int, *, final: bool = False
) -> Submission:
    """Check a submitted form: `verdict_0` (`verdict_1` for a pair), `reason`, `note`,
    `ambiguous`. `final` (an adjudication) needs a note and a verdict whatever it is."""
    ambiguous = form.get("ambiguous", "") in ("1", "on", "true") and not final
    scale = settings.scale.values
    verdicts = []
    for i in range(trials):
        value = form.get(f"verdict_{i}", "").strip()
        if value == "" and ambiguous:
            verdicts.append("")
            continue
        if value not in scale:
            shown = repr(value[:20]) if value else "nothing"
            raise LabelError(f"verdict_{i}: {shown} is not on the scale ({', '.join(scale)})")
        verdicts.append(value)
    reason = form.get("reason", "").strip()
    if reason not in settings.reason_codes:
        raise LabelError(f"reason: {reason[:40]!r} is not one of the rubric's reason codes")
    note = form.get("note", "").replace("\r\n", "\n").strip()
    if len(note) > settings.max_note_chars:
        raise LabelError(f"note: {len(note)} characters, at most {settings.max_note_chars}")
    fails = any(v and not settings.scale.passes(v) for v in verdicts)
    if not note and (fails or ambiguous or final):
        why = "an adjudication" if final else "a fail" if fails else "an ambiguous task"
        raise LabelError(f"note: evidence is required for {why}")
    return Submission(tuple(verdicts), reason, note, ambiguous)


def label_rows(
    submission: Submission,
    trials: list[tuple[str, str, int]],
    *,
    reviewer_id: int,
    reviewer: str,
    settings: DeskSettings,
    now: float,
    informed: bool,
) -> list[LabelRow]:
    """The stored rows of a submission: one per trial, in the order the page showed them;
    `informed`: the reviewer had seen the automated verdict (store/label_tables.py)."""
    return [
        LabelRow(
            reviewer_id=reviewer_id,
            reviewer=reviewer,
            run_id=run_id,
            task_id=task_id,
            trial=trial,
            value=value,
            passed=settings.scale.passes(value) if value else None,
            reason=submission.reason,
            note=submission.note,
            ambiguous=submission.ambiguous,
            rubric_version=settings.rubric_version,
            created_at=now,
            informed=informed,
        )
        for (run_id, task_id, trial), value in zip(trials, submission.verdicts, strict=True)
    ]


@dataclass
class GroundTruth:
    """A run's labels resolved: per trial the final label, and what is still open."""

    final: dict[tuple[str, int], LabelRow]
    flagged: dict[str, list[LabelRow]]  # task -> the labels that flagged it
    disagreements: dict[tuple[str, int], list[LabelRow]]
    by_trial: dict[tuple[str, int], list[LabelRow]]
    adjudicated: frozenset[tuple[str, int]]

    @property
    def passed(self) -> dict[tuple[str, int], bool]:
        return {key: bool(label.passed) for key, label in self.final.items()}


def ground_truth(
    labels: Iterable[LabelRow], adjudicated: Mapping[tuple[str, int], LabelRow]
) -> GroundTruth:
    """Resolve each reviewer's current label of each trial (see the module docstring)."""
    by_trial: dict[tuple[str, int], list[LabelRow]] = defaultdict(list)
    flagged: dict[str, list[LabelRow]] = defaultdict(list)
    for label in labels:
        by_trial[label.key].append(label)
        if label.ambiguous:
            flagged[label.task_id].append(label)
    final: dict[tuple[str, int], LabelRow] = {}
    disagreements: dict[tuple[str, int], list[LabelRow]] = {}
    for key in sorted(by_trial.keys() | adjudicated.keys()):
        if key in adjudicated:
            final[key] = adjudicated[key]
            continue
        if key[0] in flagged:
            continue
        given = by_trial[key]
        if len({label.value for label in given}) == 1:
            final[key] = given[0]
        else:
            disagreements[key] = given
    return GroundTruth(final, dict(flagged), disagreements, dict(by_trial), frozenset(adjudicated))


def run_truth(
    store: Store, run_id: str, leave_out: Collection[tuple[str, int]] = ()
) -> GroundTruth:
    """The ground truth of a run's labels as they stand in the store (none in a store the
    desk never opened); `leave_out`: trials whose labels are not to be used (those an
    adjudicator is party to, on her pages)."""
    if not desk.present(store):
        return ground_truth([], {})
    labels = [x for x in stored.current_labels(store, run_id) if x.key not in leave_out]
    adjudicated = stored.adjudications(store, run_id)
    return ground_truth(labels, {k: v for k, v in adjudicated.items() if k not in leave_out})


def task_slices(infos: Mapping[str, TaskInfo]) -> dict[str, list[str]]:
    """Task -> its slice keys (`tag:x`, `suite:x`, `risk:x`, `split:x`)."""
    return {task_id: info.slices() for task_id, info in infos.items()}


def slice_column(infos: Mapping[str, TaskInfo], by: str) -> dict[str, str]:
    """Task -> the labels file's `slice`: its `by` slices (`risk:high`; several joined by
    `+`, as a task may have several tags or suites)."""
    prefix = f"{by}:"
    return {
        task: "+".join(s for s in slices if s.startswith(prefix))
        for task, slices in task_slices(infos).items()
    }


def _row(label: LabelRow, labeller: str, slice_of: Mapping[str, str]) -> dict[str, Any]:
    return {
        "item": f"{label.run_id}/{label.task_id}#{label.trial}",
        "label": label.value,
        "labeller": labeller,
        "slice": slice_of.get(label.task_id, ""),
        "rubric": f"desk@{label.rubric_version}",
        "note": f"{label.reason}: {label.note}" if label.note else label.reason,
    }


def export_rows(
    truth: GroundTruth, slice_of: Mapping[str, str], *, final: bool = False
) -> list[dict[str, Any]]:
    """One row per reviewer and trial, or (`final`) per trial with ground truth; flagged
    tasks' labels are left out. In trial order."""
    if final:
        return [_row(truth.final[key], FINAL, slice_of) for key in sorted(truth.final)]
    rows = []
    for key in sorted(truth.by_trial):
        for label in sorted(truth.by_trial[key], key=lambda x: x.reviewer):
            if not label.ambiguous and label.task_id not in truth.flagged:
                rows.append(_row(label, label.reviewer, slice_of))
    return rows


def write_labels(path: str | Path, rows: list[dict[str, Any]]) -> None:
    """Write rows as CSV (`.csv`) or JSON lines (`.jsonl`), through the labels format's one
    writer (proctor.labels.label_file); other names are a LabelError."""
    path = Path(path)
    if path.suffix not in (".csv", ".jsonl"):
        raise LabelError(f"{path}: the labels file is .csv or .jsonl")
    text = [{c: str(row.get(c) or "") for c in LABEL_COLUMNS} for row in rows]
    labels = [
        Label(t["item"], t["label"], t["labeller"], t["slice"], t["rubric"], t["note"])
        for t in text
    ]
    write_label_file(path, labels)
