"""Calibration figures against scikit-learn, the labels format, and bad labels or rubrics."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from judge_runs import KYC, RUBRIC
from proctor.cli import main
from proctor.core.documents import SpecError
from proctor.judge.calibration import (
    LabelError,
    cohen_kappa,
    human_verdicts,
    kappa_interval,
    verdict_figures,
)
from proctor.labels.label_file import Label, read_labels, write_labels
from proctor.tasks.rubrics import load_rubric

sklearn_metrics = pytest.importorskip("sklearn.metrics")

verdict_pairs = st.lists(st.tuples(st.booleans(), st.booleans()), min_size=2, max_size=200)


@given(verdict_pairs)
@settings(max_examples=200, deadline=None)
def test_kappa_and_confusion_agree_with_scikit_learn(pairs: list[tuple[bool, bool]]) -> None:
    human = [h for h, _ in pairs]
    judge = [j for _, j in pairs]
    figures = verdict_figures(human, judge)
    ours = figures["kappa"]
    if ours is None:  # undefined exactly when both raters use one and the same category
        assert len(set(human) | set(judge)) == 1
    else:
        assert ours == pytest.approx(sklearn_metrics.cohen_kappa_score(human, judge), abs=1e-9)
    matrix = sklearn_metrics.confusion_matrix(human, judge, labels=[True, False])
    c = figures["confusion"]
    ours_matrix = [
        [c["human_pass_judge_pass"], c["human_pass_judge_fail"]],
        [c["human_fail_judge_pass"], c["human_fail_judge_fail"]],
    ]
    assert ours_matrix == matrix.tolist()
    fails = [j for h, j in pairs if not h]
    expected = sum(fails) / len(fails) if fails else None
    assert figures["false_pass_rate"] == expected
    interval = figures["kappa_ci"]
    if ours is not None and interval is not None:
        assert interval[0] <= ours + 1e-12 and ours - 1e-12 <= interval[1]


@given(st.lists(st.tuples(st.integers(1, 4), st.integers(1, 4)), min_size=2, max_size=100))
@settings(max_examples=100, deadline=None)
def test_kappa_on_scores_agrees_with_scikit_learn(pairs: list[tuple[int, int]]) -> None:
    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    ours = cohen_kappa(a, b)
    if ours is not None:
        assert ours == pytest.approx(sklearn_metrics.cohen_kappa_score(a, b), abs=1e-9)


def test_the_kappa_interval_covers_the_truth_about_95_percent_of_the_time() -> None:
    # two raters who agree with a latent verdict 85% and 80% of the time
    rng = random.Random(5)
    true_kappa_draws, covered, runs = [], 0, 300
    big = [(rng.random() < 0.5) for _ in range(200_000)]
    a_big = [v if rng.random() < 0.85 else not v for v in big]
    b_big = [v if rng.random() < 0.80 else not v for v in big]
    truth = cohen_kappa(a_big, b_big)
    assert truth is not None
    for _ in range(runs):
        idx = [rng.randrange(len(big)) for _ in range(150)]
        interval = kappa_interval([a_big[i] for i in idx], [b_big[i] for i in idx])
        assert interval is not None
        true_kappa_draws.append(interval)
        covered += interval[0] <= truth <= interval[1]
    assert 0.90 <= covered / runs <= 0.99


@given(
    st.lists(
        st.tuples(
            st.text(min_size=1, max_size=12).filter(lambda s: s.strip() == s and "\n" not in s),
            st.sampled_from(["pass", "fail", "1", "4"]),
            st.sampled_from(["Sana", "Hamza", "Ayesha, K."]),
            st.sampled_from(["", "urdu", 'say "hi"']),
        ),
        min_size=1,
        max_size=20,
        unique_by=lambda t: (t[0], t[2]),
    ),
    st.sampled_from([".csv", ".jsonl"]),
)
@settings(max_examples=60, deadline=None)
def test_labels_round_trip_through_the_one_format(
    rows: list[tuple[str, str, str, str]], suffix: str
) -> None:
    import tempfile

    labels = [Label(item, label, who, slice_) for item, label, who, slice_ in rows]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"labels{suffix}"
        write_labels(path, labels)
        back = read_labels(path)
    assert [(x.item, x.label, x.labeller, x.slice) for x in back] == [
        (x.item, x.label, x.labeller, x.slice) for x in labels
    ]


def test_labels_of_mixed_scales_or_off_the_scale_are_refused() -> None:
    rubric = load_rubric(RUBRIC)
    mixed = [Label("a", "pass", "x", line=2), Label("b", "3", "x", line=3)]
    with pytest.raises(LabelError, match=r"^3: label: '3' mixes scales"):
        human_verdicts(rubric, mixed)
    with pytest.raises(LabelError, match=r"^2: label: 7 is not a score"):
        human_verdicts(rubric, [Label("a", "7", "x", line=2)])
    scores = human_verdicts(rubric, [Label("a", "3", "x"), Label("b", "2", "x")])
    assert scores == {("a", "x"): True, ("b", "x"): False}  # read against pass_threshold 3


def test_bad_labels_files_name_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    path.write_text("item,label,labeller\nm1,pass,ann\nm1,fail,ann\nm2,,ann\nm3,good,bob\n")
    with pytest.raises(SpecError) as caught:
        read_labels(path)
    assert caught.value.lines() == [
        f"{path}:3: item: ann labelled m1 twice (line 2)",
        f"{path}:4: label: required field is empty",
        f"{path}:5: label: 'good' is neither pass/fail nor a score",
    ]
    path.write_text("item,verdict,labeller\nm1,pass,ann\n")
    with pytest.raises(SpecError, match="missing column"):
        read_labels(path)


def _calibrate(tmp_path: Path, labels: str, *extra: str) -> tuple[int, str]:
    path = tmp_path / "labels.csv"
    path.write_text(labels)
    out = CliRunner().invoke(
        main,
        ["calibrate", str(RUBRIC), "--labels", str(path), "--items", str(KYC / "messages.yaml"),
         "--judge", f"{KYC}/judges.py:careful", "--store", str(tmp_path / "p.db"), *extra],
    )  # fmt: skip
    return out.exit_code, out.output


def test_calibrate_refuses_unknown_items_and_mixed_scales(tmp_path: Path) -> None:
    code, out = _calibrate(tmp_path, "item,label,labeller\nmsg-01,pass,a\nnope,fail,a\n")
    assert code == 2 and f"{tmp_path}/labels.csv:3: item: unknown item 'nope'" in out
    code, out = _calibrate(tmp_path, "item,label,labeller\nmsg-01,pass,a\nmsg-02,2,a\n")
    assert code == 2 and f"{tmp_path}/labels.csv:3: label: '2' mixes scales" in out
    code, out = _calibrate(tmp_path, "item,label,labeller\nmsg-01,5,a\n")
    assert code == 2 and f"{tmp_path}/labels.csv:2: label: 5 is not a score" in out
    assert "Traceback" not in out


BROKEN_RUBRIC = """\
id: document-request
question: Is the request clear and polite?
subject: {tool: request_documents, argument: message}
criteria: [Names every document plainly.]
scale:
  - score: 1
    description: Unclear.
    examples: ["Missing: passport."]
  - score: 2
    description: Clear.
    examples: []
pass_threshold: 7
"""


def test_rubrics_are_validated_like_tasks(tmp_path: Path) -> None:
    (tmp_path / "tasks").mkdir()
    (tmp_path / "rubrics").mkdir()
    task = (KYC / "tasks" / "cases.yaml").read_text(encoding="utf-8")
    (tmp_path / "tasks" / "cases.yaml").write_text(task, encoding="utf-8")
    (tmp_path / "domain.py").write_text((KYC / "domain.py").read_text(encoding="utf-8"))
    rubric = tmp_path / "rubrics" / "document-request.yaml"
    rubric.write_text(BROKEN_RUBRIC)
    out = CliRunner().invoke(main, ["validate", str(tmp_path)])
    assert out.exit_code == 2 and "Traceback" not in out.output
    problems = [line for line in out.output.splitlines() if line.startswith(str(tmp_path))]
    assert problems == [
        f"{rubric}:11: scale[1].examples: List should have at least 1 item after validation, not 0",
    ]
    rubric.write_text(BROKEN_RUBRIC.replace("examples: []", 'examples: ["Passport, please."]'))
    out = CliRunner().invoke(main, ["validate", str(tmp_path)])
    problems = [line for line in out.output.splitlines() if line.startswith(str(tmp_path))]
    assert problems == [f"{rubric}:12: pass_threshold: 7 is not a score of the scale [1, 2]"]
    fixed = BROKEN_RUBRIC.replace("examples: []", 'examples: ["Passport, please."]')
    rubric.write_text(
        fixed.replace("pass_threshold: 7", "pass_threshold: 2").replace(
            "request_documents", "send_email"
        )
    )
    out = CliRunner().invoke(main, ["validate", str(tmp_path)])
    assert "rubric document-request judges unknown tool 'send_email'" in out.output


def test_the_review_desks_export_is_the_labels_format(tmp_path: Path) -> None:
    from proctor.labels.ground_truth import write_labels as desk_write

    rows = [
        {"item": "abc123/kyc-case-03#0", "label": "fail", "labeller": "alice",
         "slice": "risk:high", "rubric": "desk@1f2e", "note": "wrong_outcome: curt"},
        {"item": "abc123/kyc-case-03#0", "label": "pass", "labeller": "bob",
         "slice": "risk:high", "rubric": "desk@1f2e", "note": "correct"},
    ]  # fmt: skip
    for suffix in (".csv", ".jsonl"):
        desk_write(tmp_path / f"l{suffix}", rows)
        back = read_labels(tmp_path / f"l{suffix}")
        assert [(x.item, x.label, x.labeller, x.slice, x.rubric, x.note) for x in back] == [
            tuple(row.values()) for row in rows
        ]
