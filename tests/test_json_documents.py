"""JSON documents read by `json` (core/bounded.py load_json) hold to the limits and errors
of the YAML road: the same data, the same refusals, each one `file:line: message`.

The YAML road reads a JSON text when the file is named `.yaml` (JSON is YAML's flow
style), so each case compares the two roads on one text.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proctor.core import documents
from proctor.core.bounded import MAX_DEPTH, MAX_STRING, MAX_VALUES, NotPlain, load_json
from proctor.core.documents import SpecError, parse_document
from proctor.tasks.loader import load_task_file


def both_roads(text: str) -> tuple[Any, Any]:
    """(what the JSON road reads, what the YAML road reads); a refusal as its one line
    without the file name."""
    out = []
    for name in ("doc.json", "doc.yaml"):
        try:
            data, lines = parse_document(Path(name), text)
            out.append((data, dict(lines)))
        except SpecError as exc:
            [line] = exc.lines()
            out.append(line.removeprefix(name))
    return out[0], out[1]


def nested(levels: int, leaf: str = "1") -> str:
    return '{"id": "t1", "x": ' + "[" * levels + leaf + "]" * levels + "}"


# (name, text): JSON the `json` module reads, each near a limit or odd for YAML 1.1.
SAME = [
    ("task", '{\n  "id": "t1",\n  "domain": "mini",\n  "prompt": "hi"\n}\n'),
    ("list", '[{"id": "t1"}, {"id": "t2", "metadata": {"a": [1, 2.5, true, null]}}]'),
    # the deepest allowed: the task mapping, then levels of lists, then the leaf
    ("deepest", nested(MAX_DEPTH - 2)),
    ("too-deep", nested(MAX_DEPTH - 1)),
    ("deepest-empty", nested(MAX_DEPTH - 2, "")),
    ("too-deep-key", '{"x": ' + '{"k": ' * (MAX_DEPTH - 1) + "1" + "}" * MAX_DEPTH),
    ("duplicate", '{\n  "id": "t1",\n  "metadata": {\n    "a": 1,\n    "a": 2\n  }\n}'),
    ("duplicate-merge-key", '{"<<": 1, "<<": 2}'),
    ("nul-escape", '{\n  "id": "t1",\n  "prompt": "a\\u0000b"\n}'),
    ("digits-100", '{"n": ' + "9" * 100 + "}"),
    ("digits-101", '{\n"n": -' + "9" * 100 + "}"),
    ("string-limit", '{"s": "' + "x" * MAX_STRING + '"}'),
    ("string-over", '{"id": "t1",\n"s": "' + "x" * (MAX_STRING + 1) + '"}'),
    ("values-limit", '{"x": [' + ", ".join(["1"] * (MAX_VALUES - 3)) + "]}"),
    ("values-over", '{"id": "t1",\n"x": [' + ", ".join(["1"] * MAX_VALUES) + "]}"),
    ("commas-in-strings", '{"x": "' + "," * MAX_VALUES + '"}'),
    ("signed-exponent", '{"a": 1.5E+3, "b": 2.5e-3, "c": -0.0, "d": -0}'),
    ("not-json-constants", '{"a": NaN, "b": [Infinity, -Infinity]}'),
    ("float-overflow", '{"c": -1e400}'),
    ("escapes", '{"a": "\\/\\b\\f\\n\\r\\t\\"\\\\ \\u00e9 \\u2028", "\\u0062": "\\u0085"}'),
    ("surrogates", '{"a": "\\ud83d\\ude00"}'),
    ("raw-nel", '{"a": "x\x85y"}'),
    ("raw-line-separator", '{"a": "x\u2028y"}'),
    ("raw-paragraph-separator", '{"a": "x\u2029y"}'),
    ("raw-refused", '{"a": "x\x80y"}'),
    ("raw-bom-inside", '{"a": "x\ufeffy"}'),
    ("scalar", '"just a string"'),
    ("empty-containers", '{"a": [], "b": {}, "c": [[]]}'),
]


@pytest.mark.parametrize(("name", "text"), SAME, ids=[s[0] for s in SAME])
def test_the_json_road_reads_what_the_yaml_road_reads(name: str, text: str) -> None:
    fast, slow = both_roads(text)
    assert fast == slow


def test_json_numbers_with_an_exponent_are_numbers() -> None:
    """The one intended difference: YAML 1.1 read `1e3` as a string; JSON means 1000."""
    data, _ = parse_document(Path("n.json"), '{"a": 1e3, "b": 1.5e10, "c": 1E-7}')
    assert data == {"a": 1000.0, "b": 1.5e10, "c": 1e-7}


def test_the_json_road_refuses_without_building_an_oversized_document() -> None:
    """More than MAX_VALUES possible values are handed to the YAML road, which stops
    composing at the limit, before `json` builds anything."""
    text = "[" + "[]," * MAX_VALUES + "[]]"
    with pytest.raises(NotPlain):
        load_json(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{\n  "id": "t1",\n  "id": "t2"\n}\n', "3: id: duplicate key"),
        (
            '{\n  "id": "t1",\n  "metadata": {\n    "a": {"b": 1, "b": 2}\n  }\n}\n',
            "4: metadata.a.b: duplicate key",
        ),
        ('{\n  "id": "t1",\n  "x": ' + "[" * 70 + "]" * 70 + "\n}", "3: nested deeper than 64"),
        (
            '{\n  "id": "t1",\n  "x": [' + "0," * MAX_VALUES + "0]\n}",
            f"3: more than {MAX_VALUES:,} values",
        ),
        ('{\n  "id": "t1",\n  "prompt": "a\\u0000b"\n}', "3: a NUL character in a string"),
        ('{\n  "id": "t1"\n  "domain": "mini"\n}', "3: invalid JSON: Expecting ',' delimiter"),
        ('{\n  "id": "t1",\n}', "3: invalid JSON: Expecting property name enclosed"),
    ],
    ids=["duplicate", "duplicate-nested", "too-deep", "too-many-values", "nul", "comma", "trail"],
)
def test_each_json_problem_is_file_line_message(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "task.json"
    path.write_text(text)
    with pytest.raises(SpecError) as info:
        load_task_file(path)
    [line] = info.value.lines()
    assert line.startswith(f"{path}:{expected}"), line


def test_a_valid_file_finds_its_lines_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loading walks no field lines; a problem found later still gets its line."""
    walked: list[int] = []
    record = documents._record_lines
    monkeypatch.setattr(documents, "_record_lines", lambda *args: walked.append(1) or record(*args))
    for name in ("task.json", "task.yaml"):
        path = tmp_path / name
        path.write_text('{\n  "id": "t1",\n  "domain": "mini",\n  "prompt": "hi"\n}\n')
        [loaded] = load_task_file(path)
        assert walked == []
        assert (loaded.line, loaded.line_at(("prompt",)), loaded.line_at(("nope",))) == (1, 4, 1)
        assert walked  # composed again, once asked
        walked.clear()


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(value=json_values, indent=st.sampled_from([None, 2]), ascii_only=st.booleans())
def test_any_json_reads_the_same_on_both_roads_or_better(
    value: Any, indent: int | None, ascii_only: bool
) -> None:
    """Whatever JSON holds, the JSON road reads the value it was written from, and what
    the YAML road reads too, unless that road refused it (a surrogate, a key over 1,024
    characters) or read a number with an exponent as a string."""
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    fast, slow = both_roads(text)
    try:
        load_json(text)
    except NotPlain:
        assert fast == slow  # the YAML road read it, as before
        return
    assert fast[0] == value
    if not isinstance(slow, str) and not re.search(r"\d[eE]", text):
        assert fast == slow
