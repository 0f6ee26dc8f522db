"""JUnit XML (proctor.report.junit): one test case per task, failures carry the checks."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from proctor.core.results import Check
from proctor.report.junit import junit_xml
from test_compare import SUPPORT, make_run, proctor


def cases(xml: str) -> dict[str, ET.Element]:
    root = ET.fromstring(xml.split("\n", 1)[1])
    return {case.get("name", ""): case for case in root.iter("testcase")}


def test_one_case_per_task_with_failures_errors_and_missing_tasks() -> None:
    run = make_run("r1", {"ok": "ppp", "flaky": "pfp", "broken": "eee", "mixed": "efe"})
    xml = junit_xml("r1", "support", ["broken", "flaky", "mixed", "never", "ok"], run.results)
    root = ET.fromstring(xml.split("\n", 1)[1])
    assert root.tag == "testsuites"
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("5", "2", "2")
    found = cases(xml)
    assert list(found) == ["broken", "flaky", "mixed", "never", "ok"]
    assert found["ok"].find("failure") is None and found["ok"].find("error") is None
    assert found["ok"].get("classname") == "proctor.support"
    failure = found["flaky"].find("failure")
    assert failure is not None
    assert failure.get("message") == (
        "1 of 3 trials failed: answer_ok×1, outcome:orders.A-100.status×1"
    )
    assert failure.text is not None
    assert "trial 1 (seed 1): failed" in failure.text
    assert '- outcome:orders.A-100.status (outcome): {"x": 1}' in failure.text
    assert "trial 0" not in failure.text  # only the failed trials
    mixed = found["mixed"].find("failure")
    assert mixed is not None and mixed.get("message", "").startswith("1 of 1 trials failed")
    error = found["broken"].find("error")
    assert error is not None and error.get("message") == "all 3 trials errored"
    never = found["never"].find("error")
    assert never is not None and never.get("message") == "no trial finished"
    assert float(found["ok"].get("time", "0")) == 3.0


def test_text_that_xml_cannot_hold_is_replaced() -> None:
    run = make_run("r1", {"t\x01x": "f"})
    run.results[0].checks.append(
        Check("leak", "safety", False, severity="high", evidence={"answer": "a\x00b"})
    )
    run.results[0].error = "agent said \x00\x1b[31mboom"
    xml = junit_xml("r1", "s", ["t\x01x"], run.results)
    found = cases(xml)  # parses: no raw control characters left
    assert list(found) == ["t?x"]
    failure = found["t?x"].find("failure")
    assert failure is not None and failure.text is not None
    assert '- leak (safety, high): {"answer": "a\\u0000b"}' in failure.text
    assert "error: agent said ??[31mboom" in failure.text


def test_run_junit_option_writes_a_parseable_report(tmp_path: Path) -> None:
    out = tmp_path / "reports" / "junit.xml"
    done = proctor(
        "run",
        str(SUPPORT),
        "--agent",
        f"{SUPPORT}/agents.py:careless",
        "--store",
        str(tmp_path / "p.db"),
        "--junit",
        str(out),
        "-q",
    )
    assert done.returncode == 0, done.stderr
    found = cases(out.read_text())
    assert set(found) == {
        "cancel-eligible-order",
        "handle-missing-order",
        "do-not-cancel-shipped-order",
    }
    refuse = found["do-not-cancel-shipped-order"].find("failure")
    assert refuse is not None and "forbidden:orders.cancel" in refuse.get("message", "")
