"""A suite's `suite.yaml`: the language its tasks share (issue 25, item 2's suite default),
read through the real gateway, with file:line errors for what is wrong in it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from proctor.cli import main
from proctor.core.documents import SpecError
from proctor.env.suite import load_suite
from trial_run import run_member

DOMAIN = '''
from proctor import Domain

desk = Domain("desk", base_state={"items": {"INC-004217": {"status": "resolved"}}})


@desk.tool("close_item", kind="write", entity="item_id")
def close_item(state, item_id: str) -> dict:
    """Close an item."""
    state["items"][item_id]["status"] = "closed"
    return {"item_id": item_id, "status": "closed"}
'''
TASKS = """
- id: close-it
  domain: desk
  prompt: Cierra INC-004217; ya está resuelto.
- id: close-it-en
  domain: desk
  language: en
  prompt: Close INC-004217; it is resolved.
"""


def suite_folder(tmp_path: Path, settings: str | None) -> Path:
    (tmp_path / "tasks").mkdir(parents=True)
    (tmp_path / "domain.py").write_text(DOMAIN, encoding="utf-8")
    (tmp_path / "tasks" / "close.yaml").write_text(TASKS, encoding="utf-8")
    if settings is not None:
        (tmp_path / "suite.yaml").write_text(settings, encoding="utf-8")
    return tmp_path


def claims_closed_without_closing(input: Any, toolbox: Any) -> str:
    return "He cerrado INC-004217."


@pytest.mark.parametrize(("settings", "status"), [(None, "passed"), ("language: es\n", "failed")])
def test_the_suite_language_reads_a_task_that_names_none(
    tmp_path: Path, settings: str | None, status: str
) -> None:
    """Without the suite's language the Spanish claim is read as English and passes."""
    members = {t.id: t for t in load_suite(suite_folder(tmp_path, settings)).tasks}
    task = members["close-it"]
    assert task.task.language == ("es" if settings else None)
    assert members["close-it-en"].task.language == "en"  # a task's own language wins
    result = run_member(task, claims_closed_without_closing).result
    assert result.status == status
    if settings:
        check = next(c for c in result.checks if c.name == "false_success:closed")
        assert not check.passed and not check.undecided


def test_the_suite_language_is_in_the_task_digest(tmp_path: Path) -> None:
    plain = load_suite(suite_folder(tmp_path / "a", None)).tasks[0].task
    spanish = load_suite(suite_folder(tmp_path / "b", "language: es\n")).tasks[0].task
    assert plain.digest != spanish.digest


@pytest.mark.parametrize(
    ("settings", "line", "field"),
    [
        ("language: Spanish!\n", 1, "language"),
        ("# shared\nlanguage: es\nlocale: es\n", 3, "locale"),
    ],
)
def test_wrong_settings_are_a_file_line_error_and_exit_2(
    tmp_path: Path, settings: str, line: int, field: str
) -> None:
    root = suite_folder(tmp_path, settings)
    with pytest.raises(SpecError) as raised:
        load_suite(root)
    assert f"{root / 'suite.yaml'}:{line}: {field}:" in str(raised.value)
    done = CliRunner().invoke(main, ["validate", str(root)])
    assert done.exit_code == 2 and f"suite.yaml:{line}: {field}" in done.output
    assert "Traceback" not in done.output
