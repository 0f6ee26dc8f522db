"""Calibration: how far a judge agrees with people on a labelled set.

People's labels (pass/fail, or scores read against the rubric's threshold) give an item
a human verdict only when at least two people labelled it and all of them agreed: one
person's label is an opinion, a split is a question the rubric leaves open. Both kinds
are left out of the figures and counted. On the agreed items the judge is measured by:

- agreement (the share of items on which it gives people's verdict) and Cohen's kappa
  (agreement beyond chance), with a 95% interval from the large-sample variance of
  Fleiss, Cohen & Everitt (1969) (with perfect agreement, where that variance is 0, the
  Wilson interval of the agreement mapped to kappa);
- the confusion matrix, the false-pass rate (of the items people fail, the share the
  judge passes: the error that lets bad output through) with its one-sided 95% upper
  bound (Clopper–Pearson), and the false-fail rate;
- the same per slice (a slice with fewer items than the policy's minimum says so: its
  figures describe, they do not decide), and per labeller (kappa against each person);
- people's agreement with each other (kappa per pair of labellers on the items both
  labelled): the ceiling a judge can be held to.

Judge errors are counted, not guessed (docs/architecture.md, Judges).
"""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

from proctor.judge.calibration_items import Subject
from proctor.judge.judgment import JudgeError
from proctor.judge.panel import JudgePanel
from proctor.labels.label_file import Label
from proctor.stats.interrater import cohen_kappa, kappa_interval
from proctor.stats.rates import clopper_pearson
from proctor.tasks.rubrics import Rubric


class LabelError(ValueError):
    """Labels that cannot calibrate this rubric: `line: field: message` of the labels file."""

    def __init__(self, label: Label, message: str) -> None:
        super().__init__(f"{label.line}: label: {message}")


def false_pass_upper(false_passes: int, people_fail: int) -> float | None:
    """The one-sided 95% upper bound of the false-pass rate (Clopper–Pearson): what the
    rate may be, given how few failed items measured it (0 of 10 still allows 26%)."""
    if not people_fail:
        return None
    return clopper_pearson(false_passes / people_fail, people_fail, 0.90)[1]


def verdict_figures(human: Sequence[bool], judge: Sequence[bool]) -> dict[str, Any]:
    """Agreement, kappa with its interval, confusion and error rates of paired verdicts."""
    n = len(human)
    pairs = Counter(zip(human, judge, strict=True))
    tp, fn = pairs[(True, True)], pairs[(True, False)]
    fp, tn = pairs[(False, True)], pairs[(False, False)]
    interval = kappa_interval(human, judge)
    return {
        "items": n,
        "agreement": (tp + tn) / n if n else None,
        "kappa": cohen_kappa(human, judge),
        "kappa_ci": list(interval) if interval else None,
        "confusion": {
            "human_pass_judge_pass": tp,
            "human_pass_judge_fail": fn,
            "human_fail_judge_pass": fp,
            "human_fail_judge_fail": tn,
        },
        "false_pass_rate": fp / (fp + tn) if fp + tn else None,
        "false_pass_upper": false_pass_upper(fp, fp + tn),
        "false_fail_rate": fn / (tp + fn) if tp + fn else None,
    }


def human_verdicts(rubric: Rubric, labels: Sequence[Label]) -> dict[tuple[str, str], bool]:
    """(item, labeller) → pass/fail. Labels are all pass/fail or all scores of the
    rubric's scale; anything else is a LabelError naming the first offending line."""
    kinds = {label.is_verdict for label in labels}
    if len(kinds) > 1:
        first = labels[0].is_verdict
        odd = next(label for label in labels if label.is_verdict != first)
        was = "pass/fail" if first else "scores"
        raise LabelError(odd, f"{odd.label!r} mixes scales ({was} above)")
    out = {}
    for label in labels:
        if label.is_verdict:
            out[(label.item, label.labeller)] = label.label.lower() == "pass"
            continue
        score = label.score
        assert score is not None
        if score not in rubric.scores:
            raise LabelError(
                label, f"{score} is not a score of {rubric.id}'s scale {rubric.scores}"
            )
        out[(label.item, label.labeller)] = rubric.passes(score)
    return out


def human_agreement(verdicts: Mapping[tuple[str, str], bool]) -> dict[str, Any]:
    """Kappa per pair of labellers on the items both labelled, and their mean."""
    by_person: dict[str, dict[str, bool]] = defaultdict(dict)
    for (item, person), value in verdicts.items():
        by_person[person][item] = value
    pairs = []
    for a, b in combinations(sorted(by_person), 2):
        shared = sorted(by_person[a].keys() & by_person[b].keys())
        if not shared:
            continue
        va = [by_person[a][i] for i in shared]
        vb = [by_person[b][i] for i in shared]
        figures = verdict_figures(va, vb)
        pairs.append(
            {
                "labellers": [a, b],
                "items": len(shared),
                "agreement": figures["agreement"],
                "kappa": figures["kappa"],
                "kappa_ci": figures["kappa_ci"],
            }
        )
    kappas = [p["kappa"] for p in pairs if p["kappa"] is not None]
    return {"pairs": pairs, "kappa": sum(kappas) / len(kappas) if kappas else None}


async def _judge_items(
    panel: JudgePanel, rubric: Rubric, subjects: Mapping[str, Subject]
) -> dict[str, bool | str]:
    """item → the judge's verdict, or the text of its JudgeError."""

    async def one(subject: Subject) -> bool | str:
        if subject.view is None:
            return False  # nothing to judge fails, as in a run
        try:
            return (await panel.score(rubric, subject.view)).passed
        except JudgeError as exc:
            return str(exc)

    found = await asyncio.gather(*(one(s) for s in subjects.values()))
    return dict(zip(subjects, found, strict=True))


async def calibrate(
    panel: JudgePanel,
    rubric: Rubric,
    subjects: Mapping[str, Subject],
    labels: Sequence[Label],
    min_items: int = 1,
) -> dict[str, Any]:
    """The calibration figures of `panel` on `rubric` against `labels` of `subjects`; a
    slice with fewer than `min_items` agreed items is marked too small to decide."""
    verdicts = human_verdicts(rubric, labels)
    judged = await _judge_items(panel, rubric, subjects)
    errors = {item: why for item, why in judged.items() if isinstance(why, str)}
    votes: dict[str, list[bool]] = defaultdict(list)
    for (item, _), value in verdicts.items():
        votes[item].append(value)
    consensus: dict[str, bool] = {}
    split = single = 0
    for item in subjects:
        if len(votes[item]) < 2:
            single += 1
        elif len(set(votes[item])) > 1:
            split += 1
        elif item not in errors:
            consensus[item] = votes[item][0]
    judge = {item: bool(v) for item, v in judged.items() if not isinstance(v, str)}
    items = sorted(consensus)
    figures: dict[str, Any] = {
        "labelled_items": len(subjects),
        "split_items": split,
        "single_labelled_items": single,
        "judge_errors": len(errors),
        "judge_error_rate": len(errors) / len(subjects) if subjects else 0.0,
        "errors": dict(sorted(errors.items())[:5]),
        "labels": "pass/fail" if labels[0].is_verdict else "scores",
        **verdict_figures([consensus[i] for i in items], [judge[i] for i in items]),
    }
    slices: dict[str, list[str]] = defaultdict(list)
    for item in items:
        slices[subjects[item].slice].append(item)
    figures["slices"] = {}
    for name, members in sorted(slices.items()):
        if not name:
            continue
        row = verdict_figures([consensus[i] for i in members], [judge[i] for i in members])
        if len(members) < min_items:
            row["too_few"] = f"{len(members)} items; needs {min_items}"
        figures["slices"][name] = row
    people = sorted({person for _, person in verdicts})
    figures["labellers"] = {
        person: cohen_kappa(
            [verdicts[(i, person)] for i in judge if (i, person) in verdicts],
            [judge[i] for i in judge if (i, person) in verdicts],
        )
        for person in people
    }
    figures["human_agreement"] = human_agreement(verdicts)
    return figures
