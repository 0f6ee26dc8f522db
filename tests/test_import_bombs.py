"""Decompression and size bombs in trace files: refused in one line, exit 2, having read
no more than the limit. MAX_RECORD_BYTES is made small here, so each bomb is small too:
what is checked is that reading stops at the limit, whatever the file declares."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest

from proctor.core.bounded import MAX_DEPTH
from proctor.traces import imported as session_module
from proctor.traces.imported import TraceInputError
from proctor.traces.trace_files import load_sessions
from test_hostile_traces import grade, session_spans, suite, write_lines  # noqa: F401
from test_inspect_logs import SAMPLES, members

LIMIT = 4096
#: JSON nested far past MAX_DEPTH, as the text of a string field.
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def small_records(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_module, "MAX_RECORD_BYTES", LIMIT)


def chat(arguments: str, result: str) -> dict[str, Any]:
    call = {"id": "c1", "type": "function", "function": {"name": "orders.get"}}
    call["function"]["arguments"] = arguments
    return {
        "id": "s1",
        "messages": [
            {"role": "user", "content": "Cancel A-100"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": result},
            {"role": "assistant", "content": "done"},
        ],
    }


def eval_archive(path: Path, replace: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in {**members(), **replace}.items():
            z.writestr(name, data)
    return path


def deep_inspect_result(tmp_path: Path) -> Path:
    sample = json.loads(json.dumps(SAMPLES[0]))
    sample["messages"][3]["content"] = DEEP  # the tool's result
    name = f"samples/{sample['id']}_epoch_1.json"
    return eval_archive(tmp_path / "deep.eval", {name: json.dumps(sample).encode()})


DEEP_FIELDS = {
    "openai-arguments": lambda p: write_lines(p / "a.jsonl", [chat(DEEP, "ok")]),
    "openai-result": lambda p: write_lines(p / "r.jsonl", [chat("{}", DEEP)]),
    "otel-attribute": lambda p: write_lines(p / "o.jsonl", session_spans("a" * 32, args=DEEP)),
    "inspect-result": deep_inspect_result,
}


@pytest.mark.parametrize("make", DEEP_FIELDS.values(), ids=list(DEEP_FIELDS))
def test_json_nested_deep_inside_a_string_field_is_one_line_exit_2(
    suite: Path,  # noqa: F811
    tmp_path: Path,
    make: Any,
) -> None:
    path = make(tmp_path)
    result = grade(path, suite, tmp_path)
    assert result.exit_code == 2, result.output
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(str(path)), line
    assert f"nests deeper than {MAX_DEPTH} levels" in line
    assert "Traceback" not in result.output


@pytest.mark.usefixtures("small_records")
def test_a_line_past_the_limit_is_refused_before_it_is_read_whole(tmp_path: Path) -> None:
    fine = chat("{}", "ok")
    huge = {**chat("{}", "x" * (LIMIT * 50)), "id": "s3"}
    path = write_lines(tmp_path / "huge.jsonl", [fine, {**fine, "id": "s2"}, huge])
    with pytest.raises(TraceInputError, match=rf"{re.escape(str(path))}:3: more than 4,096 bytes"):
        load_sessions(path)
    assert len(load_sessions(write_lines(tmp_path / "ok.jsonl", [fine]))) == 1


@pytest.mark.usefixtures("small_records")
def test_a_one_document_file_past_the_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    path.write_text(json.dumps([chat("{}", "x" * LIMIT)], indent=2))
    with pytest.raises(TraceInputError, match=r"more than 4,096 bytes in one record"):
        load_sessions(path)


class Counting:
    """A stream that counts what was read from it."""

    def __init__(self, raw: Any) -> None:
        self.raw, self.read_bytes = raw, 0

    def read(self, n: int = -1) -> bytes:
        chunk: bytes = self.raw.read(n)
        self.read_bytes += len(chunk)
        return chunk

    def __enter__(self) -> Counting:
        return self

    def __exit__(self, *exc: object) -> None:
        self.raw.close()


@pytest.mark.usefixtures("small_records")
def test_an_archive_member_inflating_past_the_limit_is_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,000 times its packed size (as a 1.5 MB member inflating to 1.5 GB), refused once
    the limit is passed: no more than the limit and one chunk is inflated."""
    bomb = json.dumps({**SAMPLES[0], "pad": " " * (LIMIT * 1000)}).encode()
    name = f"samples/{SAMPLES[0]['id']}_epoch_1.json"
    path = eval_archive(tmp_path / "bomb.eval", {name: bomb})
    with zipfile.ZipFile(path) as z:
        assert z.getinfo(name).compress_size * 100 < len(bomb)
    opened: list[Counting] = []
    real_open = zipfile.ZipFile.open

    def counting_open(self: zipfile.ZipFile, *args: Any, **kw: Any) -> Counting:
        opened.append(Counting(real_open(self, *args, **kw)))
        return opened[-1]

    monkeypatch.setattr(zipfile.ZipFile, "open", counting_open)
    with pytest.raises(TraceInputError, match=rf"{re.escape(name)}: more than 4,096 bytes"):
        load_sessions(path, "inspect")
    assert max(c.read_bytes for c in opened) <= LIMIT + 1


@pytest.mark.parametrize("reader", ["labels", "items"])
def test_judge_files_nested_past_what_json_reads_name_file_and_line(
    tmp_path: Path, reader: str
) -> None:
    from proctor.core.documents import SpecError
    from proctor.judge.calibration_items import read_items
    from proctor.labels.label_file import read_labels

    path = tmp_path / f"{reader}.jsonl"
    path.write_text("{}\n" + DEEP + "\n")
    read = read_labels if reader == "labels" else read_items
    with pytest.raises(SpecError) as info:
        read(path)
    assert info.value.lines() == [f"{path}:2: nested deeper than JSON is read"]


def test_a_model_s_arguments_nested_too_deep_are_a_problem_not_a_crash() -> None:
    from proctor.agents.bridge import parse_arguments

    assert parse_arguments(DEEP) == (DEEP, "arguments nest deeper than JSON is read")
    assert parse_arguments('{"a": [1]}') == ({"a": [1]}, None)
