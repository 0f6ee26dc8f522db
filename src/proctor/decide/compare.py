"""Baseline vs candidate, paired by task, so that noise is not read as a change.

Both runs are reduced to one value per task (its valid trials averaged), and every figure
is a mean over the tasks both runs share, so every task weighs the same, as in the run's
own success rate. Rates (success, pass^k, tool precision, recall, argument accuracy) get
`paired.rate_difference` (Tango's score interval with one trial per task, else the
adjusted paired t on per-task differences), other figures the
paired t interval (`proctor.stats.paired`), with a seeded paired bootstrap over tasks
beside both; below MIN_TASKS tasks nothing is significant or non-inferior: too few tasks
to conclude.
Per-task verdicts use a majority rule: a task passes a run when more than half of its valid
trials pass (with one trial, the trial's verdict). They give the four groups (both pass,
both fail, improved, regressed) and McNemar's exact test; a slice is `regressed` only when
its McNemar p, Holm-adjusted for the number of slices, is below 5%: among thirty slices
one or two look significant by chance alone.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from proctor.core.manifest import Manifest
from proctor.core.results import TaskInfo, TrialResult
from proctor.core.runs import RunData
from proctor.decide.changes import manifest_changes, unmatched_warnings
from proctor.decide.summarize import TOOL_METRICS, task_counts
from proctor.stats import paired
from proctor.stats import rates as stats
from proctor.stats.paired import MIN_TASKS

DEFAULT_MARGIN = 0.02
DEFAULT_RESAMPLES = 2000
#: Earlier runs on the same holdout after which a candidate may be tuned to it.
HOLDOUT_LOOKS_WARN = 3
VERDICT_RULE = "a task passes a run when more than half of its valid trials pass"
SUCCESS = "task_success_rate"
#: A slice regressed when its Holm-adjusted McNemar p is below this.
ALPHA = 0.05
TOO_FEW = f"too few tasks to conclude (fewer than {MIN_TASKS})"


class CompareError(ValueError):
    """Two runs that cannot be compared; `str()` is one line for the user."""


Units = Callable[[Sequence[TrialResult]], int]


@dataclass(frozen=True)
class PairedMetric:
    """A per-task figure computed from one run's valid trials of that task.

    `units`, for a rate (values in [0, 1]): how many independent observations a task's
    value rests on, which bounds the interval of each run's mean (stats.task_rate)."""

    name: str
    higher_is_better: bool
    per_task: Callable[[Sequence[TrialResult]], float | None]
    units: Units | None = None


def _mean_of(get: Callable[[TrialResult], float | None]) -> Callable[..., float | None]:
    def per_task(trials: Sequence[TrialResult]) -> float | None:
        return stats.mean(v for v in map(get, trials) if v is not None)

    return per_task


def _pass_hat(k: int) -> Callable[[Sequence[TrialResult]], float | None]:
    def per_task(trials: Sequence[TrialResult]) -> float | None:
        [(n, c)] = task_counts(trials).values()  # the valid trials of one task
        return stats.pass_hat_k(n, c, k) if n >= k else None

    return per_task


def _metric_of(name: str) -> Callable[[TrialResult], float | None]:
    return lambda r: r.metrics.get(name)


def _trials_with(name: str) -> Units:
    return lambda trials: sum(1 for r in trials if name in r.metrics)


def _disjoint_sets(k: int) -> Units:
    """pass^k of n trials rests on at least n // k disjoint sets of k trials."""
    return lambda trials: max(len(trials) // k, 1)


def _in_slice(key: str) -> Callable[[TaskInfo], bool]:
    return lambda info: key in info.slices()


_FIXED = {
    m.name: m
    for m in (
        PairedMetric(SUCCESS, True, _mean_of(lambda r: float(r.passed)), len),
        *(
            PairedMetric(name, True, _mean_of(_metric_of(name)), _trials_with(name))
            for name in TOOL_METRICS
        ),
        PairedMetric("mean_cost_usd", False, _mean_of(lambda r: r.usage.complete("cost"))),
        PairedMetric("mean_latency_s", False, _mean_of(lambda r: r.latency_s)),
        PairedMetric("mean_tokens", False, _mean_of(lambda r: r.usage.complete("tokens"))),
    )
}
_PASS_HAT = re.compile(r"pass_hat_k\[(\d+)\]")


def paired_metric(name: str) -> PairedMetric | None:
    """The metric called `name` (`pass_hat_k[K]` for any K >= 1), or None."""
    if name in _FIXED:
        return _FIXED[name]
    match = _PASS_HAT.fullmatch(name)
    if match and int(match.group(1)) >= 1:
        k = int(match.group(1))
        return PairedMetric(name, True, _pass_hat(k), _disjoint_sets(k))
    return None


def paired_metric_names() -> list[str]:
    return [*_FIXED, "pass_hat_k[K]"]


def _by_task(results: Iterable[TrialResult]) -> dict[str, list[TrialResult]]:
    out: dict[str, list[TrialResult]] = defaultdict(list)
    for r in results:
        if r.valid:
            out[r.task_id].append(r)
    return out


def _ids(ids: Sequence[str], limit: int = 8) -> str:
    more = f" and {len(ids) - limit} more" if len(ids) > limit else ""
    return ", ".join(ids[:limit]) + more


class Pairing:
    """The tasks two runs share (same id, same content), with both runs' valid trials."""

    def __init__(self, base: RunData, cand: RunData) -> None:
        self.warnings: list[str] = []
        b_digests = base.manifest.suite.task_digests
        c_digests = cand.manifest.suite.task_digests
        self.base_trials, self.cand_trials = _by_task(base.results), _by_task(cand.results)
        b_suite, c_suite = base.manifest.suite.digest, cand.manifest.suite.digest
        if b_suite != c_suite:
            self.warnings.append(
                f"suite versions differ (baseline @{b_suite[:8]}, candidate @{c_suite[:8]})"
            )
        shared = set(b_digests) & set(c_digests)
        changed = {t for t in shared if b_digests[t] != c_digests[t]}
        self.excluded = {
            "only_in_baseline": sorted(set(b_digests) - shared),
            "only_in_candidate": sorted(set(c_digests) - shared),
            "content_changed": sorted(changed),
            "no_valid_trials": sorted(
                t
                for t in shared - changed
                if not self.base_trials.get(t) or not self.cand_trials.get(t)
            ),
        }
        for why, ids in self.excluded.items():
            if ids:
                self.warnings.append(f"{len(ids)} tasks left out ({why}): {_ids(ids)}")
        left_out = {t for ids in self.excluded.values() for t in ids}
        self.tasks = sorted(shared - left_out)
        if not self.tasks:
            raise CompareError(f"runs {base.run_id} and {cand.run_id} share no comparable task")
        if any(self.excluded.values()):
            self.warnings.append(f"comparing the {len(self.tasks)} tasks both runs share")
        self.unequal = {
            t: [len(self.base_trials[t]), len(self.cand_trials[t])]
            for t in self.tasks
            if len(self.base_trials[t]) != len(self.cand_trials[t])
        }
        if self.unequal:
            shown = [f"{t} {b}/{c}" for t, (b, c) in self.unequal.items()]
            self.warnings.append(
                f"valid trial counts differ on {len(self.unequal)} tasks (baseline/candidate: "
                f"{_ids(shown)}); each task is averaged first, so every task weighs the same"
            )
        self.k = min(min(len(self.base_trials[t]), len(self.cand_trials[t])) for t in self.tasks)
        self.infos = {**base.task_infos(), **cand.task_infos()}

    def select(self, where: Callable[[TaskInfo], bool]) -> list[str]:
        return [t for t in self.tasks if t in self.infos and where(self.infos[t])]

    def figure(
        self,
        metric: PairedMetric,
        tasks: Sequence[str],
        *,
        margin: float | None = None,
        resamples: int = DEFAULT_RESAMPLES,
        seed: int = 0,
    ) -> dict[str, Any]:
        """Baseline, candidate, paired difference with both intervals; non-inferiority.

        Below MIN_TASKS tasks with a value the figure is not `conclusive`: it is never
        `significant`, never non-inferior, and its `note` says so."""
        base, cand, b_units, c_units = [], [], [], []
        for t in tasks:
            b, c = metric.per_task(self.base_trials[t]), metric.per_task(self.cand_trials[t])
            if b is not None and c is not None:
                base.append(b)
                cand.append(c)
                if metric.units is not None:
                    b_units.append(metric.units(self.base_trials[t]))
                    c_units.append(metric.units(self.cand_trials[t]))
        diffs = [c - b for b, c in zip(base, cand, strict=True)]
        if metric.units is not None:
            diff = paired.rate_difference(base, cand, b_units, c_units)
        else:
            diff = paired.paired_difference(diffs)
        boot = paired.bootstrap_mean_interval(diffs, resamples=resamples, seed=seed)
        low, high = (diff.low, diff.high) if diff else (None, None)
        conclusive = diff is not None and diff.conclusive
        out: dict[str, Any] = {
            "metric": metric.name,
            "higher_is_better": metric.higher_is_better,
            "tasks": len(diffs),
            "baseline": stats.mean(base),
            "candidate": stats.mean(cand),
            "difference": diff.mean if diff else None,
            "se": diff.se if diff else None,
            "ci": [low, high],
            "bootstrap_ci": list(boot) if boot else [None, None],
            "conclusive": conclusive,
            "note": "" if conclusive else TOO_FEW,
            "significant": conclusive
            and low is not None
            and high is not None
            and (low > 0 or high < 0),
        }
        if margin is not None:
            # One-sided 97.5%: the far end of the two-sided 95% interval must stay in margin.
            if metric.higher_is_better:
                ok = low is not None and low > -margin
            else:
                ok = high is not None and high < margin
            out["non_inferior"] = {"margin": margin, "passed": conclusive and ok}
        return out

    def verdicts(self, tasks: Sequence[str]) -> dict[str, Any]:
        """The four groups by majority verdict, with McNemar's exact test on them."""
        groups: dict[str, list[dict[str, Any]]] = {
            "both_pass": [],
            "both_fail": [],
            "improved": [],
            "regressed": [],
        }
        for t in tasks:
            [(bn, bc)] = task_counts(self.base_trials[t]).values()
            [(cn, cc)] = task_counts(self.cand_trials[t]).values()
            b_ok, c_ok = 2 * bc > bn, 2 * cc > cn
            group = {
                (True, True): "both_pass",
                (False, False): "both_fail",
                (False, True): "improved",
                (True, False): "regressed",
            }[(b_ok, c_ok)]
            groups[group].append(
                {
                    "id": t,
                    "baseline": f"{bc}/{bn}",
                    "candidate": f"{cc}/{cn}",
                }
            )
        regressed, improved = len(groups["regressed"]), len(groups["improved"])
        return {
            "groups": groups,
            "mcnemar": {
                "regressed": regressed,
                "improved": improved,
                "p_value": paired.mcnemar_exact(regressed, improved),
            },
        }


def holdout_looks(history: Iterable[dict[str, Any]], cand: RunData) -> int:
    """How many stored runs before the candidate evaluated the same holdout tasks (runs
    whose row cannot be read are left out: the store's own listing names them)."""
    digest = cand.manifest.suite.holdout_digest
    if not digest:
        return 0
    return sum(
        1
        for row in history
        if row["run_id"] != cand.run_id
        and not row.get("unreadable")
        and row["created_at"] < cand.created_at
        and Manifest.from_json(row["manifest"]).suite.holdout_digest == digest
    )


def _run_brief(run: RunData) -> dict[str, Any]:
    m = run.manifest
    return {
        "run_id": run.run_id,
        "agent": f"{m.agent.name} {m.agent.version}".strip(),
        "suite_digest": m.suite.digest,
        "trials_per_task": m.trials,
        "holdout": m.holdout,
        "user_model": (m.user_model or {}).get("model"),
        **sim_errors(run.results),
    }


def sim_errors(results: Sequence[TrialResult]) -> dict[str, Any]:
    """Trials whose simulated user broke (status `sim_error`), and their share of all
    trials, as the gate's `sim_error_rate` reads it: both runs' rates sit side by side,
    since a candidate's better pass rate may only be fewer conversations judged."""
    count = sum(r.status == "sim_error" for r in results)
    return {"sim_errors": count, "sim_error_rate": count / len(results) if results else None}


def compare_runs(
    base: RunData,
    cand: RunData,
    *,
    margin: float = DEFAULT_MARGIN,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    looks: int = 0,
) -> dict[str, Any]:
    """The full comparison as a JSON-ready dict (what `proctor compare --json` prints).

    `looks` is `holdout_looks(...)`: earlier runs on the candidate's holdout tasks.
    """
    pairing = Pairing(base, cand)
    changes = manifest_changes(base.manifest, cand.manifest)
    warnings = [
        *([changes["warning"]] if changes["warning"] else []),
        *unmatched_warnings(base.manifest, cand.manifest),
        *pairing.warnings,
    ]
    if looks >= HOLDOUT_LOOKS_WARN:
        warnings.append(
            f"the candidate's holdout tasks were evaluated in {looks} earlier runs: a candidate "
            "picked by looking at them may be tuned to the holdout; confirm on fresh tasks"
        )
    names = [SUCCESS, *([f"pass_hat_k[{pairing.k}]"] if pairing.k > 1 else []), *list(_FIXED)[1:]]
    options = {"resamples": resamples, "seed": seed}
    metrics = []
    for name in names:
        metric = paired_metric(name)
        assert metric is not None
        margin_here = margin if name == SUCCESS else None
        metrics.append(pairing.figure(metric, pairing.tasks, margin=margin_here, **options))
    slices = []
    for key in sorted({key for t in pairing.tasks for key in pairing.infos[t].slices()}):
        tasks = pairing.select(_in_slice(key))
        figure = pairing.figure(_FIXED[SUCCESS], tasks, **options)
        verdicts = pairing.verdicts(tasks)
        slices.append(
            {
                "slice": key,
                **figure,
                "lower": (figure["difference"] or 0.0) < 0,
                "mcnemar": verdicts["mcnemar"],
                "regressed_tasks": [row["id"] for row in verdicts["groups"]["regressed"]],
            }
        )
    for s, p in zip(slices, paired.holm([s["mcnemar"]["p_value"] for s in slices]), strict=True):
        s["mcnemar"]["p_holm"] = p
        s["regressed"] = s["lower"] and s["mcnemar"]["regressed"] > 0 and p < ALPHA
    return {
        "baseline": _run_brief(base),
        "candidate": _run_brief(cand),
        "tasks": len(pairing.tasks),
        "warnings": warnings,
        "changes": changes,
        "excluded": pairing.excluded,
        "unequal_trials": pairing.unequal,
        "verdict_rule": VERDICT_RULE,
        **pairing.verdicts(pairing.tasks),
        "metrics": metrics,
        "non_inferiority": {"metric": SUCCESS, **metrics[0]["non_inferior"]},
        "bootstrap": {"resamples": resamples, "seed": seed},
        "slices": slices,
    }
