"""Task files: every malformed file gives one `FILE:LINE: field: message` line, exit 2.

Each bad file below is written out in full, so the expected line number can be read off
the text. Loading goes through the real CLI (`proctor validate`); no traceback may leak.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from proctor.cli import main
from proctor.core.documents import SpecError
from proctor.env.suite import load_suite
from proctor.tasks.loader import load_task_file
from proctor.tasks.models import Task
from proctor.tasks.schema import task_schema

FIXTURES = Path(__file__).parent / "fixtures"
MINI = FIXTURES / "mini"


@pytest.fixture
def suite_dir(tmp_path: Path) -> Path:
    """A folder with the mini domain beside the task files, so domains resolve."""
    shutil.copy(MINI / "domain.py", tmp_path / "domain.py")
    return tmp_path


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def cli_validate(*paths: Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["validate", *map(str, paths)])
    return result.exit_code, result.stdout, result.stderr


def assert_one_problem(
    code: int, out: str, err: str, path: Path, line: int, field: str, message: str
) -> None:
    """Exactly one stderr line naming file, line and field; exit 2; no traceback."""
    assert code == 2, (code, out, err)
    assert "Traceback" not in out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    where = f"{path}:{line}: " + (f"{field}: " if field else "")
    assert lines[0].startswith(where), (lines[0], where)
    assert re.search(message, lines[0][len(where) :], re.IGNORECASE), lines[0]
    assert "ok:" not in out


# -- malformed files, through the real entry point ---------------------------------------


def test_bad_yaml_syntax_through_python_m_entry_point(suite_dir: Path) -> None:
    path = write(
        suite_dir,
        "bad.yaml",
        """
        id: t1
        domain: mini
        prompt: hi: there
        risk: low
        """,
    )
    proc = subprocess.run(
        [sys.executable, "-m", "proctor.cli", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert_one_problem(
        proc.returncode, proc.stdout, proc.stderr, path, 3, "", r"^invalid YAML: mapping values"
    )


def test_unknown_field_through_python_m_entry_point(suite_dir: Path) -> None:
    path = write(
        suite_dir,
        "typo.yaml",
        """
        id: t1
        domain: mini
        prompt: What colour is item a?
        expect:
          answer:
            must_mentions: [red]
        """,
    )
    proc = subprocess.run(
        [sys.executable, "-m", "proctor.cli", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert_one_problem(
        proc.returncode,
        proc.stdout,
        proc.stderr,
        path,
        6,
        "expect.answer.must_mentions",
        "^unknown field$",
    )


CASES = {
    "wrong_type": (
        """
        id: t1
        domain: mini
        prompt: hi
        expect:
          trajectory:
            max_tool_calls: many
        """,
        6,
        "expect.trajectory.max_tool_calls",
        "integer",
    ),
    "union_item_args_as_list": (
        """
        id: t1
        domain: mini
        prompt: hi
        expect:
          trajectory:
            required:
              - {tool: items.get, args: {item_id: a}}
              - tool: items.set
                args: [a, colour, green]
        """,
        9,
        "expect.trajectory.required[1].args",
        "dictionary",
    ),
    "unknown_field_in_union_item": (
        """
        id: t1
        domain: mini
        prompt: hi
        expect:
          outcome:
            - {path: items.a.colour, equals: green}
            - effect: items.set
              wher: {item_id: a}
        """,
        8,
        "expect.outcome[1].wher",
        "^unknown field$",
    ),
    "missing_prompt": (
        """
        # a comment first: the task mapping starts on line 2
        id: t1
        domain: mini
        tags: [read]
        """,
        2,
        "prompt",
        "^required field is missing$",
    ),
    "bad_enum": (
        """
        id: t1
        domain: mini
        prompt: hi
        split: training
        """,
        4,
        "split",
        "dev.*holdout",
    ),
    "path_assertion_without_test": (
        """
        id: t1
        domain: mini
        prompt: hi
        expect:
          outcome:
            - {path: items.a.colour}
        """,
        6,
        "expect.outcome[0]",
        "needs `equals` or `exists`",
    ),
    "error_in_second_task_of_a_list": (
        """
        - id: t1
          domain: mini
          prompt: hi
        - id: t2
          domain: mini
          prompt: hi
          risk: extreme
        """,
        7,
        "[1].risk",
        "low.*medium.*high",
    ),
    "unknown_tool_in_expectations": (
        """
        id: t1
        domain: mini
        prompt: hi
        expect:
          trajectory:
            required:
              - {tool: items.get}
              - {tool: items.delete, args: {item_id: a}}
        """,
        8,
        "expect.trajectory.required[1].tool",
        r"unknown tool 'items\.delete' in domain 'mini'",
    ),
    "unknown_tool_in_any_of": (
        """
        id: t1
        domain: mini
        prompt: hi
        expect:
          trajectory:
            required:
              - any_of:
                  - items.get
                  - items.fetch
        """,
        9,
        "expect.trajectory.required[0].any_of[1]",
        r"unknown tool 'items\.fetch'",
    ),
    "unknown_tool_in_task_tools": (
        """
        id: t1
        domain: mini
        prompt: hi
        tools: [items.get, items.purge]
        """,
        4,
        "tools[1]",
        r"unknown tool 'items\.purge'",
    ),
    "unknown_domain": (
        """
        id: t1
        version: 2
        domain: no_such_world
        prompt: hi
        """,
        3,
        "domain",
        "no domain 'no_such_world'",
    ),
    "duplicate_key": (
        """
        id: t1
        domain: mini
        prompt: first
        risk: low
        prompt: second
        """,
        5,
        "prompt",
        "^duplicate key$",
    ),
    "nested_duplicate_key": (
        """
        id: t1
        domain: mini
        prompt: hi
        initial_state:
          items:
            a: {colour: red}
            a: {colour: blue}
        """,
        7,
        "initial_state.items.a",
        "^duplicate key$",
    ),
    "scalar_document": (
        """
        just a sentence
        """,
        1,
        "",
        "mapping or a list of mappings",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_malformed_yaml_gives_one_located_line(suite_dir: Path, case: str) -> None:
    text, line, field, message = CASES[case]
    path = write(suite_dir, f"{case}.yaml", text)
    assert_one_problem(*cli_validate(path), path, line, field, message)


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n"])
def test_empty_file(suite_dir: Path, text: str) -> None:
    path = suite_dir / "empty.yaml"
    path.write_text(text)
    assert_one_problem(*cli_validate(path), path, 1, "", "empty")


def test_invalid_json_names_its_line(suite_dir: Path) -> None:
    path = write(
        suite_dir,
        "bad.json",
        """
        {
          "id": "t1",
          "domain": "mini",
          "prompt": "hi",,
          "risk": "low"
        }
        """,
    )
    assert_one_problem(*cli_validate(path), path, 4, "", "^invalid JSON")


def test_json_field_error_names_its_line(suite_dir: Path) -> None:
    path = write(
        suite_dir,
        "typo.json",
        """
        {
          "id": "t1",
          "domain": "mini",
          "prompt": "hi",
          "expect": {
            "trajectory": {"max_tool_calls": "many"}
          }
        }
        """,
    )
    assert_one_problem(*cli_validate(path), path, 6, "expect.trajectory.max_tool_calls", "integer")


def test_duplicate_task_ids_across_two_files(suite_dir: Path) -> None:
    write(
        suite_dir,
        "a.yaml",
        """
        id: same
        domain: mini
        prompt: one
        """,
    )
    second = write(
        suite_dir,
        "b.yaml",
        """
        # the second file, loaded after a.yaml
        domain: mini
        id: same
        prompt: two
        """,
    )
    code, out, err = cli_validate(suite_dir)
    assert_one_problem(code, out, err, second, 3, "id", "duplicate task id 'same'")
    assert f"{suite_dir / 'a.yaml'}:1" in err


def test_every_problem_of_every_file_is_reported(suite_dir: Path) -> None:
    """Problems are collected, not stopped at the first: one line each."""
    one = write(suite_dir, "one.yaml", "id: t1\ndomain: mini\nprompt: hi\nrisk: extreme\n")
    two = write(suite_dir, "two.yaml", "id: t2\ndomain: mini\n")
    code, _, err = cli_validate(suite_dir)
    assert code == 2
    lines = sorted(err.strip().splitlines())
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"{one}:4: risk: ")
    assert lines[1] == f"{two}:1: prompt: required field is missing"


def test_python_object_tags_are_rejected(suite_dir: Path) -> None:
    marker = suite_dir / "pwned"
    path = write(
        suite_dir,
        "evil.yaml",
        f"""
        id: t1
        domain: mini
        prompt: !!python/object/apply:os.system ["touch {marker}"]
        """,
    )
    assert_one_problem(*cli_validate(path), path, 3, "", "^invalid YAML: .*python/object")
    assert not marker.exists()

    plain = write(suite_dir, "evil2.yaml", "id: t1\ndomain: mini\nprompt: !!python/object:x.Y {}\n")
    with pytest.raises(SpecError) as info:
        load_task_file(plain)
    assert info.value.lines()[0].startswith(f"{plain}:3: invalid YAML")


def test_unterminated_string_points_at_its_start(suite_dir: Path) -> None:
    path = write(
        suite_dir,
        "quote.yaml",
        """
        id: t1
        domain: mini
        prompt: "never closed
        risk: low
        """,
    )
    assert_one_problem(*cli_validate(path), path, 3, "", "^invalid YAML")


# -- valid files -------------------------------------------------------------------------


def test_fixture_suite_validates_through_the_cli() -> None:
    code, out, err = cli_validate(MINI)
    assert code == 0, err
    assert out.startswith("ok: 4 tasks valid (domains: mini;")


def test_a_file_holding_a_list_of_two_tasks_loads() -> None:
    loaded = load_task_file(MINI / "tasks" / "pair.yaml")
    assert [t.task.id for t in loaded] == ["paint-item", "dated-item"]
    assert [t.prefix for t in loaded] == [(0,), (1,)]
    # Each task keeps its own line, so later checks can still point into the file.
    assert [t.line for t in loaded] == [2, 20]
    assert loaded[1].line_at(("prompt",)) == 23
    assert loaded[1].field_name(("prompt",)) == "[1].prompt"


def test_json_task_files_load() -> None:
    [loaded] = load_task_file(MINI / "tasks" / "count-item.json")
    task = loaded.task
    assert task.id == "count-item"
    assert task.initial_state == {"items": {"c": {"count": 0}}}
    assert task.expect.outcome[0].path == "items.c.count"
    assert loaded.line_at(("prompt",)) == 5


def test_yaml_dates_stay_strings() -> None:
    [_, dated] = load_task_file(MINI / "tasks" / "pair.yaml")
    item = dated.task.initial_state["items"]["d"]
    assert item == {"made": "2024-01-05", "at": "2024-01-05T10:00:00Z"}
    assert type(item["made"]) is str and type(item["at"]) is str


def test_load_suite_resolves_the_domain_and_all_tasks() -> None:
    suite = load_suite(MINI)
    assert sorted(t.id for t in suite.tasks) == [
        "count-item",
        "dated-item",
        "paint-item",
        "read-item",
    ]
    assert {t.domain.name for t in suite.tasks} == {"mini"}
    assert "items.get" in suite.tasks[0].domain.tools


# -- schema --------------------------------------------------------------------------------


def test_schema_command_prints_a_closed_json_schema() -> None:
    result = CliRunner().invoke(main, ["schema"])
    assert result.exit_code == 0, result.output
    schema = json.loads(result.stdout)
    assert schema == task_schema()
    assert schema["$schema"].startswith("https://json-schema.org/")
    defs = schema["$defs"]
    task_def = defs["Task"]
    assert task_def["additionalProperties"] is False
    assert {"id", "domain", "prompt"} <= set(task_def["required"])
    # Nested models are closed as well: a typo in an expectation is a schema error too.
    assert defs["AnswerExpect"]["additionalProperties"] is False
    assert "must_mention" in defs["AnswerExpect"]["properties"]
    assert "must_mentions" not in defs["AnswerExpect"]["properties"]
    # One task or a list of tasks.
    refs = json.dumps(schema.get("anyOf", schema.get("oneOf")))
    assert "#/$defs/Task" in refs and '"array"' in refs


def test_schema_accepts_a_real_task_file() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = task_schema()
    data = json.loads((MINI / "tasks" / "count-item.json").read_text())
    jsonschema.validate(data, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**data, "promt": "typo"}, schema)


def test_schema_structure_matches_real_task_keys() -> None:
    """Without jsonschema installed: every key a real task uses is a declared property."""
    defs = task_schema()["$defs"]
    data = json.loads((MINI / "tasks" / "count-item.json").read_text())
    assert set(data) <= set(defs["Task"]["properties"])
    assert set(defs["Task"]["properties"]) == set(Task.model_fields)


# -- digest ------------------------------------------------------------------------------

BASE = {
    "id": "t1",
    "domain": "mini",
    "prompt": "What colour is item a?",
    "initial_state": {"items": {"a": {"colour": "red", "n": 1}}},
    "expect": {"answer": {"must_mention": ["red"]}},
}


def test_digest_ignores_key_order_and_format(tmp_path: Path) -> None:
    reordered = {
        "expect": {"answer": {"must_mention": ["red"]}},
        "initial_state": {"items": {"a": {"n": 1, "colour": "red"}}},
        "prompt": "What colour is item a?",
        "domain": "mini",
        "id": "t1",
    }
    a = Task.model_validate(BASE)
    b = Task.model_validate(reordered)
    assert a.digest == b.digest
    assert re.fullmatch(r"[0-9a-f]{16}", a.digest)
    # The same content as YAML on disk hashes the same.
    path = write(
        tmp_path,
        "t.yaml",
        """
        id: t1
        domain: mini
        prompt: What colour is item a?
        initial_state: {items: {a: {n: 1, colour: red}}}
        expect:
          answer: {must_mention: [red]}
        """,
    )
    [loaded] = load_task_file(path)
    assert loaded.task.digest == a.digest


@pytest.mark.parametrize(
    "change",
    [
        {"prompt": "What colour is item b?"},
        {"initial_state": {"items": {"a": {"colour": "red", "n": 2}}}},
        {"expect": {"answer": {"must_mention": ["blue"]}}},
        {"version": 2},
        {"tags": ["new"]},
    ],
)
def test_digest_changes_with_content(change: dict) -> None:
    assert Task.model_validate({**BASE, **change}).digest != Task.model_validate(BASE).digest
