"""The grader registry: built-ins load when grading starts, run only where their
expectations are declared, in a fixed order, and a name is never replaced silently."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from typing import Any

import pytest

from conftest import make_ctx, make_task
from proctor.core.results import Check
from proctor.grade import registry
from proctor.grade.registry import GraderError, applicable, grade, grader, graders

BUILTIN_ORDER = [
    "answer",
    "stopped",
    "budget",
    "outcome",
    "domain",
    "data_quality",
    "robustness",
    "safety",
    "trajectory",
]


def mine(ctx: Any) -> list[Check]:
    return [Check("mine", "custom", True)]


def test_a_name_registered_twice_is_an_error() -> None:
    with pytest.raises(GraderError, match="'answer' is registered already"):
        grader("answer")(mine)
    grader("mine")(mine)
    with pytest.raises(GraderError, match="replace=True"):
        grader("mine")(mine)
    assert [g.name for g in graders()] == [*BUILTIN_ORDER, "mine"]


def test_replacing_on_purpose_keeps_the_graders_place() -> None:
    grader("mine")(mine)
    grader("answer", version="2", replace=True)(mine)
    assert [g.name for g in graders()] == [*BUILTIN_ORDER, "mine"]
    assert registry.grader_versions()["answer"] == "2"


def test_a_task_with_only_answer_expectations_runs_only_what_applies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    no_tenant = {"user": "user-42", "scopes": ["orders:read"]}  # a tenant brings tenancy
    task = make_task({"answer": {"must_mention": ["cancelled"]}}, identity=no_tenant)
    assert [g.name for g in applicable(task)] == [
        "answer",
        "stopped",
        "domain",
        "data_quality",
        "robustness",
    ]
    calls: Counter[str] = Counter()
    for g in graders():

        def spy(ctx: Any, g: Any = g) -> list[Check]:
            calls[g.name] += 1
            return g.fn(ctx)

        monkeypatch.setitem(
            registry._GRADERS, g.name, registry.Grader(g.name, g.version, spy, g.applies)
        )
    ctx = make_ctx(
        {"answer": {"must_mention": ["cancelled"]}}, answer="It is cancelled.", identity=no_tenant
    )
    assert [c.name for c in grade(ctx)] == ["mentions:cancelled"]
    assert calls == {"answer": 1, "stopped": 1, "domain": 1, "data_quality": 1, "robustness": 1}


def test_every_expectation_brings_its_grader() -> None:
    task = make_task(
        {
            "outcome": [{"path": "orders.A-100.status", "equals": "cancelled"}],
            "trajectory": {"required": ["orders.get"]},
            "answer": {"must_mention": ["cancelled"]},
            "safety": {"no_cross_tenant": True},
            "budget": {"max_tokens": 10},
        }
    )
    assert [g.name for g in applicable(task)] == BUILTIN_ORDER
    every_task = ["stopped", "domain", "data_quality", "robustness"]
    assert [g.name for g in applicable(make_task(identity={"user": "u"}))] == every_task
    # an identity that names a tenant is checked for tenancy whatever the task asks
    assert "safety" in [g.name for g in applicable(make_task())]


def _python(code: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return json.loads(done.stdout)


def test_importing_the_package_loads_no_grader() -> None:
    loaded = _python(
        "import json, sys\n"
        "from proctor.grade import GradeContext, grader\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('proctor.grade.'))))"
    )
    assert loaded == ["proctor.grade.context", "proctor.grade.registry"]


def test_the_order_does_not_depend_on_what_was_imported_first() -> None:
    names = _python(
        "import json\n"
        "import proctor.grade.safety, proctor.grade.robustness\n"
        "from proctor.grade.registry import graders\n"
        "print(json.dumps([g.name for g in graders()]))"
    )
    assert names == BUILTIN_ORDER


def test_a_task_is_matched_again_once_its_graders_change(monkeypatch: pytest.MonkeyPatch) -> None:
    """What applies to a task is remembered for its next trials, never past a change of
    the graders: a replaced grader's `applies`, or one registered since, is asked."""
    task = make_task({"answer": {"must_mention": ["cancelled"]}})
    assert "answer" in [g.name for g in applicable(task)]
    assert applicable(task) is applicable(task)  # the same task: matched once
    answer = registry._GRADERS["answer"]
    monkeypatch.setitem(
        registry._GRADERS, "answer", registry.Grader("answer", "1", answer.fn, lambda t: False)
    )
    assert "answer" not in [g.name for g in applicable(task)]
    grader("mine", applies=lambda t: t is task)(mine)
    assert [g.name for g in applicable(task)][-1] == "mine"
    other = task.model_copy()
    assert "mine" not in [g.name for g in applicable(other)]
