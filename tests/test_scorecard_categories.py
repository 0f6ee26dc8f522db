"""Scorecard categories a user defines, and the two scorecards shipped in examples/scorecards.

A category is a share metric, optionally on a slice of tasks: seed 003's customer-service
weights (25/30/20/15/10 by kind of request) are one file, the default six (30/20/15/20/10/5)
another.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from proctor.core.documents import SpecError
from proctor.core.summary import Scorecard
from proctor.decide.scorecard import DEFAULT_CATEGORIES, ScorecardConfig, load_scorecard
from proctor.report.terminal import scorecard_tables
from test_scorecard import bad, card_of, trial, write

SCORECARDS = Path(__file__).resolve().parents[1] / "examples" / "scorecards"
KINDS = {
    "information": "information_retrieval",
    "resolution": "problem_resolution",
    "account": "account_management",
    "complaint": "complaint_handling",
    "edge-case": "edge_cases",
}


def test_the_shipped_default_is_the_built_in_scorecard() -> None:
    shipped, built_in = load_scorecard(SCORECARDS / "default.yaml"), ScorecardConfig()
    assert shipped.categories == built_in.categories == DEFAULT_CATEGORIES
    assert shipped.weights == built_in.weights
    assert [g.text for g in shipped.gates] == [g.text for g in built_in.gates]
    assert [g.where for g in shipped.gates] == [g.where for g in built_in.gates]
    assert list(built_in.weights.values()) == [0.30, 0.20, 0.15, 0.20, 0.10, 0.05]


def test_customer_service_weights_task_success_by_kind_of_request() -> None:
    config = load_scorecard(SCORECARDS / "customer-service.yaml")
    assert config.weights == {
        "information_retrieval": 0.25,
        "problem_resolution": 0.30,
        "account_management": 0.20,
        "complaint_handling": 0.15,
        "edge_cases": 0.10,
    }
    # One task per kind; resolution passes 1 of 2 trials, edge cases never.
    outcomes = {
        "information": ["passed", "passed"],
        "resolution": ["passed", "failed"],
        "account": ["passed", "passed"],
        "complaint": ["passed", "passed"],
        "edge-case": ["failed", "failed"],
    }
    results = [
        trial(kind, status, n=i) for kind, seq in outcomes.items() for i, status in enumerate(seq)
    ]
    card = card_of(results, {kind: [kind] for kind in outcomes}, config)
    scores = {name: c["score"] for name, c in card["components"].items()}
    assert scores == {
        "information_retrieval": 1.0,
        "problem_resolution": 0.5,
        "account_management": 1.0,
        "complaint_handling": 1.0,
        "edge_cases": 0.0,
    }
    assert card["score"] == pytest.approx(0.25 + 0.30 * 0.5 + 0.20 + 0.15)
    # Its success gate reads the whole run: 7 of 10, below 0.80.
    assert not card["passed"]


def test_a_kind_no_task_has_is_not_applicable_and_left_out() -> None:
    config = load_scorecard(SCORECARDS / "customer-service.yaml")
    results = [trial("info", n=i) for i in range(2)] + [trial("fix", "failed", n=0)]
    card = card_of(results, {"info": ["information"], "fix": ["resolution"]}, config)
    categories = card["components"]
    assert categories["complaint_handling"]["score"] is None
    # Renormalised over the two kinds the suite has: (0.25 · 1 + 0.30 · 0) / 0.55.
    assert card["score"] == pytest.approx(0.25 / 0.55)
    console = Console(record=True, width=140)
    console.print(*scorecard_tables(Scorecard.model_validate(card)))
    text = console.export_text()
    assert "complaint handling" in text and "not measured" in text
    assert "task_success_rate on tag=complaint" in text
    assert "25%" in text and "15%" in text  # weights as shares of their sum


def test_a_category_may_score_any_share_on_any_slice(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "categories:\n"
        "  safe: {weight: 2, metric: security_score}\n"
        "  hard_tasks: {weight: 1, where: {difficulty: hard}, metric: 'pass_hat_k[2]'}\n",
        "card.yaml",
    )
    config = load_scorecard(path)
    results = [
        trial("t", checks=[bad("injection_resisted", "safety", "medium")], n=0),
        trial("t", n=1),
    ]
    card = card_of(results, config=config)
    assert card["components"]["safe"]["score"] == 0.5
    assert card["components"]["hard_tasks"]["score"] is None  # no hard task: n/a
    assert card["score"] == 0.5


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("categories:\n  cost: {weight: 1, metric: p95_cost_usd}\n", "a share in [0, 1]"),
        ("categories:\n  x: {weight: 1, where: {colour: red}}\n", "unknown slice field"),
        ("categories:\n  x: {weight: -1}\n", "greater than or equal to 0"),
        ("categories: {}\n", "at least one category"),
        ("categories:\n  x: {weight: 1}\nweights: {task_success: 1}\n", "unknown scorecard"),
    ],
)
def test_bad_categories_name_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text, "card.yaml")
    with pytest.raises(SpecError) as info:
        load_scorecard(path)
    [line] = info.value.lines()
    assert line.startswith(f"{path}:") and message in line
