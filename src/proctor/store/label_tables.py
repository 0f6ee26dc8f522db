"""Labels and adjudications in the store (docs/architecture.md, review/).

Both are append-only: a reviewer who changes their mind adds a row, so nothing a reviewer
submitted is overwritten, and two reviewers labelling one trial at once both keep theirs.
Which row counts: a label given before its reviewer saw the automated verdict outranks any
given after (`informed`: the desk shows the verdict once she has labelled, so a change
made then may only echo the machine); among equals the newest counts. A blinded pair's
label is two rows, one per trial. The tables are created with the desk's others
(`proctor.store.desk.migrate`).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from proctor.store.sqlite import reads, transaction, writes


@dataclass(frozen=True, slots=True)
class LabelRow:
    """One label of one trial (a pair's label is two rows, one per trial)."""

    reviewer_id: int
    reviewer: str
    run_id: str
    task_id: str
    trial: int
    value: str
    passed: bool | None
    reason: str
    note: str
    ambiguous: bool
    rubric_version: str
    created_at: float
    assignment_id: int = 0
    informed: bool = False  # the reviewer had seen the automated verdict when labelling

    @property
    def key(self) -> tuple[str, int]:
        return (self.task_id, self.trial)


_LABEL = (
    "SELECT l.reviewer_id, r.name, l.run_id, l.task_id, l.trial, l.value, l.passed, l.reason,"
    " l.note, l.ambiguous, l.rubric_version, l.created_at, l.assignment_id, l.informed"
    " FROM labels l JOIN reviewers r ON r.id = l.reviewer_id"
)


def _label(row: tuple[Any, ...]) -> LabelRow:
    rid, name, run, task, trial, value, passed, reason, note, ambiguous, rubric, at, aid, seen = row
    return LabelRow(
        rid,
        name,
        run,
        task,
        trial,
        value,
        None if passed is None else bool(passed),
        reason,
        note,
        bool(ambiguous),
        rubric,
        at,
        aid,
        bool(seen),
    )


@writes("storing labels")
def add_labels(db: sqlite3.Connection, assignment_id: int, labels: list[LabelRow]) -> None:
    """Store the labels of one submission (a pair's two trials) together; an assignment's
    first submission counts its reviewer on the item (`review_items.labelled`)."""
    with transaction(db):
        db.execute(
            "UPDATE review_items SET labelled = labelled + 1 WHERE id ="
            " (SELECT item_id FROM assignments WHERE id = ?)"
            " AND NOT EXISTS (SELECT 1 FROM labels WHERE assignment_id = ?)",
            (assignment_id, assignment_id),
        )
        db.executemany(
            "INSERT INTO labels(assignment_id, reviewer_id, run_id, task_id, trial, value,"
            " passed, reason, note, ambiguous, rubric_version, created_at, informed)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [
                (
                    assignment_id,
                    x.reviewer_id,
                    x.run_id,
                    x.task_id,
                    x.trial,
                    x.value,
                    None if x.passed is None else int(x.passed),
                    x.reason,
                    x.note,
                    int(x.ambiguous),
                    x.rubric_version,
                    x.created_at,
                    int(x.informed),
                )
                for x in labels
            ],
        )


@reads
def current_labels(db: sqlite3.Connection, run_id: str) -> list[LabelRow]:
    """Each reviewer's counted label of each trial of a run (see the module's docstring;
    the others stay stored), in no particular order."""
    rows = db.execute(
        f"{_LABEL} WHERE l.id IN (SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY"
        " task_id, trial, reviewer_id ORDER BY informed, id DESC) AS n FROM labels"
        " WHERE run_id = ?) WHERE n = 1)",
        (run_id,),
    ).fetchall()
    return [_label(r) for r in rows]


@reads
def assignment_labels(db: sqlite3.Connection, assignment_id: int) -> list[LabelRow]:
    """The newest submission of an assignment (one row per trial it covers)."""
    rows = db.execute(
        f"{_LABEL} WHERE l.assignment_id = ? ORDER BY l.id DESC", (assignment_id,)
    ).fetchall()
    newest: dict[tuple[str, int], LabelRow] = {}
    for row in rows:
        label = _label(row)
        newest.setdefault(label.key, label)
    return list(newest.values())


@writes("storing an adjudication")
def add_adjudication(db: sqlite3.Connection, reviewer_id: int, label: LabelRow) -> None:
    db.execute(
        "INSERT INTO adjudications(reviewer_id, run_id, task_id, trial, value, passed, reason,"
        " note, rubric_version, created_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
        (
            reviewer_id,
            label.run_id,
            label.task_id,
            label.trial,
            label.value,
            int(bool(label.passed)),
            label.reason,
            label.note,
            label.rubric_version,
            label.created_at,
        ),
    )


@reads
def adjudications(db: sqlite3.Connection, run_id: str) -> dict[tuple[str, int], LabelRow]:
    """The newest adjudication of each trial of a run: final, whatever the labels say."""
    rows = db.execute(
        "SELECT a.reviewer_id, r.name, a.run_id, a.task_id, a.trial, a.value, a.passed,"
        " a.reason, a.note, 0, a.rubric_version, a.created_at, 0, 1"
        " FROM adjudications a JOIN reviewers r ON r.id = a.reviewer_id"
        " WHERE a.run_id = ? ORDER BY a.id",
        (run_id,),
    ).fetchall()
    return {label.key: label for label in map(_label, rows)}


@reads
def labelled_statuses(db: sqlite3.Connection, run_id: str) -> dict[tuple[str, int], str]:
    """The automated status of each labelled trial of a run (adjudicated ones included:
    only a labelled trial is adjudicated)."""
    rows = db.execute(
        "SELECT k.task_id, k.trial, t.status FROM (SELECT task_id, trial FROM labels"
        " WHERE run_id = ?1 GROUP BY task_id, trial) k JOIN trials t"
        " ON t.run_id = ?1 AND t.task_id = k.task_id AND t.trial = k.trial",
        (run_id,),
    ).fetchall()
    return {(task, trial): status for task, trial, status in rows}
