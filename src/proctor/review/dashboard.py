"""The desk's overview pages: the runs under review, agreement, adjudication.

The agreement page recomputes from the stored labels on every load, so it moves as soon
as a second reviewer labels. Trials whose reviewers disagree wait in the adjudication
view; an adjudicator's label (with a required note) is final for that trial. Tasks a
reviewer flagged as ambiguous or broken are listed with their owners (a task's
`metadata.owner`) and kept out of ground truth. Both pages are made of other reviewers'
labels, so only adjudicators see them, and an adjudicator never sees or settles a
disagreement she is party to (`access.py`).
"""

from __future__ import annotations

import time

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from proctor.core.manifest import Manifest
from proctor.labels.agreement import Level, human_vs_automated, reviewer_agreement
from proctor.labels.ground_truth import (
    GroundTruth,
    LabelError,
    label_rows,
    parse_submission,
    run_truth,
    task_slices,
)
from proctor.review import access
from proctor.review.web import Desk, number, see_other
from proctor.store import desk
from proctor.store import label_tables as stored
from proctor.store.desk import Reviewer
from proctor.store.export import stored_summary


def home(d: Desk, request: Request) -> Response:
    me = d.reviewer(request)
    store = d.store()
    runs = []
    for run_id, items in desk.queued_runs(store):
        manifest = Manifest.from_json(desk.run_manifest(store, run_id))
        runs.append(
            {
                "run_id": run_id,
                "agent": f"{manifest.agent.name} {manifest.agent.version}".strip(),
                "suite": manifest.suite.name,
                "items": items,
                "counts": desk.queue_counts(store, run_id),
            }
        )
    return d.render(request, "home.html.j2", me, runs=runs)


def agreement_page(d: Desk, request: Request) -> Response:
    me = d.reviewer(request)
    access.adjudicator(me)
    run_id = d.run_id(request)
    store = d.store()
    row = store.run(run_id)
    # figures from labels on items she holds would tell her what the others said there
    truth = run_truth(store, run_id, desk.involved_trials(store, me.id, run_id))
    level: Level = "nominal" if d.settings.scale.kind == "binary" else "ordinal"
    current = [label for labels in truth.by_trial.values() for label in labels]
    statuses = stored.labelled_statuses(store, run_id)
    automated = {key: status == "passed" for key, status in statuses.items() if status != "error"}
    owners = {}
    for task_id in truth.flagged:
        found = d.tasks.task(Manifest.from_json(row["manifest"]), task_id)
        owners[task_id] = str(found[0].metadata.get("owner", "")) if found else ""
    summary = stored_summary(row["summary"])
    return d.render(
        request,
        "agreement.html.j2",
        me,
        run_id=run_id,
        people=reviewer_agreement(
            current, task_slices(summary.task_infos() if summary else {}), level
        ),
        human=human_vs_automated(truth, automated),
        flagged=truth.flagged,
        owners=owners,
        disagreements=len(truth.disagreements),
    )


def adjudication_list(d: Desk, request: Request) -> Response:
    me = d.reviewer(request)
    access.adjudicator(me)
    run_id = d.run_id(request)
    store = d.store()
    truth = run_truth(store, run_id)
    party = desk.involved_trials(store, me.id, run_id)
    return d.render(
        request,
        "adjudicate.html.j2",
        me,
        run_id=run_id,
        disagreements={k: v for k, v in truth.disagreements.items() if k not in party},
        party=sum(k in party for k in truth.disagreements),
        adjudicated={key: truth.final[key] for key in sorted(truth.adjudicated - party)},
    )


def _trial_key(request: Request) -> tuple[str, int]:
    return request.path_params["task"], number(request.path_params["trial"], 0)


def _contested(d: Desk, request: Request) -> tuple[Reviewer, str, tuple[str, int], GroundTruth]:
    """The adjudicator, run, trial and ground truth of an adjudication address; 403 for a
    plain reviewer, 404 for a trial that is no disagreement she may settle (one she is
    party to answers the same, so the address says nothing about other labels)."""
    me = d.reviewer(request)
    access.adjudicator(me)
    run_id = d.run_id(request)
    key = _trial_key(request)
    truth = run_truth(d.store(), run_id)
    if not access.may_adjudicate(truth, key, d.standing(me, run_id, *key)):
        raise HTTPException(404, "no disagreement here that you may adjudicate")
    return me, run_id, key, truth


def _adjudication_page(
    d: Desk,
    request: Request,
    status: int = 200,
    error: str = "",
    form: dict[str, str] | None = None,
) -> Response:
    me, run_id, (task_id, trial), truth = _contested(d, request)
    view, task = d.unblinded(run_id, task_id, trial)
    return d.render(
        request,
        "adjudication.html.j2",
        me,
        status,
        run_id=run_id,
        view=view,
        reveal=access.sees_verdict(d.settings, d.standing(me, run_id, task_id, trial)),
        task=task,
        labels=truth.by_trial.get((task_id, trial), []),
        final=truth.final.get((task_id, trial)),
        adjudicated=(task_id, trial) in truth.adjudicated,
        error=error,
        form=form or {},
    )


def adjudication_page(d: Desk, request: Request) -> Response:
    return _adjudication_page(d, request)


def post_adjudication(d: Desk, request: Request, form: dict[str, str]) -> Response:
    d.poster(request, form)
    me, run_id, (task_id, trial), _ = _contested(d, request)
    try:
        submission = parse_submission(d.settings, form, 1, final=True)
    except LabelError as exc:
        return _adjudication_page(d, request, 400, str(exc), form)
    [label] = label_rows(
        submission,
        [(run_id, task_id, trial)],
        reviewer_id=me.id,
        reviewer=me.name,
        settings=d.settings,
        now=time.time(),
        informed=True,  # an adjudicator settles with the reviewers' labels before her
    )
    stored.add_adjudication(d.store(), me.id, label)
    return see_other(f"/runs/{run_id}/adjudicate")
