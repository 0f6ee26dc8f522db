"""`proctor.gate` and `proctor.compare`: release decisions on runs, from Python.

`proctor gate` and `proctor compare` print what these return (docs/architecture.md,
Verdicts). A run is a RunResult, a RunData, or a reference: an exported file, or a run id,
prefix or `latest` in a store.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from proctor.api.errors import InputError
from proctor.decide.compare import DEFAULT_MARGIN, DEFAULT_RESAMPLES

if TYPE_CHECKING:
    from proctor.core.results import Currency
    from proctor.core.runs import RunData
    from proctor.core.summary import RunSummary
    from proctor.decide.gate import Rule
    from proctor.store.sqlite import Store


class HasRunData(Protocol):
    """A RunResult: anything that is a run as compare and gates read it."""

    @property
    def data(self) -> RunData: ...


if TYPE_CHECKING:
    #: A run: a RunResult, a RunData, an exported file, or a run id, prefix or `latest`.
    RunRef: TypeAlias = HasRunData | RunData | str | Path


def run_data(ref: RunRef, store: Store | None = None) -> RunData:
    """The run `ref` names (InputError when there is none)."""
    from proctor.core.runs import RunData
    from proctor.store.export import RunInputError, load_run

    if isinstance(ref, RunData):
        return ref
    if isinstance(ref, str | Path):
        try:
            return load_run(str(ref), store)
        except RunInputError as exc:
            raise InputError(str(exc)) from None
    data: RunData = ref.data
    return data


def check_rules(
    source: str, rules: Sequence[Rule], *, baseline: bool, currency: Currency | None
) -> None:
    """InputError when `rules` (from `source`) cannot be evaluated as asked: baseline rules
    without a baseline (a CI job must not pass them by forgetting it), or costs in a
    currency the price table gives no rate for."""
    from proctor.decide.gate import currencies

    relative = [r for r in rules if r.kind != "test"]
    if relative and not baseline:
        raise InputError(
            f"{source}: {len(relative)} rule(s) compare with a baseline "
            f"({relative[0].source}); pass --baseline RUN"
        )
    missing = sorted(currencies(rules) - ({currency.code} if currency else set()))
    if missing:
        raise InputError(
            f"{source}: rules read costs in {', '.join(missing)}, and the price table has "
            f"no rate for it: add `currency: {{code: {missing[0]}, per_usd: ...}}` to the "
            "file given by --prices or PROCTOR_PRICES"
        )


def required_health(
    run: RunData, rules: Sequence[Rule], store: Store | None, report_path: str | Path | None
) -> dict[str, Any]:
    """The health part of a gate: the report in `report_path` (`proctor health --json`),
    else the store's for the run's suite."""
    from proctor.health.gating import health_gate
    from proctor.store.health_reports import find_health, health_key

    if report_path:
        try:
            report = json.loads(Path(report_path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(f"{report_path}: not a health report ({exc})") from None
        except RecursionError:
            raise InputError(
                f"{report_path}: not a health report (nested deeper than JSON is read)"
            ) from None
        if not isinstance(report, dict) or "suite_verdict" not in report:
            raise InputError(
                f"{report_path}: not a health report (no suite_verdict; `proctor health --json`)"
            )
    else:
        suite = run.manifest.suite
        report = find_health(store, suite.name, suite.digest) if store else None
    return health_gate(report, run, list(rules), health_key(store))


@dataclass(frozen=True)
class GateVerdict:
    """A gate's verdict: whether it passed, and every rule's row with the recommendation
    (`report`, what `proctor gate --json` prints)."""

    passed: bool
    report: dict[str, Any]

    @property
    def exit_code(self) -> int:
        """What `proctor gate` exits with: the recommendation's (0 only to proceed)."""
        return int(self.report["exit_code"])


def rule_list(rules: Sequence[Rule] | str | Path) -> list[Rule]:
    """The rules given, or those of a gates file (SpecError, `file:line`, when bad)."""
    from proctor.decide.gate import load_rules

    return load_rules(rules) if isinstance(rules, str | Path) else list(rules)


def decision_figures(summary: RunSummary, queue: dict[str, Any]) -> dict[str, Any]:
    """What seed 001's harness prints beside its gate: task success, tool precision,
    recall and argument accuracy, and the tasks a person must review (routed by a rule;
    the random sample counted apart, as the source samples none)."""
    tool = summary.tool_use
    routed = sorted({i["task_id"] for i in queue["items"] if i["reasons"] != ["sample"]})
    return {
        "task_success_rate": summary.success_rate,
        "tool_precision": tool["tool_precision"],
        "tool_recall": tool["tool_recall"],
        "arg_accuracy": tool["arg_accuracy"],
        "human_review": routed,
        "sampled": sum(i["reasons"] == ["sample"] for i in queue["items"]),
    }


def gate(
    run: RunRef,
    rules: Sequence[Rule] | str | Path,
    baseline: RunRef | None = None,
    *,
    currency: Currency | None = None,
    health: dict[str, Any] | None = None,
    store: Store | None = None,
) -> GateVerdict:
    """Gate `run` with `rules` (a list, or a gates file); baseline-relative rules compare
    with `baseline`. `currency`: for cost rules, by default the run's own. `health`: the
    health part (`required_health`); a refusal fails the gate."""
    from proctor.core.summary import RunSummary
    from proctor.decide.compare import CompareError
    from proctor.decide.gate import Gate
    from proctor.report.recommendation import recommend
    from proctor.review.queue import review_queue

    data = run_data(run, store)
    base = None if baseline is None else run_data(baseline, store)
    loaded = rule_list(rules)
    try:
        checked = Gate(data, base, currency=currency)
        result = checked.evaluate(loaded)
    except CompareError as exc:
        raise InputError(str(exc)) from None
    if health is not None:
        result["health"] = health
        result["passed"] = result["passed"] and not health["refused"]
    # the run's own summary, as the reports read it (its scorecard is an input)
    summary = data.summary
    if summary is None:
        computed = checked.summary(None)
        assert computed is not None
        summary = RunSummary.new(computed)
    queue = review_queue(data, base)
    rec = recommend(summary, result, queue["queued"])
    result["figures"] = decision_figures(summary, queue)
    result["recommendation"] = {"decision": rec.decision, "reasons": rec.reasons}
    result["exit_code"] = rec.exit_code
    return GateVerdict(bool(result["passed"]), result)


def compare(
    baseline: RunRef,
    candidate: RunRef,
    *,
    margin: float = DEFAULT_MARGIN,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    store: Store | None = None,
) -> dict[str, Any]:
    """`candidate` against `baseline`, task by task: the paired differences with their
    intervals, per slice, and the verdict changes (what `proctor compare --json` prints).
    With `store`, earlier runs on the candidate's holdout tasks are counted and warned of."""
    from proctor.decide.compare import CompareError, compare_runs, holdout_looks

    base, cand = run_data(baseline, store), run_data(candidate, store)
    holdout = store is not None and cand.manifest.suite.holdout_digest
    looks = holdout_looks(store.runs(limit=-1), cand) if store is not None and holdout else 0
    try:
        return compare_runs(base, cand, margin=margin, resamples=resamples, seed=seed, looks=looks)
    except CompareError as exc:
        raise InputError(str(exc)) from None
