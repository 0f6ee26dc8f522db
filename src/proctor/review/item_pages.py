"""The reviewer's pages: a run's queue, an item to label, every trial of a run.

An item page shows the task, each trial's steps and answer, and the label form. What the
automated graders and judges decided (status, checks, routing reasons) stays hidden until
this reviewer has labelled the item, unless the rubric's settings say to show it: a
verdict on the screen anchors the label. A blinded pair shows its trials as A and B, in
the item's secret random order, with no run id, agent or model name anywhere on the page (its
forms post to item and assignment ids).

Labels are posted to the reviewer's own assignment: a session posting to another
reviewer's assignment gets 403 and nothing is stored. Queue and trial lists page by key
(`?after=`), with SQL counts, so a run of any size shows a page at the same cost.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from proctor.core.manifest import Manifest
from proctor.labels.ground_truth import LabelError, label_rows, parse_submission
from proctor.review import access
from proctor.review.trialview import TrialView, task_view, trial_view
from proctor.review.web import Desk, number, see_other
from proctor.store import desk
from proctor.store import label_tables as stored
from proctor.store.desk import Item, Reviewer
from proctor.store.label_tables import LabelRow

PAGE = 50
SIDES = ("A", "B")


@dataclass(frozen=True)
class Side:
    """One trial of an item as its page shows it: A or B in a pair, unnamed alone."""

    name: str
    view: TrialView
    label: list[LabelRow]


def queue_page(d: Desk, request: Request) -> Response:
    me = d.reviewer(request)
    run_id = d.run_id(request)
    after = number(request.query_params.get("after"), -1)
    store = d.store()
    rows = desk.items_page(store, run_id, me.id, after, PAGE)
    shown = [
        {
            "item": item,
            "labelled": labelled,
            "mine": mine,
            "reveal": mine or d.settings.show_automated,
        }
        for item, labelled, mine in rows
    ]
    more = len(rows) == PAGE
    return d.render(
        request,
        "queue.html.j2",
        me,
        run_id=run_id,
        rows=shown,
        counts=desk.queue_counts(store, run_id),
        done=request.query_params.get("done") == "1",
        next_after=rows[-1][0].position if more else None,
    )


def _take_next(d: Desk, me: Reviewer, run_id: str) -> Response:
    found = desk.claim(d.store(), run_id, me.id, None)
    if found is None:
        return see_other(f"/runs/{run_id}/queue?done=1")
    assignment = desk.assignment(d.store(), found)
    assert assignment is not None
    return see_other(f"/items/{assignment.item_id}")


def next_from_queue(d: Desk, request: Request, form: dict[str, str]) -> Response:
    me = d.poster(request, form)
    return _take_next(d, me, d.run_id(request))


def _item_or_404(d: Desk, request: Request) -> Item:
    found = desk.item(d.store(), number(request.path_params["item"], 0))
    if found is None:
        raise HTTPException(404, "no such item")
    return found


def next_from_item(d: Desk, request: Request, form: dict[str, str]) -> Response:
    me = d.poster(request, form)
    return _take_next(d, me, _item_or_404(d, request).run_id)


def claim_item(d: Desk, request: Request, form: dict[str, str]) -> Response:
    me = d.poster(request, form)
    item = _item_or_404(d, request)
    desk.claim(d.store(), item.run_id, me.id, item.id)
    return see_other(f"/items/{item.id}")


def _item_context(d: Desk, item: Item, me: Reviewer) -> dict[str, Any]:
    store = d.store()
    assignment = desk.assignment_of(store, item.id, me.id)
    mine = stored.assignment_labels(store, assignment.id) if assignment else []
    manifest = Manifest.from_json(desk.run_manifest(store, item.run_id))
    sides = []
    for n, (run_id, task_id, trial) in enumerate(item.trials()):
        view = trial_view(store, run_id, task_id, trial, blind=item.is_pair)
        given = [x for x in mine if (x.run_id, x.task_id, x.trial) == (run_id, task_id, trial)]
        sides.append(Side(SIDES[n] if item.is_pair else "", view, given))
    trace = sides[1 if item.swap else 0].view.trace
    open_seat = assignment is None and desk.claim_possible(store, item.id, me.id)
    return {
        "item": item,
        "task": task_view(d.tasks.task(manifest, item.task_id), item.task_id, trace),
        "sides": sides,
        "assignment": assignment,
        "labelled": bool(mine),
        "reveal": bool(mine) or d.settings.show_automated,
        "can_claim": open_seat,
        "previous": mine[0] if mine else None,
        "first_counts": not d.settings.show_automated,
    }


def _given(sides: list[Side]) -> dict[str, str]:
    """The form as the reviewer last submitted it, to change a label without retyping."""
    form: dict[str, str] = {}
    for n, side in enumerate(sides):
        for label in side.label:
            form |= {f"verdict_{n}": label.value, "reason": label.reason, "note": label.note}
            form |= {"ambiguous": "1"} if label.ambiguous else {}
    return form


def item_page(d: Desk, request: Request) -> Response:
    me = d.reviewer(request)
    item = _item_or_404(d, request)
    context = _item_context(d, item, me)
    return d.render(request, "item.html.j2", me, error="", form=_given(context["sides"]), **context)


def post_label(d: Desk, request: Request, form: dict[str, str]) -> Response:
    me = d.poster(request, form)
    store = d.store()
    assignment = desk.assignment(store, number(request.path_params["assignment"], 0))
    if assignment is None:
        raise HTTPException(404, "no such assignment")
    if assignment.reviewer_id != me.id:
        raise HTTPException(403, "forbidden: this assignment is another reviewer's")
    item = desk.item(store, assignment.item_id)
    assert item is not None
    try:
        submission = parse_submission(d.settings, form, len(item.trials()))
    except LabelError as exc:
        context = _item_context(d, item, me)
        return d.render(request, "item.html.j2", me, 400, error=str(exc), form=form, **context)
    rows = label_rows(
        submission,
        item.trials(),
        reviewer_id=me.id,
        reviewer=me.name,
        settings=d.settings,
        now=time.time(),
        # her first label revealed the automated verdict, unless it was never hidden
        informed=d.settings.show_automated or bool(stored.assignment_labels(store, assignment.id)),
    )
    stored.add_labels(store, assignment.id, rows)
    return see_other(f"/items/{item.id}")


def release(d: Desk, request: Request, form: dict[str, str]) -> Response:
    me = d.poster(request, form)
    store = d.store()
    assignment = desk.assignment(store, number(request.path_params["assignment"], 0))
    if assignment is None or assignment.reviewer_id != me.id:
        raise HTTPException(403, "forbidden: not your assignment")
    item = desk.item(store, assignment.item_id)
    assert item is not None
    desk.release(store, assignment.id)
    return see_other(f"/runs/{item.run_id}/queue")


def trials_page(d: Desk, request: Request) -> Response:
    """Every trial of a run, a page at a time (for big runs). Counts by status and the
    status filter only with `show_automated`: they would name the verdicts of trials
    still to label; a row shows its verdict as `access.sees_verdict` allows."""
    me = d.reviewer(request)
    run_id = d.run_id(request)
    status = request.query_params.get("status") or None
    if status and not d.settings.show_automated:
        raise HTTPException(
            400, "trials are filtered by automated verdict only with show_automated"
        )
    task, _, trial = (request.query_params.get("after") or "").rpartition(":")
    after = (task, number(trial, -1)) if task else ("", -1)
    store = d.store()
    rows = desk.trials_page(store, run_id, after, PAGE, status)
    shown = []
    for task_id, n, st, score in rows:
        standing = d.standing(me, run_id, task_id, n)
        reveal = access.sees_verdict(d.settings, standing)
        opens = access.may_open(standing)
        shown.append(
            {"task_id": task_id, "trial": n, "status": st, "score": score}
            | {"reveal": reveal, "opens": opens}
        )
    counts = d.status_counts(run_id)
    more = len(rows) == PAGE
    return d.render(
        request,
        "trials.html.j2",
        me,
        run_id=run_id,
        rows=shown,
        total=sum(counts.values()),
        counts=counts if d.settings.show_automated else {},
        status=status or "",
        next_after=f"{rows[-1][0]}:{rows[-1][1]}" if more else None,
    )


def trial_page(d: Desk, request: Request) -> Response:
    """One trial, unblinded, with its automated verdict as `access` allows: what a report
    links to. A trial of a blinded pair the reviewer has not labelled does not open."""
    me = d.reviewer(request)
    run_id = d.run_id(request)
    task_id, trial = request.path_params["task"], number(request.path_params["trial"], 0)
    standing = d.standing(me, run_id, task_id, trial)
    if not access.may_open(standing):
        raise HTTPException(403, "forbidden: a trial of a blinded pair opens once you label it")
    view, task = d.unblinded(run_id, task_id, trial)
    reveal = access.sees_verdict(d.settings, standing)
    return d.render(
        request, "trial.html.j2", me, run_id=run_id, task=task, view=view, reveal=reveal
    )
