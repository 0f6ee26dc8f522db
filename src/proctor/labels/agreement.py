"""Agreement: between reviewers (Cohen's kappa per pair, Krippendorff's alpha overall and
per slice) and between people and the automated verdict.

Only the reviewers' current labels count, and a label flagging its task as ambiguous is no
verdict. Kappa is Cohen's unweighted kappa on the trials both reviewers labelled:
κ = (p_o − p_e) / (1 − p_e), with p_e from each reviewer's own category shares. Alpha is
Krippendorff's, from the coincidence matrix of all trials with two or more labels
(missing labels allowed): α = 1 − (n − 1)·Σ o_ck δ²_ck / Σ n_c n_k δ²_ck, with the nominal
distance for pass/fail and the ordinal one for rubric scores. Both are undefined (None)
when chance agreement is total: one category only.

People against graders: on the trials with ground truth (docs: `labels.py`) and a valid
automated verdict, the success rate each gives, their kappa, and the two kinds of
disagreement: the graders passed what people failed (a false pass) and the reverse.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations
from typing import Any

from proctor.core.results import TrialResult
from proctor.labels.ground_truth import GroundTruth
from proctor.stats import rates as stats
from proctor.stats.interrater import Level, cohen_kappa, krippendorff_alpha
from proctor.store.label_tables import LabelRow


def _verdicts(labels: Iterable[LabelRow]) -> dict[tuple[str, int], dict[str, str]]:
    """Per trial, each reviewer's current verdict (flags left out)."""
    out: dict[tuple[str, int], dict[str, str]] = defaultdict(dict)
    for label in labels:
        if not label.ambiguous and label.value:
            out[label.key][label.reviewer] = label.value
    return out


def reviewer_agreement(
    labels: Iterable[LabelRow], slices: Mapping[str, Sequence[str]], level: Level
) -> dict[str, Any]:
    """Kappa per reviewer pair; alpha overall and per slice (`slices`: task -> its slices)."""
    by_trial = _verdicts(labels)
    ordered = level != "nominal"

    def value(v: str) -> Any:
        return int(v) if ordered else v

    reviewers = sorted({name for given in by_trial.values() for name in given})
    pairs = []
    for a, b in combinations(reviewers, 2):
        shared = [given for given in by_trial.values() if a in given and b in given]
        if shared:
            first, second = [g[a] for g in shared], [g[b] for g in shared]
            pairs.append(
                {
                    "reviewers": [a, b],
                    "trials": len(shared),
                    "agreement": sum(x == y for x, y in zip(first, second, strict=True))
                    / len(shared),
                    "kappa": cohen_kappa(first, second),
                }
            )
    multi = {key: given for key, given in by_trial.items() if len(given) >= 2}

    def alpha(keys: Iterable[tuple[str, int]]) -> dict[str, Any]:
        units = [[value(v) for v in multi[key].values()] for key in keys]
        return {"trials": len(units), "alpha": krippendorff_alpha(units, level)}

    per_slice: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for key in multi:
        for name in slices.get(key[0], ()):
            per_slice[name].append(key)
    return {
        "level": level,
        "labelled_trials": len(by_trial),
        "double_labelled": len(multi),
        "pairs": pairs,
        "overall": alpha(multi),
        "slices": {name: alpha(keys) for name, keys in sorted(per_slice.items())},
    }


def human_vs_automated(
    truth: GroundTruth, automated: Mapping[tuple[str, int], bool]
) -> dict[str, Any]:
    """Human-adjudicated success beside the automated verdict on the same trials.

    `automated`: each valid trial's verdict (error trials are in no success denominator,
    so they are left out here too).
    """
    keys = sorted(k for k in truth.final if k in automated)
    human = [bool(truth.final[k].passed) for k in keys]
    machine = [automated[k] for k in keys]
    n = len(keys)
    h_pass, m_pass = sum(human), sum(machine)
    low, high = stats.wilson_interval(h_pass, n) if n else (None, None)
    return {
        "trials": n,
        "human_success": h_pass / n if n else None,
        "human_ci": [low, high],
        "automated_success": m_pass / n if n else None,
        "agreement": sum(h == m for h, m in zip(human, machine, strict=True)) / n if n else None,
        "kappa": cohen_kappa(human, machine),
        "false_pass": sum(m and not h for h, m in zip(human, machine, strict=True)),
        "false_fail": sum(h and not m for h, m in zip(human, machine, strict=True)),
        "adjudicated": sum(k in truth.adjudicated for k in keys),
        "pending_disagreements": len(truth.disagreements),
        "flagged_tasks": sorted(truth.flagged),
    }


def human_figures(truth: GroundTruth, results: Iterable[TrialResult]) -> dict[str, Any]:
    """`human_vs_automated` for a run's labels (`run_truth`) and its trial results."""
    automated = {(r.task_id, r.trial): r.passed for r in results if r.valid}
    return human_vs_automated(truth, automated)
