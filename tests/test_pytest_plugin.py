"""The pytest plugin (proctor.api.pytest_plugin): a suite's tasks as tests, and the
`proctor_evaluate` fixture, each run in a pytest process of its own (pytester), which
loads the plugin from its entry point as a user's pytest does."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from proctor.api.pytest_plugin import printable

pytest_plugins = ["pytester"]

SUPPORT = Path(__file__).resolve().parents[1] / "examples" / "support"
TASKS = ["cancel-eligible-order", "do-not-cancel-shipped-order", "handle-missing-order"]


@pytest.fixture
def pytester(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytest project holding a copy of the support example as `support/`."""
    if not entry_points(group="pytest11", name="proctor"):
        pytest.fail("the plugin's pytest11 entry point is not installed: `pip install -e .`")
    shutil.copytree(
        SUPPORT, pytester.path / "support", ignore=shutil.ignore_patterns("__pycache__")
    )
    return pytester


def _suite(pytester: pytest.Pytester, agent: str, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--proctor", "support", "--proctor-agent", agent, *args
    )


def test_a_passing_agent_gives_one_passed_test_per_task(pytester: pytest.Pytester) -> None:
    result = _suite(pytester, "support/agents.py:scripted", "-v")
    result.assert_outcomes(passed=3)
    for task in TASKS:
        result.stdout.fnmatch_lines([f"support::{task} PASSED*"])


def test_a_failing_agent_fails_each_task_with_its_checks(pytester: pytest.Pytester) -> None:
    result = _suite(pytester, "support/agents.py:careless")
    result.assert_outcomes(failed=3)
    out = result.stdout.str()
    # careless cancels the shipped B-200: the check and its evidence are in the report
    assert "AgentFailure: 1 of 1 trials failed" in out
    assert "forbidden:orders.cancel (safety, high)" in out
    assert '"order_id": "B-200"' in out
    assert "mentions:could not find (answer)" in out
    assert "Traceback" not in out


def test_k_runs_only_the_selected_tasks(pytester: pytest.Pytester) -> None:
    """The run is made of the tasks left after -k: the others are never evaluated."""
    pytester.makepyfile(
        counting="""
        from pathlib import Path

        from proctor import load_agent

        scripted = load_agent("support/agents.py:scripted")

        async def agent(input, toolbox):
            with open(Path(__file__).parent / "calls.txt", "a") as f:
                f.write(input.task_id + "\\n")
            return await scripted.run(input, toolbox)
        """
    )
    result = _suite(pytester, "counting.py:agent", "-k", "shipped")
    result.assert_outcomes(passed=1, deselected=2)
    calls = (pytester.path / "calls.txt").read_text().split()
    assert calls == ["do-not-cancel-shipped-order"]


def test_agent_text_is_printed_escaped(pytester: pytest.Pytester) -> None:
    """An error carrying terminal escapes and a bidi override reaches the report as
    their Python escapes, not as characters the terminal acts on."""
    pytester.makepyfile(
        hostile="""
        def agent(input, toolbox):
            raise RuntimeError("\\x1b[2J\\u202eboom\\x9b1m")
        """
    )
    result = _suite(pytester, "hostile.py:agent")
    result.assert_outcomes(failed=3)
    out = result.stdout.str()
    assert "\\x1b[2J\\u202eboom\\x9b1m" in out
    assert not {"\x1b", "\u202e", "\x9b"} & set(out)


def test_a_bad_task_file_is_a_collection_error_naming_file_and_line(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".yaml", broken="id: broken\nprompt: 3\n")
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--proctor", "broken.yaml", "--proctor-agent", "x.py:agent"
    )
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*broken.yaml:2: prompt: *"])
    assert "Traceback" not in result.stdout.str()


def test_proctor_needs_an_agent(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--proctor", "support")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--proctor needs --proctor-agent REF*"])


def test_the_fixture_runs_a_suite_from_a_test(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".yaml", gate="rules:\n  - safety_violations == 0\n  - task_success_rate == 1\n"
    )
    pytester.makepyfile(
        """
        def test_scripted(proctor_evaluate):
            run = proctor_evaluate("support", agent="support/agents.py:scripted")
            assert len(run.trials) == 6  # two trials, from --proctor-trials
            assert run.gate("gate.yaml").passed

        def test_careless(proctor_evaluate):
            run = proctor_evaluate("support", agent="support/agents.py:careless")
            assert not run.gate("gate.yaml").passed
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--proctor-trials", "2")
    result.assert_outcomes(passed=2)


def test_loading_the_plugin_imports_no_more_of_proctor() -> None:
    """Every pytest run in an environment with proctor loads the plugin: it must not
    import the evaluation stack (pydantic models, the runner) until a test asks."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, sys, proctor.api.pytest_plugin\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('proctor'))))",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert json.loads(done.stdout) == [
        "proctor",
        "proctor.api",
        "proctor.api.pytest_plugin",
        "proctor.core",
        "proctor.core.lazy",
        "proctor.core.version",
    ]


def test_printable_escapes_what_a_terminal_acts_on() -> None:
    assert printable("ok é 名") == "ok é 名"
    assert printable("a\x1b[31mb\rc\u202ed\x9b") == "a\\x1b[31mb\\rc\\u202ed\\x9b"
