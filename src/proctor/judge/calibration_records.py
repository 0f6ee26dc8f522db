"""Calibration records (kept by store/calibrations.py), and what they allow a judge to do.

`proctor calibrate` stores a record per (rubric version, judge fingerprint): the figures
of the judge against people's labels, and the date. A judge check may fail a trial or
feed a gate only while its rubric version has a record with that very judge meeting the
policy on evidence, not on point estimates: at least `min_items` items that two or more
people labelled and agreed on, the lower bound of kappa's 95% interval at least
`min_kappa`, the one-sided 95% upper bound of the false-pass rate at most
`max_false_pass`, judge errors at most `max_errors`; every slice with `min_items` items
is held to the same bar. Without such a record the check is advisory and says why
("23 items; needs 50"). Records written before these figures existed still load: the
bound is computed from their confusion matrix. Editing the rubric (a new version) or
changing the judge (a new fingerprint) leaves the old record behind: it no longer
matches. `proctor calibrate --same-as` copies a record to another endpoint's judge when a
person states both serve the same model; the copy says so (docs/architecture.md, Judges).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from proctor.judge.calibration import false_pass_upper
from proctor.store.calibrations import records

if TYPE_CHECKING:
    from proctor.store.sqlite import Store


@dataclass(frozen=True)
class CalibrationPolicy:
    """The bar a calibrated judge must meet (docs/architecture.md, Judges: the table of
    how often a lenient judge gets past it)."""

    min_kappa: float = 0.6
    max_false_pass: float = 0.10
    max_errors: float = 0.05
    min_items: int = 50

    def _bar(self, figures: dict[str, Any]) -> list[str]:
        """Why one set of verdict figures (all items, or a slice) falls short."""
        out = []
        items = figures.get("items") or 0
        if items < self.min_items:
            out.append(f"{items} items; needs {self.min_items}")
        ci = figures.get("kappa_ci")
        if ci is None or ci[0] < self.min_kappa:
            shown = "undefined" if ci is None else f"{ci[0]:.2f}"
            out.append(f"kappa's 95% lower bound {shown} < {self.min_kappa:g}")
        upper = figures.get("false_pass_upper")
        if upper is None and "false_pass_upper" not in figures:  # a record from before it
            c = figures.get("confusion") or {}
            fp, tn = c.get("human_fail_judge_pass", 0), c.get("human_fail_judge_fail", 0)
            upper = false_pass_upper(fp, fp + tn)
        if upper is None or upper > self.max_false_pass:
            shown = "undefined (no item people fail)" if upper is None else f"{upper:.1%}"
            out.append(f"false-pass rate's 95% upper bound {shown} > {self.max_false_pass:.0%}")
        return out

    def refusals(self, figures: dict[str, Any]) -> list[str]:
        """Why `figures` fall short of the bar (empty: they meet it)."""
        out = self._bar(figures)
        errors = figures.get("judge_error_rate") or 0.0
        if errors > self.max_errors:
            out.append(f"judge errors {errors:.1%} > {self.max_errors:.0%}")
        for name, row in (figures.get("slices") or {}).items():
            if (row.get("items") or 0) >= self.min_items:
                out += [f"slice {name}: {why}" for why in self._bar(row)]
        return out

    def to_dict(self) -> dict[str, float]:
        return {
            "min_kappa": self.min_kappa,
            "max_false_pass": self.max_false_pass,
            "max_errors": self.max_errors,
            "min_items": self.min_items,
        }


@dataclass(frozen=True)
class Standing:
    """Whether a judge's checks on a rubric count, and why (or why not)."""

    calibrated: bool
    reason: str
    record: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        figures = (self.record or {}).get("figures", {})
        return {
            "calibrated": self.calibrated,
            "reason": self.reason,
            "record": None
            if self.record is None
            else {
                "id": self.record["id"],
                "date": self.record["date"],
                "kappa": figures.get("kappa"),
                "false_pass_rate": figures.get("false_pass_rate"),
                "items": figures.get("items"),
            },
        }


def standing(
    store: Store | None,
    rubric_id: str,
    rubric_version: str,
    fingerprint: str,
    policy: CalibrationPolicy,
) -> Standing:
    """The standing of the judge `fingerprint` on this rubric version: its newest record."""
    found = records(store, rubric_id) if store is not None else []
    if not found:
        return Standing(False, "uncalibrated: no calibration of this rubric")
    mine = [r for r in found if r["judge_fingerprint"] == fingerprint]
    current = [r for r in mine if r["rubric_version"] == rubric_version]
    if not current:
        if mine:
            return Standing(False, "uncalibrated: the rubric changed since its calibration")
        return Standing(False, "uncalibrated: this judge was never calibrated on this rubric")
    record = current[0]
    refused = policy.refusals(record["figures"])
    if refused:
        return Standing(
            False, f"refused by calibration #{record['id']}: {'; '.join(refused)}", record
        )
    return Standing(True, f"calibrated #{record['id']} ({record['date']})", record)
