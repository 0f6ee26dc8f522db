"""Inspect AI eval logs (`.eval` archives and `.json` logs) → sessions.

Read with proctor's own models of the fields it uses, not with `inspect_ai` (a heavy
package). A `.eval` log is a zip archive: `header.json` (or, for a log whose run did not
finish, `_journal/start.json`) holds the eval's task and model, and each
`samples/<id>_epoch_<n>.json` one sample. Inspect compresses members with zstd (zip
method 93), which Python reads itself from 3.14 on and with `zstandard` before
(`pip install 'proctor[inspect]'`); older logs use deflate. A `.json` log is one object
with the same header fields and `samples`.

Each sample (one per epoch) is a session: its id is `<sample id>#<epoch>`, its task the
sample id (or `metadata.task_id`); user and assistant messages, tool calls with their
results or errors, and the last assistant message without tool calls as the answer. The
sample's token usage per model is one model call each (its cost when Inspect recorded
one, else priced; a figure it left out not measured). A sample that errored is a harness
`error`; one stopped by a time limit a `timeout`. Inspect's own scores are kept in the
session's metadata.
"""

from __future__ import annotations

import io
import struct
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from proctor.agents.pricing import PriceTable
from proctor.traces.imported import (
    HarnessStatus,
    Session,
    SessionBuilder,
    TraceInputError,
    parse_bounded_json,
    parse_json,
    read_bounded,
)

ZSTD = 93
MISSING_ZSTD = (
    "its members are zstd-compressed: pip install 'proctor[inspect]' (or use Python 3.14)"
)
#: Limits after which a sample stopped for lack of time: the agent's timeout.
TIME_LIMITS = frozenset({"time", "working"})


class _Read(BaseModel):
    """Inspect writes more fields than proctor reads; those are left alone."""

    model_config = ConfigDict(extra="ignore")


class ToolCall(_Read):
    id: str
    function: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolCallError(_Read):
    type: str = "unknown"
    message: str = ""


class Message(_Read):
    role: Literal["system", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] = ""
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | list[str] | None = None
    error: ToolCallError | None = None
    model: str | None = None

    @property
    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "".join(str(c.get("text", "")) for c in self.content if c.get("type") == "text")


class ModelUsage(_Read):
    """A count or cost the log leaves out is not measured (None), never 0."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_cost: float | None = None


class Score(_Read):
    value: Any = None
    answer: str | None = None
    explanation: str | None = None


class Problem(_Read):
    message: str = ""
    type: str | None = None


class Sample(_Read):
    id: str | int
    epoch: int = 1
    messages: list[Message] = Field(default_factory=list)
    scores: dict[str, Score] | None = None
    model_usage: dict[str, ModelUsage] = Field(default_factory=dict)
    metadata: dict[str, Any] | None = None
    error: Problem | None = None
    limit: Problem | None = None
    total_time: float | None = None


class EvalSpec(_Read):
    task: str
    model: str
    run_id: str | None = None


class Header(_Read):
    eval: EvalSpec
    status: str | None = None


def is_inspect_log(path: Path) -> bool:
    """A `.eval` archive, or a JSON log with `eval` and `samples`."""
    if zipfile.is_zipfile(path):
        return True
    if path.suffix != ".json":
        return False
    try:
        with path.open("rb") as f:
            head = f.read(4096).decode("utf-8", "ignore")
    except OSError:
        return False
    return head.lstrip().startswith("{") and '"eval"' in head and '"version"' in head


def sessions_from_inspect(path: Path, prices: PriceTable) -> Iterator[Session]:
    """Every sample of the log, in the log's order, one at a time (an archive's members
    are inflated as their turn comes); ValueError naming file and entry."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            header, samples = _archive(path, archive)
            for where, raw in samples:
                yield _sample(path, where, raw, header, prices)
        return
    with path.open("rb") as f:
        data = parse_bounded_json(path, 1, _text(path, read_bounded(f, str(path))))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: an Inspect JSON log is one object")
    header = _model(Header, data, path, "header")
    for i, raw in enumerate(data.get("samples") or []):
        yield _sample(path, f"samples[{i}]", raw, header, prices)


def _sample(path: Path, where: str, raw: Any, header: Header, prices: PriceTable) -> Session:
    try:
        return _session(_model(Sample, raw, path, where), header, prices)
    except TraceInputError as exc:  # a field's JSON text too deep: the entry is named
        raise ValueError(f"{path}: {where}: {exc}") from None


def _model(cls: type[Any], data: Any, path: Path, where: str) -> Any:
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        field = ".".join(str(p) for p in err["loc"])
        raise ValueError(f"{path}: {where}: {field}: {err['msg']}") from None


def _archive(path: Path, archive: zipfile.ZipFile) -> tuple[Header, Iterator[tuple[str, Any]]]:
    """The header, and each sample member's JSON as it is read."""
    members = {info.filename: info for info in archive.infolist()}  # the last one wins
    names = [n for n in members if n.startswith("samples/") and n.endswith(".json")]
    head = "header.json" if "header.json" in members else "_journal/start.json"
    if head not in members:
        raise ValueError(f"{path}: not an Inspect log: no header.json or _journal/start.json")
    header = _model(Header, _member(path, archive, members[head]), path, head)
    return header, ((name, _member(path, archive, members[name])) for name in names)


def _member(path: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> Any:
    """A member's JSON, inflated as it is read and refused past MAX_RECORD_BYTES (the
    sizes its header declares are not trusted)."""
    place = f"{path}: {info.filename}"
    try:
        with archive.open(info) as member:
            raw = read_bounded(member, place)
    except NotImplementedError:
        if info.compress_type != ZSTD:
            raise ValueError(f"{place}: unsupported zip compression") from None
        raw = _zstd(path, info)
    return parse_bounded_json(place, 0, _text(path, raw))


def _text(path: Path, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path}: cannot read: not UTF-8 text") from None


def _zstd(path: Path, info: zipfile.ZipInfo) -> bytes:
    """A zstd member's bytes (possibly several frames), read past its local header."""
    try:
        import zstandard
    except ImportError:
        raise ValueError(f"{path}: {MISSING_ZSTD}") from None
    with path.open("rb") as f:
        f.seek(info.header_offset)
        local = f.read(30)
        name_len, extra_len = struct.unpack("<HH", local[26:30])
        f.seek(info.header_offset + 30 + name_len + extra_len)
        packed = f.read(info.compress_size)
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(packed), read_across_frames=True)
    return read_bounded(reader, f"{path}: {info.filename}")


def _session(sample: Sample, header: Header, prices: PriceTable) -> Session:
    b = SessionBuilder()
    answer = ""
    for message in sample.messages:
        if message.role == "assistant":
            if message.text:
                b.message("assistant", message.text)
            for call in message.tool_calls or []:
                b.tool_call(call.function, call.arguments, call.id)
            if not message.tool_calls:
                answer = message.text
        elif message.role == "tool":
            call_id = message.tool_call_id if isinstance(message.tool_call_id, str) else ""
            if message.error is not None:
                b.tool_error(call_id, message.error.type, message.error.message)
            else:
                b.tool_result(call_id, parse_json(message.text))
        else:
            b.message(message.role, message.text)
    for model, usage in sample.model_usage.items():
        tokens_in, tokens_out = usage.input_tokens, usage.output_tokens
        b.model_call(model, tokens_in, tokens_out, prices, cost_usd=usage.total_cost)
    b.answer(answer)
    status: HarnessStatus | None = None
    error = None
    if sample.error is not None:
        status, error = "error", f"Inspect: {sample.error.message}"
    elif sample.limit is not None and sample.limit.type in TIME_LIMITS:
        status, error = "timeout", f"Inspect: {sample.limit.type} limit"
    scores = {name: s.model_dump(exclude_none=True) for name, s in (sample.scores or {}).items()}
    task_id = (sample.metadata or {}).get("task_id", sample.id)
    return b.build(
        f"{sample.id}#{sample.epoch}",
        task_id=str(task_id),
        model=header.eval.model,
        agent=f"inspect:{header.eval.task}",
        status=status,
        error=error,
        latency_s=sample.total_time,
        metadata={"inspect": {"epoch": sample.epoch, "scores": scores}},
    )
