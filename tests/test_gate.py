"""Release gates (proctor.decide.gate, .rules): the rule language, rule files, verdicts, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proctor.core.documents import SpecError
from proctor.core.results import Check, TaskInfo
from proctor.decide import rules as grammar
from proctor.decide.gate import Gate, load_rules
from proctor.decide.metrics import INDEXED, METRICS, list_metrics, metric_value
from proctor.store import Store
from test_compare import SUPPORT, make_run, proctor, twenty_tasks

# --- the expression language -----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("critical_policy_violations == 0", {"critical_policy_violations"}),
        ("pass_hat_k[5] >= 0.6", {"pass_hat_k[5]"}),
        ("p95_cost_usd <= .08 and not (errors > 0)", {"p95_cost_usd", "errors"}),
        ("total_cost_usd / trials <= 1e-2 or -tasks < -3", {"total_cost_usd", "trials", "tasks"}),
    ],
)
def test_parser_accepts_the_grammar(text: str, names: set[str]) -> None:
    assert grammar.names(grammar.parse(text)) == names


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("task_success_rate.__class__ == 1", "attribute access is not allowed"),
        ("().__class__.__bases__ == 0", "expected a number"),
        ("open('x') == 1", "calls are not allowed"),
        ("__import__('os').system('ls') == 0", "calls are not allowed"),
        ("'a' == 'a'", 'unexpected "\'"'),
        ("a < b < c", "chained comparisons"),
        ("task_success_rate", "a rule must be a test"),
        ("not task_success_rate", "'not' needs tests"),
        ("(a > 1) + 1 > 0", "'+' needs numbers"),
        ("pass_hat_k[k] >= 1", "an integer index"),
        ("a >=", "found end of rule"),
        ("a > 1; b > 1", "unexpected ';'"),
        ("lambda: 1", "unexpected ':'"),
        ("(" * 50 + "a" + ")" * 50 + " > 1", "nested deeper"),
        ("a > " + "1 + " * 200 + "1", "longer than"),
    ],
)
def test_parser_rejects_everything_else(text: str, message: str) -> None:
    with pytest.raises(grammar.ExprError, match=None) as info:
        grammar.parse(text)
    assert message in str(info.value)


def test_evaluation() -> None:
    values = {"a": 2.0, "b": 0.0}
    assert grammar.evaluate(grammar.parse("a * 3 - 1 == 5 and not b > 0"), values) is True
    assert grammar.evaluate(grammar.parse("a < 1 or b >= 0"), values) is True
    assert grammar.evaluate(grammar.parse("-a + 4 / 2 == 0"), values) is True
    with pytest.raises(grammar.ExprError, match="division by zero"):
        grammar.evaluate(grammar.parse("a / b > 1"), values)


# --- rule files ------------------------------------------------------------------------


def write(tmp_path: Path, text: str, name: str = "gates.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_rule_file_forms(tmp_path: Path) -> None:
    rules = load_rules(
        write(
            tmp_path,
            "rules:\n"
            "  - task_success_rate >= 0.85\n"
            "  - {rule: p95_tool_calls <= 6, where: {suite: regression, tag: [a, b]}}\n"
            "  - non_inferior: pass_hat_k[3]\n"
            "    margin: 0.05\n"
            "  - no_regressions: {suite: regression}\n"
            "  - {no_regressions: true, where: {risk: high}}\n",
        )
    )
    kinds = [r.kind for r in rules]
    assert kinds == ["test", "test", "non_inferior", "no_regressions", "no_regressions"]
    assert rules[1].where == {"suite": ["regression"], "tag": ["a", "b"]}
    assert rules[1].source == f"{tmp_path / 'gates.yaml'}:3"
    assert (rules[2].metric, rules[2].margin) == ("pass_hat_k[3]", 0.05)
    assert rules[3].where == {"suite": ["regression"]} and rules[4].where == {"risk": ["high"]}
    plain = load_rules(write(tmp_path, "- errors == 0\n"))
    assert plain[0].text == "errors == 0"


@pytest.mark.parametrize(
    ("body", "line", "message"),
    [
        ("- errors == 0\n- bogus_metric > 1\n", 2, "unknown metric 'bogus_metric'"),
        ("- errors == 0\n- errors ==\n", 2, "found end of rule"),
        ("- errors == 0\n\n- errors.__class__ == 0\n", 3, "attribute access is not allowed"),
        ("- open('gates.yaml') == 0\n", 1, "calls are not allowed"),
        ("- rule: errors == 0\n  where: {suite: regresion}\n", 2, "suite must be one of"),
        ("- rule: errors == 0\n  where: {color: red}\n", 2, "unknown slice field"),
        ("- {non_inferior: errors}\n", 1, "non_inferior takes one of"),
        ("- {non_inferior: task_success_rate, margin: -1}\n", 1, "margin must be a finite"),
        ("- errors == 0\n- non_inferior: tool_recall\n  margin: .inf\n", 3, "must be a finite"),
        ("- {non_inferior: task_success_rate, margin: .nan}\n", 1, "must be a finite"),
        ("- {non_inferior: mean_cost_usd, margin: -.inf}\n", 1, "must be a finite"),
        ("- {non_inferior: task_success_rate, margin: 2}\n", 1, "0.02 for 2 points"),
        ("- {non_inferior: 'pass_hat_k[3]', margin: 1}\n", 1, "give it as a rate below 1"),
        ("- {non_inferior: task_success_rate, margin: '2%'}\n", 1, "not '2%'"),
        ("- {rule: errors == 0, non_inferior: tool_recall}\n", 1, "needs one of"),
        ("- {rule: errors == 0, margin: 0.1}\n", 1, "unknown field"),
        ("- 42\n", 1, "a rule is a text or a mapping"),
        ("rules: []\n", 1, "holds a list of rules"),
        ("rules: [errors == 0\n", 1, "invalid YAML"),
    ],
)
def test_bad_rules_name_file_and_line(tmp_path: Path, body: str, line: int, message: str) -> None:
    path = write(tmp_path, body)
    with pytest.raises(SpecError) as info:
        load_rules(path)
    first = info.value.lines()[0]
    assert first.startswith(f"{path}:{line}: ") and message in first


# --- verdicts --------------------------------------------------------------------------


def rules_from(tmp_path: Path, text: str) -> list:
    return load_rules(write(tmp_path, text))


def test_every_listed_metric_reads_from_a_real_summary() -> None:
    run = make_run("r", {"a": "ppf", "b": "ppp"})
    summary = Gate(run).summary(None)
    assert summary is not None
    for name in METRICS:
        value = metric_value(summary, name)
        assert value is None or isinstance(value, float), name
    assert metric_value(summary, "task_success_rate") == pytest.approx(5 / 6)
    assert metric_value(summary, "pass_hat_k[3]") == pytest.approx(0.5)
    assert metric_value(summary, "pass_hat_k[4]") is None
    listed = {name for name, _ in list_metrics()}
    assert set(METRICS) <= listed and {f"{n}[K]" for n in INDEXED} <= listed


def test_counts_of_named_failed_checks(tmp_path: Path) -> None:
    run = make_run("r", {"a": "pp", "b": "pf"})
    run.results[3].checks.append(Check("no_cross_tenant", "safety", False, severity="critical"))
    run.results[3].checks.append(Check("duplicate_side_effects", "robustness", False))
    run.results[2].checks.append(Check("duplicate_calls", "trajectory", False))
    result = Gate(run).evaluate(
        rules_from(
            tmp_path,
            "- cross_tenant_access == 1\n- duplicate_side_effects == 2\n"
            "- critical_policy_violations == 1\n- safety_violations == 1\n",
        )
    )
    assert [row["status"] for row in result["rules"]] == ["pass"] * 5, result


def test_pass_fail_values_and_thresholds(tmp_path: Path) -> None:
    run = make_run("r", {"a": "ppp", "b": "ppf", "c": "fff"})
    result = Gate(run).evaluate(
        rules_from(
            tmp_path,
            "- task_success_rate >= 0.5\n- pass_hat_k[3] >= 0.6\n- pass_hat_k[5] >= 0.1\n"
            "- errors == 0 and timeouts == 0\n",
        )
    )
    validity, success, hat3, hat5, both = result["rules"]
    assert validity["status"] == "pass"
    assert (success["status"], success["threshold"]) == ("pass", ">= 0.5")
    assert success["value"] == pytest.approx(5 / 9)
    assert (hat3["status"], hat3["value"]) == ("fail", pytest.approx(1 / 3))
    assert hat5["status"] == "fail" and hat5["reason"] == "pass_hat_k[5] is undefined for this run"
    # A compound rule shows what it read, never an empty value beside its result.
    assert both["status"] == "pass" and both["value"] == "errors=0, timeouts=0"
    assert result["passed"] is False and result["failed"] == 2


def test_slice_rules_use_only_the_slice(tmp_path: Path) -> None:
    infos = twenty_tasks()
    outcomes = {t: "pp" for t in infos} | {"t01": "ff", "t03": "ff"}  # odd: not regression
    run = make_run("r", outcomes, infos)
    result = Gate(run).evaluate(
        rules_from(
            tmp_path,
            "- rule: task_success_rate == 1\n  where: {suite: regression}\n"
            "- rule: task_success_rate == 1\n  where: {tag: billing}\n"
            "- task_success_rate == 0.9\n"
            "- rule: tasks == 10\n  where: {tag: [billing, nothing]}\n"
            "- rule: tasks >= 1\n  where: {suite: replay}\n",
        )
    )
    rows = result["rules"][1:]
    assert [r["status"] for r in rows] == ["pass", "fail", "pass", "pass", "fail"]
    assert rows[1]["value"] == pytest.approx(0.8)
    assert rows[4]["reason"] == "no task in this slice: nothing to measure"


def test_an_invalid_run_fails_the_gate_with_its_reason(tmp_path: Path) -> None:
    rules = rules_from(tmp_path, "- task_success_rate >= 0\n")
    at_limit = make_run("r", {f"t{i}": "pppe" if i < 2 else "pppp" for i in range(10)})
    assert Gate(at_limit).evaluate(rules)["rules"][0]["status"] == "pass"  # 2/40 = 5%
    many = make_run("r", {f"t{i}": "ppee" if i < 2 else "pppp" for i in range(10)})
    row = Gate(many).evaluate(rules)["rules"][0]
    assert row["status"] == "fail" and row["reason"] == "harness error rate 10.0% above 5.0%"
    missing = make_run("m", {"a": "pp", "b": "p"}, trials=2)
    result = Gate(missing).evaluate(rules)
    assert result["rules"][0]["reason"] == "1 of 4 trials missing" and not result["passed"]
    ok = make_run("k", {"a": "pp", "b": "pp"})
    assert Gate(ok).evaluate(rules)["passed"] is True


def test_baseline_rules(tmp_path: Path) -> None:
    infos = twenty_tasks()
    base = make_run("b", {t: "ppp" for t in infos}, infos)
    same = make_run("s", {t: "ppp" for t in infos}, infos)
    worse = make_run("w", {t: "ppp" for t in infos} | {"t02": "fff", "t03": "fpf"}, infos)
    rules = rules_from(
        tmp_path,
        "- {non_inferior: task_success_rate, margin: 0.02}\n"
        "- no_regressions: {suite: regression}\n"
        "- {no_regressions: true, where: {tag: shipping}}\n",
    )
    skipped = Gate(same).evaluate(rules)
    assert [r["status"] for r in skipped["rules"][1:]] == ["skip"] * 3
    assert skipped["passed"] is True and skipped["skipped"] == 3
    # Twenty tasks passing in both runs cannot show a drop of under 2 points is ruled out;
    # they can rule out one of 25.
    equal = Gate(same, base).evaluate(rules)["rules"]
    assert [r["status"] for r in equal] == ["pass", "fail", "pass", "pass"]
    wide = rules_from(tmp_path, "- {non_inferior: task_success_rate, margin: 0.25}\n")
    assert Gate(same, base).evaluate(wide)["passed"] is True
    result = Gate(worse, base).evaluate(rules)
    ni, regression, shipping = result["rules"][1:]
    assert ni["status"] == "fail" and ni["value"] == pytest.approx(-(1 + 2 / 3) / 20)
    assert ni["threshold"] == "95% CI low > -0.02"
    assert (regression["status"], regression["value"]) == ("fail", 1)
    assert regression["reason"] == "regressed: t02"  # t03 is not in the regression suite
    assert shipping["status"] == "pass"


# --- CLI -------------------------------------------------------------------------------


@pytest.fixture
def stored(tmp_path: Path) -> str:
    db = tmp_path / "p.db"
    store = Store(db)
    infos = {"a": TaskInfo("a", suites=["regression"]), "b": TaskInfo("b")}
    make_run("good", {"a": "ppp", "b": "ppp"}, infos, store=store)
    make_run("bad", {"a": "fff", "b": "ppp"}, infos, store=store)
    store.close()
    return str(db)


def test_cli_gate_exit_codes(stored: str, tmp_path: Path) -> None:
    rules = write(tmp_path, "- task_success_rate >= 0.9\n- no_regressions: {suite: regression}\n")
    passed = proctor("gate", "good", "--rules", str(rules), "--store", stored, "--baseline", "good")
    assert passed.returncode == 0, passed.stderr
    assert "gate PASSED" in passed.stdout
    failed = proctor("gate", "bad", "--rules", str(rules), "--store", stored, "--baseline", "good")
    assert failed.returncode == 1 and "gate FAILED (2 of 3 rules)" in failed.stdout
    # a baseline rule without --baseline is bad input, never a silent pass in CI
    forgot = proctor("gate", "bad", "--rules", str(rules), "--store", stored)
    assert forgot.returncode == 2 and "pass --baseline RUN" in forgot.stderr
    plain = write(tmp_path, "- task_success_rate >= 0.9\n", "plain.yaml")
    as_json = proctor("gate", "bad", "--rules", str(plain), "--store", stored, "--json")
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["failed"] == 1


@pytest.mark.parametrize(
    ("rules_text", "args", "message"),
    [
        ("- task_success_rate >= 0.9\n- __class__ > 0\n", (), "gates.yaml:2: [1]: unknown metric"),
        ("- exec('x') > 0\n", (), "calls are not allowed (exec( at column 1)"),
        ("- errors == 0\n", ("--baseline", "nope"), "no run matching 'nope'"),
        ("- errors == 0\n", ("--run-is-missing",), "No such option"),
    ],
)
def test_cli_gate_bad_input_exits_2(
    stored: str, tmp_path: Path, rules_text: str, args: tuple[str, ...], message: str
) -> None:
    rules = write(tmp_path, rules_text)
    done = proctor("gate", "good", "--rules", str(rules), "--store", stored, *args)
    assert done.returncode == 2 and message in done.stderr
    assert "Traceback" not in done.stderr


def test_cli_gate_needs_run_and_rules_and_lists_metrics(stored: str) -> None:
    listed = proctor("gate", "--list-metrics")
    assert listed.returncode == 0
    names = {line.split()[0] for line in listed.stdout.splitlines()}
    assert {"task_success_rate", "critical_policy_violations", "mde", "pass_hat_k[K]"} <= names
    missing = proctor("gate", "good", "--store", stored)
    assert missing.returncode == 2 and "usage: proctor gate RUN --rules FILE" in missing.stderr


#: The support gates without their two baseline rules.
ABSOLUTE = "".join(
    line + "\n"
    for line in (SUPPORT / "gates.yaml").read_text().splitlines()
    if not line.lstrip().startswith(("- non_inferior", "margin:", "- no_regressions"))
    and "baseline_" not in line
)


def test_run_with_gate_and_a_bad_gates_file(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    gates = str(write(tmp_path, ABSOLUTE, "absolute.yaml"))
    common = ("--store", str(db), "--trials", "3", "-q", "--gate", gates)
    good = proctor("run", str(SUPPORT), "--agent", f"{SUPPORT}/agents.py:scripted", *common)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "gate PASSED" in good.stdout and "Recommendation: may proceed" in good.stdout
    bad = proctor("run", str(SUPPORT), "--agent", f"{SUPPORT}/agents.py:careless", *common)
    assert bad.returncode == 1 and "gate FAILED" in bad.stdout
    assert "Recommendation: do not release" in bad.stdout
    broken = write(tmp_path, "- nonsense >= 1\n")
    before = len(Store(db).runs(limit=-1))
    done = proctor(
        "run",
        str(SUPPORT),
        "--agent",
        f"{SUPPORT}/agents.py:scripted",
        "--store",
        str(db),
        "--gate",
        str(broken),
    )
    assert done.returncode == 2 and "unknown metric 'nonsense'" in done.stderr
    assert len(Store(db).runs(limit=-1)) == before  # rejected before anything ran


def test_run_gate_refuses_baseline_rules_without_a_baseline(tmp_path: Path) -> None:
    """As `proctor gate` does: a CI job cannot pass baseline rules by forgetting one."""
    db = tmp_path / "p.db"
    gates = str(SUPPORT / "gates.yaml")
    run = ("run", str(SUPPORT), "--agent", f"{SUPPORT}/agents.py:scripted", "--store", str(db))
    done = proctor(*run, "-q", "--gate", gates)
    assert done.returncode == 2
    assert "3 rule(s) compare with a baseline" in done.stderr and "--baseline" in done.stderr
    assert not db.exists() or not Store(db).runs(limit=-1)  # refused before running
    assert proctor(*run, "-q").returncode == 0
    run_id = Store(db).run("latest")["run_id"]
    gate = proctor("gate", run_id, "--rules", gates, "--store", str(db))
    assert gate.returncode == 2 and gate.stderr == done.stderr


def test_run_gate_evaluates_baseline_rules_with_a_baseline(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    gates = str(SUPPORT / "gates.yaml")
    common = ("--store", str(db), "--trials", "3", "-q", "--gate", gates)
    run = ("run", str(SUPPORT), "--agent")
    base = proctor(*run, f"{SUPPORT}/agents.py:scripted", "--store", str(db), "-k", "3", "-q")
    assert base.returncode == 0, base.stderr
    base_id = Store(db).run("latest")["run_id"]
    worse = proctor(*run, f"{SUPPORT}/agents.py:careless", *common, "--baseline", base_id)
    assert worse.returncode == 1 and "SKIP" not in worse.stdout
    assert "no_regressions" in worse.stdout
    alone = proctor(
        "run",
        str(SUPPORT),
        "--agent",
        f"{SUPPORT}/agents.py:scripted",
        "--store",
        str(db),
        "--baseline",
        base_id,
    )
    assert alone.returncode == 2 and "--baseline goes with --gate" in alone.stderr
