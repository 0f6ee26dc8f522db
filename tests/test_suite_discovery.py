"""Finding task files and the code they name: nothing dropped silently, nothing run from
outside the suite root.

A task folder reached through a symbolic link is loaded (a loop, a broken link are
problems); `validate` and `run` say how many task files they found and loaded; a task's
domain is looked for from its folder up to the suite root the command line gave, never
above; a dotted domain imports an installed module, never a standard-library one.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from proctor.cli import main
from proctor.env.suite import SuiteLoadError, load_suite
from support_run import SUPPORT, run_support_cli

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "fixtures" / "mini"


def task(task_id: str, domain: str = "mini") -> str:
    return f"id: {task_id}\ndomain: {domain}\nprompt: Read item {task_id}.\n"


def validate(*paths: Path) -> Result:
    return CliRunner().invoke(main, ["validate", *map(str, paths)])


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """suite/domain.py, suite/tasks/a.yaml, and suite/tasks/more -> ../shared (two tasks)."""
    root = tmp_path / "suite"
    (root / "tasks").mkdir(parents=True)
    (root / "shared").mkdir()
    shutil.copy(MINI / "domain.py", root / "domain.py")
    (root / "tasks" / "a.yaml").write_text(task("a"))
    (root / "shared" / "b.yaml").write_text(task("b"))
    (root / "shared" / "c.yaml").write_text(task("c"))
    (root / "tasks" / "more").symlink_to(root / "shared", target_is_directory=True)
    return root


def test_a_task_folder_behind_a_symlink_is_loaded(suite: Path) -> None:
    result = validate(suite)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("ok: 3 tasks valid")
    assert "task files: 3 found, 3 loaded" in result.stdout
    assert sorted(t.id for t in load_suite(suite).tasks) == ["a", "b", "c"]


def test_a_link_to_a_folder_outside_the_root_finds_the_domain_where_the_link_sits(
    suite: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "d.yaml").write_text(task("d"))
    (suite / "tasks" / "outside").symlink_to(elsewhere, target_is_directory=True)
    assert sorted(t.id for t in load_suite(suite).tasks) == ["a", "b", "c", "d"]


def test_a_symlink_loop_is_a_problem_not_a_hang(suite: Path) -> None:
    (suite / "shared" / "back").symlink_to(suite / "tasks", target_is_directory=True)
    (suite / "tasks" / "self").symlink_to(suite / "tasks", target_is_directory=True)
    result = validate(suite)
    assert result.exit_code == 2, result.output
    problems = result.stderr.strip().splitlines()
    assert problems == [
        f"{suite / 'tasks' / 'more' / 'back'}:1: symbolic link loop: "
        f"{os.path.realpath(suite / 'tasks')} is a folder it sits in",
        f"{suite / 'tasks' / 'self'}:1: symbolic link loop: "
        f"{os.path.realpath(suite / 'tasks')} is a folder it sits in",
    ]
    assert result.stdout.strip() == "task files: 3 found, 3 loaded"


def test_a_broken_link_and_a_non_file_are_named(suite: Path) -> None:
    (suite / "tasks" / "gone.yaml").symlink_to(suite / "nowhere.yaml")
    os.mkfifo(suite / "tasks" / "pipe.yaml")
    result = validate(suite)
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().splitlines() == [
        f"{suite / 'tasks' / 'gone.yaml'}:1: broken symbolic link to {suite / 'nowhere.yaml'}",
        f"{suite / 'tasks' / 'pipe.yaml'}:1: not a regular file",
    ]


def test_a_file_that_fails_to_load_is_counted(suite: Path) -> None:
    (suite / "shared" / "c.yaml").write_text("id: c\ndomain: mini\n")  # no prompt
    result = validate(suite)
    assert result.exit_code == 2
    assert result.stdout.strip() == "task files: 3 found, 2 loaded"
    with pytest.raises(SuiteLoadError) as info:
        load_suite(suite)
    assert (info.value.found, info.value.loaded) == (3, 2)


def test_run_says_how_many_task_files_it_found_and_loaded(tmp_path: Path) -> None:
    result = run_support_cli("--task", "cancel-eligible-order", "--store", str(tmp_path / "p.db"))
    assert result.exit_code == 0, result.output
    files = len(list((SUPPORT / "tasks").glob("*.yaml")))
    assert f"task files: {files} found, {files} loaded" in result.stderr


# -- what code a suite may run ---------------------------------------------------------

PLANTED = """
from pathlib import Path
Path(__file__).with_name("IMPORTED").write_text("ran")
"""


def test_a_domain_file_above_the_suite_root_is_never_run(tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    (outer / "suite" / "tasks").mkdir(parents=True)
    (outer / "domain.py").write_text(PLANTED)
    (outer / "suite" / "tasks" / "t.yaml").write_text(task("t"))
    (outer / "suite" / "loose.yaml").write_text(task("loose"))
    for named in (
        outer / "suite",
        outer / "suite" / "tasks" / "t.yaml",
        outer / "suite" / "loose.yaml",
    ):
        result = validate(named)
        assert result.exit_code == 2, result.output
        assert "no domain 'mini': no domain.py defines it in the suite" in result.stderr
    assert not (outer / "IMPORTED").exists()


def test_a_file_in_tasks_finds_the_domain_beside_its_folder() -> None:
    result = validate(SUPPORT / "tasks" / "cancel-eligible-order.yaml")
    assert result.exit_code == 0, result.output


def test_a_domain_name_cannot_walk_out_of_the_folder(suite: Path, tmp_path: Path) -> None:
    (tmp_path / "evil.py").write_text(PLANTED)
    (suite / "tasks" / "a.yaml").write_text(task("a", domain="../../evil"))
    result = validate(suite)
    assert result.exit_code == 2
    assert "no domain '../../evil'" in result.stderr
    assert not (tmp_path / "IMPORTED").exists()


def test_a_dotted_domain_never_imports_the_standard_library(suite: Path) -> None:
    (suite / "tasks" / "a.yaml").write_text(task("a", domain="this:zen"))
    was_imported = "this" in sys.modules
    result = validate(suite)
    assert result.exit_code == 2
    assert "'this' is a standard-library module" in result.stderr
    assert ("this" in sys.modules) == was_imported


def test_a_dotted_domain_imports_an_installed_module(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "site" / "shopworld"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    shutil.copy(MINI / "domain.py", package / "world.py")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    for name in ("shopworld.world:domain", "shopworld.world"):
        (suite / "tasks" / "a.yaml").write_text(task("a", domain=name))
        (suite / "domain.py").unlink(missing_ok=True)
        (suite / "tasks" / "more").unlink(missing_ok=True)
        result = validate(suite)
        assert result.exit_code == 0, result.output
    (suite / "tasks" / "a.yaml").write_text(task("a", domain="notinstalled.world"))
    result = validate(suite)
    assert "no installed module 'notinstalled'" in result.stderr


def test_a_suite_given_as_dot_is_named_after_its_folder(
    suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`proctor run .` inside a suite names the run's suite after the folder, never `.`."""
    monkeypatch.chdir(suite)
    assert load_suite(".").name == "suite"
    monkeypatch.chdir(suite / "tasks")
    assert load_suite("..").name == "suite"
