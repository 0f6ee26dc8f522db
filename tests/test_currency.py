"""Cost in the user's currency (seed 004's `p95_cost_eur`): a rate in the price table, cost
metrics in that currency for gates and scorecards, and reports that show it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import proctor
from proctor.agents.pricing import PriceTable
from proctor.core.results import Currency
from proctor.decide.gate import Gate, load_rules
from proctor.decide.metrics import metric_known, metric_value
from test_compare import SUPPORT, make_run

AGENT = f"{SUPPORT}/agents.py:scripted"


def prices(tmp_path: Path, currency: str = "{code: EUR, per_usd: 0.5}") -> Path:
    path = tmp_path / "prices.yaml"
    path.write_text(f"currency: {currency}\ngpt-4o: {{input: 2.5, output: 10}}\n")
    return path


def test_the_price_table_names_a_currency(tmp_path: Path) -> None:
    table = PriceTable.load(prices(tmp_path))
    assert table.currency == Currency("EUR", 0.5)
    assert table.price("gpt-4o") == (2.5, 10.0) and table.price("currency") is None
    assert PriceTable().currency is None  # no rate is built in
    for bad, why in [
        ("{code: EURO, per_usd: 0.9}", "three letters"),
        ("{code: EUR, per_usd: 0}", "positive number"),
        ("{code: EUR, per_usd: cheap}", "positive number"),
        ("{code: EUR}", "code: ISO 4217"),
        ("EUR", "code: ISO 4217"),
    ]:
        with pytest.raises(ValueError, match=why) as info:
            PriceTable.load(prices(tmp_path, bad))
        assert str(info.value).startswith(f"{tmp_path / 'prices.yaml'}: currency: ")


def test_cost_metrics_exist_in_any_currency_the_table_has_a_rate_for() -> None:
    assert metric_known("p95_cost_eur") and metric_known("total_cost_gbp")
    assert not metric_known("p95_cost_euro") and not metric_known("p95_latency_eur")
    run = make_run("r", {"a": "pp", "b": "pf"}, cost=0.04)
    summary = Gate(run).summary(None)
    assert summary is not None
    eur = Currency("EUR", 0.9)
    assert metric_value(summary, "p95_cost_eur", eur) == pytest.approx(0.036)
    assert metric_value(summary, "cost_per_passed_trial_eur", eur) == pytest.approx(0.16 / 3 * 0.9)
    assert metric_value(summary, "p95_cost_gbp", eur) is None  # no GBP rate
    assert metric_value(summary, "p95_cost_eur", None) is None


def test_a_gate_in_another_currency_without_its_rate_fails_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "gates.yaml"
    path.write_text("- p95_cost_eur <= 1\n")
    run = make_run("r", {"a": "pp"})
    row = Gate(run).evaluate(load_rules(path))["rules"][1]
    assert row["status"] == "fail" and "no EUR rate" in row["reason"]
    run.manifest = run.manifest.model_copy(update={"currency": {"code": "EUR", "per_usd": 2.0}})
    row = Gate(run).evaluate(load_rules(path))["rules"][1]
    assert row["status"] == "pass" and row["value"] == pytest.approx(0.02)


def test_a_run_records_the_currency_and_gates_and_reports_use_it(tmp_path: Path) -> None:
    db, md = str(tmp_path / "p.db"), tmp_path / "r.md"
    gates = tmp_path / "gates.yaml"
    gates.write_text("- p95_cost_usd >= 0\n- p95_cost_eur >= 0\n")
    table = str(prices(tmp_path))
    done = proctor(
        "run", str(SUPPORT), "--agent", AGENT, "--store", db, "-q", "--prices", table,
        "--gate", str(gates), "--json", str(tmp_path / "s.json"),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["manifest"]["currency"] == {"code": "EUR", "per_usd": 0.5}
    assert summary["cost"]["currency"] == {"code": "EUR", "per_usd": 0.5}
    gate = proctor("gate", "latest", "--rules", str(gates), "--store", db, "--json")
    assert gate.returncode == 0, gate.stderr
    usd, eur = (row["value"] for row in json.loads(gate.stdout)["rules"][1:])
    assert usd > 0 and eur == pytest.approx(usd * 0.5)
    assert proctor("report", "latest", "--store", db, "--md", str(md)).returncode == 0
    total = summary["cost"]["total_usd"]
    assert f"Total ${total:.4f} (EUR {total * 0.5:.4f})" in md.read_text()


def test_costs_in_a_currency_without_a_rate_are_bad_input(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    gates = tmp_path / "gates.yaml"
    gates.write_text("- p95_cost_eur <= 0.08\n")
    run = ("run", str(SUPPORT), "--agent", AGENT, "--store", str(db), "-q")
    done = proctor(*run, "--gate", str(gates))
    assert done.returncode == 2 and "no rate for it" in done.stderr
    assert not db.exists()  # refused before anything ran
    card = tmp_path / "card.yaml"
    card.write_text("gates:\n  - p95_cost_eur <= 0.08\n")
    assert proctor(*run, "--scorecard", str(card)).returncode == 2
    assert proctor(*run).returncode == 0
    done = proctor("gate", "latest", "--rules", str(gates), "--store", str(db))
    assert done.returncode == 2 and "currency: {code: EUR" in done.stderr
    assert proctor("gate", "latest", "--rules", str(gates), "--store", str(db),
                   "--prices", str(prices(tmp_path))).returncode == 0  # fmt: skip


def test_the_renamed_cost_metric_names_its_new_name(tmp_path: Path) -> None:
    path = tmp_path / "gates.yaml"
    path.write_text("- cost_per_success_usd <= 1\n")
    done = proctor("gate", "x", "--rules", str(path))
    assert done.returncode == 2
    assert "'cost_per_success_usd' is now 'cost_per_passed_trial_usd'" in done.stderr
