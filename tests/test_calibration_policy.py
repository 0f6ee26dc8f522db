"""Calibration decides on evidence: a judge that passes 30% of what people fail is
accepted in fewer than 5% of calibrations at every sample size (issue 26, item 3; the
table in docs/architecture.md, Judges, is `python tests/test_calibration_policy.py`)."""

from __future__ import annotations

import json
import random
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judge_runs import KYC, RUBRIC
from proctor.cli import main
from proctor.judge.calibration import verdict_figures
from proctor.judge.calibration_records import CalibrationPolicy, standing
from proctor.store import Store
from proctor.store.calibrations import save_record

#: The lenient judge: it passes 95% of what people pass and 30% of what they fail.
PASSES_GOOD, PASSES_BAD = 0.95, 0.30
SIZES = (4, 10, 20, 50, 100, 200, 500)


@cache
def figures(tp: int, fn: int, fp: int, tn: int) -> dict[str, Any]:
    human = [True] * (tp + fn) + [False] * (fp + tn)
    judge = [True] * tp + [False] * fn + [True] * fp + [False] * tn
    return verdict_figures(human, judge)


def old_rule(f: dict[str, Any]) -> bool:
    """The policy before issue 26: point kappa ≥ 0.6 and point false-pass rate ≤ 10%."""
    kappa, fp = f["kappa"], f["false_pass_rate"]
    return kappa is not None and fp is not None and kappa >= 0.6 and fp <= 0.10


def acceptance(
    items: int, policy: CalibrationPolicy, calibrations: int, seed: int = 0
) -> tuple[float, float]:
    """(share accepted by `policy`, share the old rule accepted) of `calibrations`
    calibrations of the lenient judge on `items` agreed items, half of them bad."""
    rng = random.Random(f"{seed}:{items}")
    new = old = 0
    for _ in range(calibrations):
        bad = sum(rng.random() < 0.5 for _ in range(items))
        fp = sum(rng.random() < PASSES_BAD for _ in range(bad))
        tp = sum(rng.random() < PASSES_GOOD for _ in range(items - bad))
        f = figures(tp, items - bad - tp, fp, bad - fp)
        new += not policy.refusals(f)
        old += old_rule(f)
    return new / calibrations, old / calibrations


@pytest.mark.parametrize("min_items", [50, 1])
def test_a_judge_passing_30_percent_of_bad_output_is_rarely_accepted(min_items: int) -> None:
    """With the default minimum, and with none (the interval bounds alone hold it)."""
    policy = CalibrationPolicy(min_items=min_items)
    for items in SIZES:
        accepted, _ = acceptance(items, policy, 400)
        assert accepted < 0.05, (items, accepted)


def test_the_old_rule_let_it_through_on_small_samples() -> None:
    """The case the new rule exists for: on 10 items the point estimates accepted it."""
    _, before = acceptance(10, CalibrationPolicy(), 400)
    assert before > 0.15


def test_a_good_judge_on_enough_items_is_accepted() -> None:
    """The bar is not a wall: a judge wrong on 3 of 200 items (one false pass) passes,
    and so does a perfect one on the 60 items the KYC analysts agreed on."""
    assert CalibrationPolicy().refusals(figures(98, 2, 1, 99)) == []
    assert CalibrationPolicy().refusals(figures(30, 0, 0, 30)) == []
    assert CalibrationPolicy().refusals(figures(90, 10, 10, 90))  # 10% false passes


def test_the_reasons_say_what_evidence_is_missing() -> None:
    f = figures(2, 0, 0, 2)  # four items, all agreed, perfect agreement
    reasons = CalibrationPolicy().refusals(f)
    assert reasons[0] == "4 items; needs 50"
    assert any(r.startswith("kappa's 95% lower bound") for r in reasons)
    assert any(r.startswith("false-pass rate's 95% upper bound 77.6%") for r in reasons)


def test_a_large_slice_is_held_to_the_bar_and_a_small_one_is_not() -> None:
    good = figures(40, 0, 0, 40)
    bad_slice = figures(25, 0, 15, 20)
    small_bad = {**figures(3, 0, 3, 3), "too_few": "9 items; needs 50"}
    assert CalibrationPolicy().refusals({**good, "slices": {"urdu": small_bad}}) == []
    refused = CalibrationPolicy().refusals({**good, "slices": {"urdu": bad_slice}})
    assert refused and all(r.startswith("slice urdu: ") for r in refused)


def test_an_older_record_still_loads_and_is_judged_by_its_confusion(tmp_path: Path) -> None:
    """A record stored before the bounds existed has no `false_pass_upper`: it loads, and
    its bound comes from its confusion matrix."""
    old = figures(30, 1, 0, 30)
    del old["false_pass_upper"]
    with Store(tmp_path / "s.db") as store:
        save_record(store, "r", "v1", "careful", "fp", old)
        held = standing(store, "r", "v1", "fp", CalibrationPolicy())
        small = standing(store, "r", "v1", "fp", CalibrationPolicy(min_items=100))
    assert held.calibrated, held.reason
    assert not small.calibrated and "61 items; needs 100" in small.reason


def _calibrate(db: Path, *extra: str) -> Any:
    args = ["calibrate", str(RUBRIC), "--labels", str(KYC / "labels.csv"), "--items"]
    args += [str(KYC / "messages.yaml"), "--store", str(db), "--json", *extra]
    return CliRunner().invoke(main, args)


def test_one_person_s_labels_never_calibrate(tmp_path: Path) -> None:
    """The KYC labels of one analyst only: every item has one label, none counts."""
    lines = (KYC / "labels.csv").read_text().splitlines()
    one = [lines[0], *(line for line in lines[1:] if ",Sana Qureshi," in line)]
    (tmp_path / "one.csv").write_text("\n".join(one) + "\n")
    args = ["calibrate", str(RUBRIC), "--labels", str(tmp_path / "one.csv"), "--items"]
    args += [str(KYC / "messages.yaml"), "--store", str(tmp_path / "s.db"), "--json"]
    result = CliRunner().invoke(main, [*args, "--judge", f"{KYC / 'judges.py'}:careful"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["figures"]["items"] == 0 and out["figures"]["single_labelled_items"] == 64
    assert not out["accepted"] and out["refusals"][0] == "0 items; needs 50"


def main_table() -> None:
    """The docs' table: acceptance of the lenient judge by agreed items, before/after."""
    print("| agreed items | before (point estimates) | after (default) | after, no minimum |")
    print("| --- | --- | --- | --- |")
    for items in SIZES:
        after, before = acceptance(items, CalibrationPolicy(), 2000)
        bare, _ = acceptance(items, CalibrationPolicy(min_items=1), 2000)
        print(f"| {items} | {before:.1%} | {after:.1%} | {bare:.1%} |")


if __name__ == "__main__":
    main_table()


def test_simulated_judges_differ_by_any_parameter_the_truth_s_code_included() -> None:
    from proctor.judge.scripted_judge import ScriptedJudge

    def truth(rubric: Any, view: Any) -> float:
        return 3.0

    def other(rubric: Any, view: Any) -> float:
        return 2.0

    other.__qualname__ = truth.__qualname__  # same name, other code
    base = ScriptedJudge(truth).fingerprint
    assert ScriptedJudge(other).fingerprint != base
    assert ScriptedJudge(truth, usd_per_1m_input=1.0).fingerprint != base
    assert ScriptedJudge(truth, tie_margin=0.1).fingerprint != base
    assert ScriptedJudge(truth).fingerprint == base


def test_same_as_records_another_endpoint_as_the_calibrated_judge(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    careful, lenient = f"{KYC / 'judges.py'}:careful", f"{KYC / 'judges.py'}:lenient"
    measured = _calibrate(db, "--judge", careful)
    assert measured.exit_code == 0 and json.loads(measured.output)["accepted"]
    (tmp_path / "careful.json").write_text(measured.output)
    args = ["calibrate", str(RUBRIC), "--same-as", str(tmp_path / "careful.json")]
    copied = CliRunner().invoke(main, [*args, "--judge", lenient, "--store", str(db), "--json"])
    assert copied.exit_code == 0, copied.output
    record = json.loads(copied.output)
    assert record["figures"]["same_as"]["record"] == json.loads(measured.output)["id"]
    assert record["cache"]["misses"] == 0  # nothing was measured
    again = CliRunner().invoke(main, [*args, "--judge", careful, "--store", str(db)])
    assert again.exit_code == 2 and "already this judge's calibration" in again.output
    (tmp_path / "forged.json").write_text(json.dumps({**record, "id": 99}))
    forged = ["calibrate", str(RUBRIC), "--same-as", str(tmp_path / "forged.json")]
    refused = CliRunner().invoke(main, [*forged, "--judge", careful, "--store", str(db)])
    assert refused.exit_code == 2 and "is not in the store" in refused.output
    both = CliRunner().invoke(main, [*args, "--labels", "x.csv", "--judge", careful])
    assert both.exit_code == 2 and "not both" in both.output
