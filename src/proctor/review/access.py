"""What a reviewer may see at the desk: labels stay independent (docs/architecture.md,
review/).

A label is worth something only if the reviewer gave it without seeing anyone else's
verdict. So every page asks these rules before it shows anything about a trial:

- The automated verdict (status, score, checks, judge verdicts, routing reasons) of a
  trial an item shows is hidden from a reviewer until they have labelled it (or, for an
  adjudicator, adjudicated it), unless the rubric's settings say `show_automated`. A trial
  no item shows has nothing to label and keeps its verdict, as a report shows it.
- A trial a blinded pair shows opens on its own (unblinded: run id, agent, model) only
  for a reviewer who has labelled it: before that its page would say which side is the
  baseline.
- Other reviewers' labels, notes and flags, and every figure made from them (agreement,
  disagreements, adjudications), are shown to adjudicators only; and an adjudicator never
  sees or settles a disagreement she is party to (she holds an assignment on an item that
  shows the trial): another adjudicator must.
"""

from __future__ import annotations

from starlette.exceptions import HTTPException

from proctor.labels.desk_settings import DeskSettings
from proctor.labels.ground_truth import GroundTruth
from proctor.store.desk import Reviewer, Standing


def sees_verdict(settings: DeskSettings, standing: Standing) -> bool:
    """Whether the automated verdict of the trial may be shown."""
    return settings.show_automated or standing.labelled or not standing.queued


def may_open(standing: Standing) -> bool:
    """Whether the trial's own, unblinded page may be shown."""
    return standing.labelled or not standing.paired


def adjudicator(me: Reviewer) -> None:
    """Refuse (403) a page made of other reviewers' labels to a plain reviewer."""
    if not me.adjudicator:
        raise HTTPException(403, "forbidden: only an adjudicator sees other reviewers' labels")


def may_adjudicate(truth: GroundTruth, key: tuple[str, int], standing: Standing) -> bool:
    """Whether an adjudicator not party to it may see and settle this trial: reviewers
    disagree on it, or it was adjudicated before."""
    contested = key in truth.disagreements or key in truth.adjudicated
    return contested and not standing.involved
