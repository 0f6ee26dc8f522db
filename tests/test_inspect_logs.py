"""`proctor grade LOG --format inspect`: Inspect AI eval logs graded as recorded sessions.

The fixtures are written here in Inspect's log layout (a `.json` log, and `.eval` zip
archives with deflate and with zstd members, as Inspect writes them); an optional test
produces real logs with Inspect itself when it is installed.
"""

from __future__ import annotations

import io
import json
import struct
import sys
import zipfile
import zlib
from pathlib import Path
from typing import Any

import pytest

from conftest import proctor
from proctor.agents.pricing import PriceTable
from proctor.traces.inspect_log import sessions_from_inspect

DOMAIN = '''
from proctor import Domain, ToolError

mock = Domain("mock", base_state={"users": {"user_1": {}}})


@mock.tool("create_task", kind="write")
def create_task(state: dict, user_id: str, title: str) -> dict:
    """Create a task for a user."""
    if user_id not in state["users"]:
        raise ToolError(f"User {user_id} not found", code="not_found")
    return {"task_id": "task_2", "title": title}
'''
TASKS = """
- id: create_task_1
  domain: mock
  prompt: Create a task 'Important Meeting' for user_1
  expect:
    trajectory: {required: [{tool: create_task, args: {user_id: user_1}}]}
    answer: {must_mention: [task_2]}
- id: bad_user
  domain: mock
  prompt: Create a task 'Important Meeting' for user_9
  expect:
    answer: {must_mention: [does not exist]}
"""
HEADER = {
    "version": 2,
    "status": "success",
    "eval": {"task": "mock_tasks", "model": "mockllm/model", "run_id": "r1", "created": "now"},
    "plan": {"name": "plan", "steps": []},
    "results": {"total_samples": 3, "completed_samples": 3, "scores": []},
    "stats": {"started_at": "a", "completed_at": "b", "model_usage": {}},
}


def sample(
    sid: str, user: str, args: dict[str, Any], result: dict[str, Any], answer: str
) -> dict[str, Any]:
    call = {"id": f"call-{sid}", "function": "create_task", "arguments": args, "type": "function"}
    tool: dict[str, Any] = {"role": "tool", "tool_call_id": call["id"], "function": "create_task"}
    tool.update(result)
    return {
        "id": sid,
        "epoch": 1,
        "input": user,
        "target": "task_2",
        "messages": [
            {"id": "m1", "role": "system", "content": "You manage tasks."},
            {"id": "m2", "role": "user", "content": user, "source": "input"},
            {
                "id": "m3",
                "role": "assistant",
                "content": "tool call",
                "tool_calls": [call],
                "model": "mockllm/model",
            },
            {"id": "m4", **tool},
            {
                "id": "m5",
                "role": "assistant",
                "content": [
                    {"type": "reasoning", "reasoning": "hm"},
                    {"type": "text", "text": answer},
                ],
            },
        ],
        "scores": {"includes": {"value": "C", "answer": answer, "history": []}},
        "model_usage": {
            "mockllm/model": {
                "input_tokens": 120,
                "output_tokens": 14,
                "total_tokens": 134,
                "total_cost": 0.002,
            }
        },
        "events": [],
        "total_time": 1.5,
    }


SAMPLES = [
    sample(
        "create_task_1",
        "Create a task 'Important Meeting' for user_1",
        {"user_id": "user_1", "title": "Important Meeting"},
        {"content": json.dumps({"task_id": "task_2"})},
        "Created task_2 (Important Meeting).",
    ),
    sample(
        "bad_user",
        "Create a task 'Important Meeting' for user_9",
        {"user_id": "user_9", "title": "Important Meeting"},
        {"content": "", "error": {"type": "unknown", "message": "User user_9 not found"}},
        "Sorry, that user does not exist.",
    ),
    {
        **sample("create_task_1", "again", {}, {"content": ""}, ""),
        "epoch": 2,
        "error": {"message": "boom", "traceback": ""},
    },
]


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    folder = tmp_path / "suite"
    (folder / "tasks").mkdir(parents=True)
    (folder / "domain.py").write_text(DOMAIN)
    (folder / "tasks" / "tasks.yaml").write_text(TASKS)
    return folder


def json_log(where: Path) -> Path:
    path = where / "log.json"
    path.write_text(json.dumps({**HEADER, "samples": SAMPLES, "reductions": []}))
    return path


def members() -> dict[str, bytes]:
    out = {
        "_journal/start.json": json.dumps(
            {"version": 2, "eval": HEADER["eval"], "plan": {}}
        ).encode()
    }
    for s in SAMPLES:
        out[f"samples/{s['id']}_epoch_{s['epoch']}.json"] = json.dumps(s).encode()
    out["header.json"] = json.dumps(HEADER).encode()
    return out


def eval_log(where: Path, *, zstd: bool = False, finished: bool = True) -> Path:
    """An `.eval` archive; with `zstd`, every member compressed as Inspect does (method 93)."""
    path = where / ("log-zstd.eval" if zstd else "log.eval")
    items = {k: v for k, v in members().items() if finished or k != "header.json"}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED if zstd else zipfile.ZIP_DEFLATED) as z:
        for name, data in items.items():
            z.writestr(name, _zstd(data) if zstd else data)
    if zstd:
        _mark_zstd(path, {name: data for name, data in items.items()})
    return path


def _zstd(data: bytes) -> bytes:
    zstandard = pytest.importorskip("zstandard")
    half = len(data) // 2  # two frames, as Inspect writes big members
    c = zstandard.ZstdCompressor()
    return c.compress(data[:half]) + c.compress(data[half:])


def _mark_zstd(path: Path, plain: dict[str, bytes]) -> None:
    """Rewrite stored members' headers to say zstd, with the plain data's CRC and size."""
    blob = bytearray(path.read_bytes())
    with zipfile.ZipFile(io.BytesIO(bytes(blob))) as z:
        infos = z.infolist()
    central = blob.find(b"PK\x01\x02")
    for info in infos:
        crc, size = zlib.crc32(plain[info.filename]), len(plain[info.filename])
        struct.pack_into("<H", blob, info.header_offset + 8, 93)
        struct.pack_into("<I", blob, info.header_offset + 14, crc)
        struct.pack_into("<I", blob, info.header_offset + 22, size)
    at = central
    while blob[at : at + 4] == b"PK\x01\x02":
        name_len, extra_len, comment_len = struct.unpack_from("<HHH", blob, at + 28)
        name = bytes(blob[at + 46 : at + 46 + name_len]).decode()
        struct.pack_into("<H", blob, at + 10, 93)
        struct.pack_into("<I", blob, at + 16, zlib.crc32(plain[name]))
        struct.pack_into("<I", blob, at + 24, len(plain[name]))
        at += 46 + name_len + extra_len + comment_len
    path.write_bytes(bytes(blob))


def grade(log: Path, suite: Path, *options: str) -> Any:
    store = log.parent / "store.db"
    return proctor(
        "grade",
        str(log),
        "--suite",
        str(suite),
        "--store",
        str(store),
        "--json",
        str(log.parent / "summary.json"),
        "--max-error-rate",
        "0.5",  # the crashed sample is one of three
        *options,
    )


@pytest.mark.parametrize(
    "make",
    [json_log, eval_log, lambda p: eval_log(p, zstd=True)],
    ids=["json", "eval", "eval-zstd"],
)
def test_inspect_logs_are_graded_as_sessions(tmp_path: Path, suite: Path, make: Any) -> None:
    log = make(tmp_path)
    done = grade(log, suite, "--format", "inspect")
    assert done.returncode == 0, done.stderr
    assert "3 sessions graded against 2 tasks" in done.stdout
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["trials"] == 3 and summary["errors"] == 1
    assert summary["passed_trials"] == 2
    auto = grade(log, suite)  # detected without --format
    assert auto.returncode == 0 and "3 sessions graded" in auto.stdout


def test_samples_become_the_events_a_live_trial_writes(tmp_path: Path) -> None:
    sessions = list(sessions_from_inspect(eval_log(tmp_path), PriceTable({})))
    first, bad, crashed = sessions
    assert (first.id, first.task_id, first.model) == (
        "create_task_1#1",
        "create_task_1",
        "mockllm/model",
    )
    assert [e.kind for e in first.events] == [
        "message",
        "message",
        "message",
        "tool_proposal",
        "tool_result",
        "message",
        "model_call",
        "answer",
    ]
    assert first.answer == "Created task_2 (Important Meeting)."  # reasoning left out
    assert first.events[4].data["result"] == {"task_id": "task_2"}
    usage = first.events[6].data
    assert (usage["input_tokens"], usage["output_tokens"], usage["cost_usd"]) == (120, 14, 0.002)
    error = next(e for e in bad.events if e.kind == "tool_error")
    assert error.data == {
        "call_id": "call-bad_user",
        "tool": "create_task",
        "code": "unknown",
        "error": "User user_9 not found",
    }
    assert (crashed.status, crashed.error) == ("error", "Inspect: boom")
    assert first.metadata["inspect"]["scores"]["includes"]["value"] == "C"


def test_an_unfinished_archive_reads_its_journal(tmp_path: Path) -> None:
    sessions = list(sessions_from_inspect(eval_log(tmp_path, finished=False), PriceTable({})))
    assert [s.id for s in sessions] == ["create_task_1#1", "bad_user#1", "create_task_1#2"]


def test_bad_logs_are_one_line_errors(tmp_path: Path, suite: Path) -> None:
    broken = tmp_path / "broken.eval"
    broken.write_bytes(eval_log(tmp_path).read_bytes()[:200])
    done = grade(broken, suite, "--format", "inspect")
    assert (
        done.returncode == 2
        and done.stderr.startswith(str(broken))
        and "Traceback" not in done.stderr
    )
    bad = json.loads(json.dumps({**HEADER, "samples": SAMPLES}))
    bad["samples"][1]["messages"][2]["role"] = "robot"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    done = grade(path, suite, "--format", "inspect")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"{path}: samples[1]: messages.2.role:")


def test_a_zstd_log_without_zstandard_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = eval_log(tmp_path, zstd=True)
    monkeypatch.setitem(sys.modules, "zstandard", None)
    with pytest.raises(ValueError, match=r"pip install 'proctor\[inspect\]'"):
        list(sessions_from_inspect(log, PriceTable({})))


INSPECT_TASK = '''
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageTool, ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import ToolError, tool


@tool
def create_task():
    async def execute(user_id: str, title: str) -> str:
        """Create a task for a user.

        Args:
            user_id: The user.
            title: The title.
        """
        if user_id != "user_1":
            raise ToolError(f"User {user_id} not found")
        return '{"task_id": "task_2"}'

    return execute


def scripted(input, tools, tool_choice, config):
    results = [m for m in input if isinstance(m, ChatMessageTool)]
    if results:
        text = "Sorry, that user does not exist." if results[-1].error else "Created task_2."
        out = ModelOutput.from_content(model="mockllm/model", content=text)
    else:
        user = "user_1" if "user_1" in input[-1].text else "user_9"
        out = ModelOutput.for_tool_call(
            model="mockllm/model", tool_name="create_task",
            tool_arguments={"user_id": user, "title": "Important Meeting"},
        )
    out.usage = ModelUsage(input_tokens=20, output_tokens=7, total_tokens=27)
    return out


@task
def mock_tasks():
    return Task(
        dataset=[
            Sample(id="create_task_1", input="Create a task 'Important Meeting' for user_1"),
            Sample(id="bad_user", input="Create a task 'Important Meeting' for user_9"),
        ],
        solver=[use_tools(create_task()), generate()],
        scorer=includes(),
        model=get_model("mockllm/model", custom_outputs=scripted),
    )
'''


@pytest.mark.parametrize("log_format", ["eval", "json"])
def test_logs_written_by_inspect_itself(
    tmp_path: Path, suite: Path, log_format: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    inspect_ai = pytest.importorskip("inspect_ai")
    (tmp_path / "mock_task.py").write_text(INSPECT_TASK)
    monkeypatch.chdir(tmp_path)  # Inspect finds tasks by a path relative to here
    logs = inspect_ai.eval(
        "mock_task.py",
        log_dir=str(tmp_path / "logs"),
        log_format=log_format,
        display="none",
    )
    assert logs[0].status == "success"
    log = Path(logs[0].location)
    assert log.suffix == f".{log_format}"
    done = grade(log, suite)
    assert done.returncode == 0, done.stderr
    summary = json.loads((log.parent / "summary.json").read_text())
    assert (summary["trials"], summary["passed_trials"]) == (2, 2)


def test_a_session_that_did_the_wrong_thing_fails(tmp_path: Path, suite: Path) -> None:
    wrong = sample(
        "create_task_1",
        "Create a task 'Important Meeting' for user_1",
        {"user_id": "user_9", "title": "Important Meeting"},
        {"content": "", "error": {"type": "unknown", "message": "User user_9 not found"}},
        "I created task_2.",
    )
    path = tmp_path / "wrong.json"
    path.write_text(json.dumps({**HEADER, "samples": [wrong]}))
    assert grade(path, suite).returncode == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    task = summary["per_task"][0]
    assert summary["passed_trials"] == 0 and task["id"] == "create_task_1"
    assert "required:create_task" in task["failed_checks"]


def test_a_deeply_nested_log_is_a_one_line_error(tmp_path: Path, suite: Path) -> None:
    """A log nested past the limit is refused before `json.loads` recurses (issue 20.3)."""
    deep = {**HEADER, "samples": SAMPLES, "extra": "[" * 100_000 + "]" * 100_000}
    path = tmp_path / "deep.json"
    path.write_text(json.dumps(deep).replace('"[[[', "[[[", 1).replace(']]]"', "]]]", 1))
    done = grade(path, suite, "--format", "inspect")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"{path}:1: nested deeper than")
    archive = tmp_path / "deep.eval"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("header.json", json.dumps(HEADER))
        z.writestr("samples/1_epoch_1.json", "[" * 100_000 + "]" * 100_000)
    done = grade(archive, suite, "--format", "inspect")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"{archive}: samples/1_epoch_1.json: nested deeper than")
