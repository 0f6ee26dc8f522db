"""Hostile input files: every kind of file proctor reads loads in bounded time and memory,
and each defect is one `file:line: message`, exit 2, never a traceback.

The files are generated here, one per defect. Limits are measured (time, peak memory) in
benchmarks/hostile_files.py, not asserted: tests never time anything.
"""

from __future__ import annotations

import ast
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from proctor.agents.pricing import PriceTable
from proctor.cli import main
from proctor.core.bounded import MAX_ALIASES, MAX_BYTES, MAX_DEPTH, MAX_STRING, MAX_VALUES
from proctor.core.documents import SpecError
from proctor.decide.gate import load_rules
from proctor.decide.scorecard import load_scorecard
from proctor.interop.redact import Redactor
from proctor.tasks.loader import load_faults, load_task_file
from proctor.traces.grading import load_mapping
from support_run import run_support_cli

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "fixtures" / "mini"
TASK = "id: t1\ndomain: mini\n"


def laughs(levels: int = 9, indent: str = "") -> str:
    """Billion laughs: nine levels of nine aliases, 9**9 strings once expanded; the
    sixth row (l5: 9**6 strings) is the first over the limit."""
    rows = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    rows += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "".join(f"{indent}{row}\n" for row in rows)


# (name, file text, line, message pattern): each the one defect of its file.
HOSTILE: list[tuple[str, str, int, str]] = [
    (
        "billion-laughs",
        TASK + "prompt: hi\nmetadata:\n" + laughs(indent="  "),
        4 + 6,  # the row of l5
        rf"more than {MAX_VALUES:,} values \(aliases expanded\): split the file",
    ),
    (
        "self-alias",
        TASK + "prompt: hi\nmetadata: &m {again: *m}\n",
        4,
        r"an alias refers to a node that contains it",
    ),
    (
        "self-alias-list",
        TASK + "prompt: hi\nmetadata: {a: &m [1, *m]}\n",
        4,
        r"an alias refers to a node that contains it",
    ),
    (
        "deep-block",
        TASK
        + "prompt: hi\nmetadata:\n"
        + "".join("  " * i + f"k{i}:\n" for i in range(1, 80))
        + "  " * 80
        + "k: 1\n",
        4 + MAX_DEPTH - 1,  # the key k63, at depth 65 (keys are nodes too)
        rf"nested deeper than {MAX_DEPTH} levels",
    ),
    (
        "deep-flow",
        TASK + "prompt: hi\nmetadata: {x: " + "[" * 5000 + "]" * 5000 + "}\n",
        4,
        rf"nested deeper than {MAX_DEPTH} levels",
    ),
    (
        "deep-via-aliases",
        TASK
        + "prompt: hi\nmetadata:\n  a: &a "
        + "[" * 40
        + "1"
        + "]" * 40
        + "\n  b: "
        + "[" * 40
        + "*a"
        + "]" * 40
        + "\n",
        6,
        rf"nested deeper than {MAX_DEPTH}",
    ),
    ("nul-raw", TASK + "prompt: before\x00after\n", 3, r"a NUL character in the file"),
    ("nul-escaped", TASK + 'prompt: "before\\0after"\n', 3, r"a NUL character in a string"),
    (
        "mixed-keys",
        TASK + "prompt: hi\nmetadata: {1: a, b: c}\n",
        4,
        r"mapping keys of mixed types \(int and str\)",
    ),
    (
        "yes-key",
        TASK + "prompt: hi\nmetadata:\n  name: x\n  yes: y\n",
        6,
        r"mapping keys of mixed types \(str and bool\)",
    ),
    (
        "huge-integer",
        TASK + "prompt: hi\nmetadata: {n: " + "9" * 5000 + "}\n",
        4,
        r"an integer of 5,000 digits; the limit is 100",
    ),
    (
        "huge-string",
        TASK + "prompt: " + "x" * (MAX_STRING + 1) + "\n",
        3,
        rf"a string of {MAX_STRING + 1:,} characters",
    ),
    ("binary-tag", TASK + "prompt: !!binary aGk=\n", 3, r"unsupported tag !!binary"),
    ("set-tag", TASK + "prompt: hi\nmetadata: !!set {a, b}\n", 4, r"unsupported tag !!set"),
    (
        "timestamp-tag",
        TASK + "prompt: hi\nmetadata: {at: !!timestamp 2024-01-05}\n",
        4,
        r"unsupported tag !!timestamp",
    ),
    (
        "too-many-aliases",
        TASK
        + "prompt: hi\nmetadata:\n  a: &a 1\n  b: ["
        + ", ".join(["*a"] * (MAX_ALIASES + 1))
        + "]\n",
        6,
        rf"more than {MAX_ALIASES:,} aliases",
    ),
    ("not-utf8", TASK + "prompt: caf\xe9\n", 3, r"not UTF-8"),
]


def write_hostile(folder: Path, name: str, text: str, suffix: str = ".yaml") -> Path:
    path = folder / f"{name}{suffix}"
    data = text.encode("latin-1") if name == "not-utf8" else text.encode("utf-8")
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(("name", "text", "line", "message"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_each_hostile_task_file_is_one_line_exit_2(
    tmp_path: Path, name: str, text: str, line: int, message: str
) -> None:
    shutil.copy(MINI / "domain.py", tmp_path / "domain.py")
    path = write_hostile(tmp_path, name, text)
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    problems = result.stderr.strip().splitlines()
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"{path}:{line}: "), problems[0]
    assert re.search(message, problems[0]), problems[0]
    assert "Traceback" not in result.output
    assert result.stdout.strip() == "task files: 1 found, 0 loaded"


def test_a_deep_json_file_is_one_line(tmp_path: Path) -> None:
    """json.loads raises RecursionError here; the YAML pass turns it into the limit."""
    path = tmp_path / "deep.json"
    path.write_text('{"id": "t1", "domain": "mini", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(SpecError) as info:
        load_task_file(path)
    [line] = info.value.lines()
    assert line == f"{path}:1: nested deeper than {MAX_DEPTH} levels"


def test_a_json_file_with_a_huge_integer_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_text('{\n  "id": "t1",\n  "n": ' + "7" * 5000 + "\n}\n")
    with pytest.raises(SpecError) as info:
        load_task_file(path)
    assert info.value.lines() == [f"{path}:3: an integer of 5,000 digits; the limit is 100"]


def test_a_file_over_the_size_limit_is_not_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text(TASK + "prompt: hi\n# " + "x" * MAX_BYTES + "\n")
    with pytest.raises(SpecError) as info:
        load_task_file(path)
    assert info.value.lines() == [f"{path}:1: the file is larger than 8 MiB, the limit"]


def test_aliases_within_the_limits_still_work(tmp_path: Path) -> None:
    """The limits refuse what is hostile, not what is ordinary: shared state via an
    anchor, merge keys, and integer keys of one type all load."""
    path = tmp_path / "ok.yaml"
    path.write_text(
        TASK
        + "prompt: hi\n"
        + "initial_state:\n  base: &base {colour: red, rooms: {101: a, 102: b}}\n"
        + "  copy: {<<: *base, colour: blue}\n  again: *base\n"
    )
    [loaded] = load_task_file(path)
    state = loaded.task.initial_state
    assert state["copy"] == {"colour": "blue", "rooms": {101: "a", 102: "b"}}
    assert state["again"] == state["base"]
    assert loaded.line_at(("initial_state", "again", "colour")) == 7  # the alias's line


# -- every other kind of file goes through the same reader ------------------------------

LOADERS: dict[str, Callable[[Path], Any]] = {
    "gates": load_rules,
    "scorecard": load_scorecard,
    "faults": load_faults,
    "mapping": load_mapping,
    "prices": PriceTable.load,
    "redaction": Redactor.load,
}


@pytest.mark.parametrize("kind", sorted(LOADERS))
@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (laughs(), 6, rf"more than {MAX_VALUES:,} values"),
        ("a: &a [1, *a]\n", 1, r"an alias refers to a node that contains it"),
        ("a: " + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5) + "\n", 1, r"nested deeper"),
        ("a: 1\nb: x\x00y\n", 2, r"NUL character"),
        ("{1: a, b: c}\n", 1, r"mixed types"),
        ("n: " + "1" * 5000 + "\n", 1, r"5,000 digits"),
    ],
    ids=["laughs", "cycle", "deep", "nul", "mixed-keys", "huge-int"],
)
def test_every_file_kind_has_the_limits(
    tmp_path: Path, kind: str, text: str, line: int, message: str
) -> None:
    path = tmp_path / f"{kind}.yaml"
    path.write_text(text)
    with pytest.raises((SpecError, ValueError)) as info:
        LOADERS[kind](path)
    error = info.value
    first = error.lines()[0] if isinstance(error, SpecError) else str(error)
    assert "\n" not in first
    assert first.startswith(f"{path}:{line}: "), first
    assert re.search(message, first), first


def test_a_hostile_gates_file_stops_run_before_running(tmp_path: Path) -> None:
    gates = tmp_path / "gates.yaml"
    gates.write_text(laughs())
    db = tmp_path / "p.db"
    result = run_support_cli("--gate", str(gates), "--store", str(db), "-q")
    assert result.exit_code == 2, result.output
    assert f"{gates}:6: more than {MAX_VALUES:,} values" in result.stderr
    assert not db.exists() or "runs" not in result.stdout


def test_no_module_but_the_document_reader_parses_yaml() -> None:
    """Bounded loading holds only if every file goes through core/documents.py. The one
    other reader parses AgentDojo's own environment files, shipped inside its package."""
    readers = {"core/bounded.py", "core/documents.py", "bench/agentdojo/suites.py"}
    src = ROOT / "src" / "proctor"
    offenders = []
    for path in src.rglob("*.py"):
        rel = path.relative_to(src).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            if any(n == "yaml" or n.startswith("yaml.") for n in names) and rel not in readers:
                offenders.append(rel)
    assert offenders == []


def test_a_long_flat_document_stops_composing_at_the_value_limit(tmp_path: Path) -> None:
    """Values are counted as they are composed, so a file of a million small values costs
    the time of MAX_VALUES, not of the file."""
    path = tmp_path / "flat.yaml"
    path.write_text(TASK + "prompt: hi\nmetadata: [" + "1, " * (MAX_VALUES * 3) + "1]\n")
    with pytest.raises(SpecError) as info:
        load_task_file(path)
    assert info.value.lines() == [
        f"{path}:4: more than {MAX_VALUES:,} values (aliases expanded): split the file"
    ]
