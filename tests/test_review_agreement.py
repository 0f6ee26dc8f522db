"""Agreement statistics against the reference packages, and how labels become truth.

Cohen's kappa is checked against scikit-learn and Krippendorff's alpha against the
`krippendorff` package on random data (hypothesis); ground truth, the label form's rules
and the labels file are checked on cases made to pass wrongly.
"""

from __future__ import annotations

import csv
import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proctor.core.results import TaskInfo
from proctor.labels.agreement import human_vs_automated, reviewer_agreement
from proctor.labels.desk_settings import DeskSettings, Scale, load_settings
from proctor.labels.ground_truth import (
    LabelError,
    export_rows,
    ground_truth,
    parse_submission,
    slice_column,
    write_labels,
)
from proctor.stats.interrater import cohen_kappa, krippendorff_alpha
from proctor.store.label_tables import LabelRow

BINARY = DeskSettings()
SCORES = DeskSettings(scale=Scale(kind="score", min=1, max=5, pass_at=4))


def label(
    reviewer: str, task: str, trial: int, value: str, *, ambiguous: bool = False, rid: int = 0
) -> LabelRow:
    return LabelRow(
        reviewer_id=rid or hash(reviewer) % 1000 + 1,
        reviewer=reviewer,
        run_id="r",
        task_id=task,
        trial=trial,
        value=value,
        passed=None if not value else value == "pass",
        reason="correct" if value == "pass" else "wrong_outcome",
        note="" if value == "pass" else "step 3",
        ambiguous=ambiguous,
        rubric_version="v",
        created_at=1.0,
    )


# -- kappa and alpha against the references --------------------------------------------

pairs_of_labels = st.integers(min_value=2, max_value=40).flatmap(
    lambda n: st.tuples(
        st.lists(st.sampled_from("abc"), min_size=n, max_size=n),
        st.lists(st.sampled_from("abc"), min_size=n, max_size=n),
    )
)


@settings(max_examples=200, deadline=None)
@given(pairs_of_labels)
def test_cohen_kappa_equals_scikit_learn(data: tuple[list[str], list[str]]) -> None:
    from sklearn.metrics import cohen_kappa_score

    a, b = data
    ours = cohen_kappa(a, b)
    if len(set(a) | set(b)) == 1:  # both raters used one category: kappa is undefined
        assert ours is None
        return
    assert ours == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)


def test_kappa_examples() -> None:
    # perfect agreement with two categories; chance agreement only; systematic disagreement
    assert cohen_kappa(["p", "f", "p"], ["p", "f", "p"]) == 1.0
    assert cohen_kappa(["p", "p", "f", "f"], ["p", "f", "p", "f"]) == 0.0
    assert cohen_kappa(["p", "f"], ["f", "p"]) == -1.0
    assert cohen_kappa([], []) is None
    with pytest.raises(ValueError):
        cohen_kappa(["p"], [])


units_strategy = st.lists(
    st.lists(st.one_of(st.none(), st.integers(min_value=1, max_value=4)), min_size=3, max_size=3),
    min_size=2,
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(units_strategy, st.sampled_from(["nominal", "ordinal", "interval"]))
def test_krippendorff_alpha_equals_the_package(units: list[list[int | None]], level: str) -> None:
    import krippendorff
    import numpy as np

    given_values = [[v for v in unit if v is not None] for unit in units]
    pairable = [v for unit in given_values if len(unit) >= 2 for v in unit]
    ours = krippendorff_alpha(given_values, level)  # type: ignore[arg-type]
    if len(set(pairable)) < 2:
        assert ours is None
        return
    reliability = np.array(
        [[np.nan if v is None else v for v in unit] for unit in units], dtype=float
    ).T  # raters x units
    theirs = krippendorff.alpha(reliability_data=reliability, level_of_measurement=level)
    assert ours == pytest.approx(theirs, abs=1e-9)


def test_alpha_examples() -> None:
    assert krippendorff_alpha([["p", "p"], ["f", "f"]]) == 1.0
    assert krippendorff_alpha([["p", "p"], ["p", "p"]]) is None  # one category: undefined
    assert krippendorff_alpha([["p"], ["f"]]) is None  # no unit with two values
    # every unit split: worse than chance
    alpha = krippendorff_alpha([["p", "f"], ["f", "p"]])
    assert alpha is not None and alpha < 0


def test_reviewer_agreement_by_pair_and_slice() -> None:
    labels = [
        label("ann", "t1", 0, "pass"),
        label("bob", "t1", 0, "pass"),
        label("ann", "t2", 0, "fail"),
        label("bob", "t2", 0, "pass"),
        label("ann", "t3", 0, "fail"),
        label("bob", "t3", 0, "fail"),
        label("cat", "t3", 0, "fail"),
        label("cat", "t4", 0, "pass"),  # one reviewer only: no unit for alpha
        label("bob", "t4", 0, "", ambiguous=True),  # a flag is no verdict
    ]
    slices = {"t1": ["risk:high"], "t2": ["risk:high"], "t3": ["risk:low"], "t4": ["risk:low"]}
    out = reviewer_agreement(labels, slices, "nominal")
    assert out["labelled_trials"] == 4 and out["double_labelled"] == 3
    by_pair = {tuple(p["reviewers"]): p for p in out["pairs"]}
    assert set(by_pair) == {("ann", "bob"), ("ann", "cat"), ("bob", "cat")}
    assert by_pair[("ann", "bob")]["trials"] == 3
    assert by_pair[("ann", "bob")]["agreement"] == pytest.approx(2 / 3)
    assert by_pair[("ann", "bob")]["kappa"] == pytest.approx(cohen_kappa("pff", "ppf"))
    assert by_pair[("bob", "cat")]["trials"] == 1  # t4's flag does not pair with cat
    assert out["slices"]["risk:low"]["trials"] == 1
    assert out["slices"]["risk:high"]["trials"] == 2
    units = [["pass", "pass"], ["fail", "pass"], ["fail", "fail", "fail"]]
    assert out["overall"]["alpha"] == pytest.approx(krippendorff_alpha(units))


# -- ground truth ------------------------------------------------------------------------


def test_ground_truth_adjudication_is_final_and_flags_keep_tasks_out() -> None:
    labels = [
        label("ann", "agree", 0, "fail"),
        label("bob", "agree", 0, "fail"),
        label("ann", "split", 0, "pass"),
        label("bob", "split", 0, "fail"),
        label("ann", "settled", 0, "pass"),
        label("bob", "settled", 0, "fail"),
        label("ann", "broken", 0, "pass"),
        label("bob", "broken", 1, "", ambiguous=True),  # flags the task, not the trial
        label("ann", "single", 0, "pass"),
    ]
    adjudicated = {("settled", 0): label("judge", "settled", 0, "fail")}
    truth = ground_truth(labels, adjudicated)
    assert truth.passed == {("agree", 0): False, ("settled", 0): False, ("single", 0): True}
    assert set(truth.disagreements) == {("split", 0)}
    assert set(truth.flagged) == {"broken"}  # both of its trials stay out
    assert truth.adjudicated == {("settled", 0)}


def test_human_against_automated() -> None:
    labels = [label("ann", f"t{i}", 0, v) for i, v in enumerate(["pass", "fail", "fail", "pass"])]
    truth = ground_truth(labels, {})
    automated = {("t0", 0): True, ("t1", 0): True, ("t2", 0): False}  # t3: an error trial
    h = human_vs_automated(truth, automated)
    assert h["trials"] == 3
    assert h["human_success"] == pytest.approx(1 / 3)
    assert h["automated_success"] == pytest.approx(2 / 3)
    assert h["false_pass"] == 1 and h["false_fail"] == 0  # t1: graders passed, people failed
    assert h["agreement"] == pytest.approx(2 / 3)
    assert h["kappa"] == pytest.approx(cohen_kappa([1, 0, 0], [1, 1, 0]))
    low, high = h["human_ci"]
    assert low < 1 / 3 < high


# -- the label form ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"verdict_0": "maybe", "reason": "correct"}, "verdict_0: 'maybe' is not on the scale"),
        ({"reason": "correct"}, "verdict_0: nothing is not on the scale"),
        ({"verdict_0": "pass", "reason": "nope"}, "reason: 'nope' is not one of"),
        ({"verdict_0": "fail", "reason": "wrong_tool"}, "note: evidence is required for a fail"),
        (
            {"verdict_0": "fail", "reason": "other", "note": "x" * 4001},
            "note: 4001 characters, at most 4000",
        ),
        (
            {"ambiguous": "1", "reason": "other"},
            "note: evidence is required for an ambiguous task",
        ),
    ],
)
def test_bad_labels_are_refused(form: dict[str, str], message: str) -> None:
    with pytest.raises(LabelError, match=message.replace("(", r"\(")):
        parse_submission(BINARY, form, 1)


def test_a_pair_needs_both_verdicts_and_scores_stay_on_their_scale() -> None:
    with pytest.raises(LabelError, match="verdict_1"):
        parse_submission(BINARY, {"verdict_0": "pass", "reason": "correct"}, 2)
    ok = parse_submission(SCORES, {"verdict_0": "4", "reason": "correct"}, 1)
    assert ok.verdicts == ("4",) and SCORES.scale.passes("4") and not SCORES.scale.passes("3")
    for outside in ("0", "6", "4.5", "pass"):
        with pytest.raises(LabelError, match="not on the scale"):
            parse_submission(SCORES, {"verdict_0": outside, "reason": "correct"}, 1)
    with pytest.raises(LabelError, match="evidence is required for a fail"):
        parse_submission(SCORES, {"verdict_0": "2", "reason": "wrong_tool"}, 1)
    with pytest.raises(LabelError, match="an adjudication"):
        parse_submission(BINARY, {"verdict_0": "pass", "reason": "correct"}, 1, final=True)


def test_settings_file_errors_name_file_line_and_field(tmp_path: Path) -> None:
    from proctor.core.documents import SpecError

    path = tmp_path / "desk.yaml"
    path.write_text("scale:\n  kind: score\n  pass_at: 9\ndouble_share: 2\ncolour: red\n")
    with pytest.raises(SpecError) as caught:
        load_settings(path)
    lines = caught.value.lines()
    assert any(line.startswith(f"{path}:1: scale: need min <= pass_at") for line in lines)
    assert any(line.startswith(f"{path}:4: double_share") for line in lines)
    assert any(line.startswith(f"{path}:5: colour: unknown field") for line in lines)
    path.write_text("reasons:\n  - {code: a, text: A}\n  - {code: a, text: again}\n")
    with pytest.raises(SpecError, match="reason codes repeat: a"):
        load_settings(path)
    # the rubric version follows what reviewers apply
    path.write_text("guidance: Judge the end state only.\n")
    assert load_settings(path).rubric_version != BINARY.rubric_version
    path.write_text("double_share: 0.5\n")
    assert load_settings(path).rubric_version == BINARY.rubric_version


# -- the labels file ----------------------------------------------------------------------


def test_labels_file_has_calibrates_columns_and_defuses_formulas(tmp_path: Path) -> None:
    labels = [
        label("ann", "t1", 0, "fail"),
        label("bob", "t1", 0, "pass"),
        label("ann", "t2", 1, "pass"),
        label("bob", "t3", 0, "", ambiguous=True),
        label("ann", "t3", 0, "pass"),
    ]
    labels[0] = replace(labels[0], note='=HYPERLINK("http://x")')
    truth = ground_truth(labels, {("t1", 0): label("judge", "t1", 0, "fail")})
    infos = {t: TaskInfo(t, ["a", "b"], [], "high", "dev") for t in ("t1", "t2", "t3")}
    rows = export_rows(truth, slice_column(infos, "risk"))
    assert [(r["item"], r["labeller"], r["label"]) for r in rows] == [
        ("r/t1#0", "ann", "fail"),
        ("r/t1#0", "bob", "pass"),
        ("r/t2#1", "ann", "pass"),
    ]  # t3 is flagged: out
    assert {r["slice"] for r in rows} == {"risk:high"} and rows[0]["rubric"] == "desk@v"
    assert rows[2]["note"] == "correct" and rows[0]["note"].startswith("wrong_outcome: =HYP")
    final = export_rows(truth, slice_column(infos, "risk"), final=True)
    assert [(r["item"], r["labeller"], r["label"]) for r in final] == [
        ("r/t1#0", "final", "fail"),  # the adjudication
        ("r/t2#1", "final", "pass"),
    ]
    assert slice_column(infos, "tag")["t1"] == "tag:a+tag:b"
    out = tmp_path / "labels.csv"
    write_labels(out, rows)
    assert out.read_bytes().startswith(b"item,label,labeller,slice,rubric,note\r\n")
    read = list(csv.DictReader(out.open(encoding="utf-8", newline="")))
    assert read[0]["note"] == 'wrong_outcome: =HYPERLINK("http://x")'  # no cell starts with =
    jsonl = tmp_path / "labels.jsonl"
    write_labels(jsonl, rows)
    first = json.loads(jsonl.read_text().splitlines()[0])
    assert list(first) == ["item", "label", "labeller", "slice", "rubric", "note"]
    with pytest.raises(LabelError, match=r"\.csv or \.jsonl"):
        write_labels(tmp_path / "labels.xlsx", rows)
