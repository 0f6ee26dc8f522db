"""YAML and JSON documents whose every error points at file, line and field.

YAML is composed into nodes first (safe loader only) and JSON, when plainly within the
limits, is parsed by `json`; pydantic errors are mapped back from their field path to a
line. The map from field path to line is made on first lookup (`LazyLines`), by
composing the text again: only a problem needs a line, so a valid file never pays for
one. Task files, gates files, scorecards, fault files and side files (prices, mappings,
redaction configs) all load here, within the limits of core/bounded.py: no other module
parses YAML (tests/test_hostile_files.py checks).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import yaml

from proctor.core.bounded import (
    MAX_BYTES,
    MAX_DEPTH,
    BoundedLoader,
    LimitExceeded,
    NotPlain,
    load_json,
    measure,
    reader_line,
    reader_message,
)

if TYPE_CHECKING:
    from pydantic import ValidationError

T = TypeVar("T")
Loc = tuple[str | int, ...]
Problem = tuple[Path, int, str, str]
#: Field path → 1-based line in a document.
Lines = Mapping[Loc, int]


@dataclass
class SpecIssue(Exception):
    """An issue found while reading one document, before the file name is known."""

    loc: Loc
    message: str
    line: int | None = None


class SpecError(Exception):
    """One or more problems in input files; `str()` gives one `file:line: field: message` each."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = sorted(problems, key=lambda p: (str(p[0]), p[1]))
        super().__init__("\n".join(self.lines()))

    @classmethod
    def one(cls, path: Path, line: int, field: str, message: str) -> SpecError:
        return cls([(path, line, field, message)])

    def lines(self) -> list[str]:
        out = []
        for path, line, field, message in self.problems:
            where = f"{path}:{line}"
            out.append(f"{where}: {field}: {message}" if field else f"{where}: {message}")
        return out


def _record_lines(node: yaml.Node, loc: Loc, lines: dict[Loc, int], walked: set[int]) -> None:
    """Record the 1-based line of every path under `node`; reject duplicate keys.

    A node reached again through an alias is not walked again: paths below it point at
    the alias (the deepest recorded prefix), so lines cost no more than the file's text.
    """
    lines[loc] = node.start_mark.line + 1
    if id(node) in walked:
        return
    walked.add(id(node))
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise SpecIssue(loc, "mapping keys must be scalars", key_node.start_mark.line + 1)
            key = key_node.value
            if key in seen and key != "<<":
                raise SpecIssue((*loc, key), "duplicate key", key_node.start_mark.line + 1)
            seen.add(key)
            _record_lines(value_node, (*loc, key), lines, walked)
            lines[(*loc, key)] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _record_lines(item, (*loc, i), lines, walked)


class LazyLines(Mapping[Loc, int]):
    """The lines of a parsed document's fields, found when first looked up: composing
    the text again costs what reading it did, and only a problem needs a line."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._lines: dict[Loc, int] | None = None

    def _found(self) -> dict[Loc, int]:
        if self._lines is None:
            self._lines = _locate(self._text)
        return self._lines

    def __getitem__(self, loc: Loc) -> int:
        return self._found()[loc]

    def __iter__(self) -> Iterator[Loc]:
        return iter(self._found())

    def __len__(self) -> int:
        return len(self._found())


def _locate(text: str) -> dict[Loc, int]:
    """The lines of a document that has been read once; {} (every field on line 1) for
    JSON the YAML composer cannot follow, such as a key over 1,024 characters."""
    loader = BoundedLoader(text)
    lines: dict[Loc, int] = {}
    try:
        node = loader.get_single_node()
        if node is not None:
            _record_lines(node, (), lines, set())
    except (yaml.YAMLError, LimitExceeded, SpecIssue):
        return {}
    finally:
        loader.dispose()
    return lines


def parse_document(path: Path, text: str) -> tuple[Any, Lines]:
    """Parse YAML or JSON text into data plus a map from field path to line, within the
    limits of core/bounded.py."""
    if path.suffix == ".json":
        try:
            return load_json(text), LazyLines(text)
        except (NotPlain, RecursionError, ValueError):  # ValueError: JSONDecodeError too
            _check_json_syntax(path, text)
    loader = BoundedLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise SpecError.one(path, 1, "", "the file is empty")
        if not measure(node):  # before merge keys (`<<`) rewrite the nodes
            _record_lines(node, (), {}, set())  # names the first odd key
        data = loader.construct_document(node)
    except SpecIssue as issue:
        raise SpecError.one(path, issue.line or 1, format_loc(issue.loc), issue.message) from None
    except LimitExceeded as exc:
        raise SpecError.one(path, exc.line, "", exc.message) from None
    except yaml.reader.ReaderError as exc:
        raise SpecError.one(path, reader_line(text, exc), "", reader_message(exc)) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        if exc.context_mark is not None and (mark is None or mark.index >= len(text)):
            mark = exc.context_mark  # e.g. an unterminated quote: point where it opens
        line = min(mark.line + 1, len(text.splitlines()) or 1) if mark else 1  # not past EOF
        problem = str(exc.problem or exc)
        if "maximum nesting depth" in problem:  # libyaml's own limit, met as it reads ahead
            raise SpecError.one(path, line, "", f"nested deeper than {MAX_DEPTH} levels") from None
        raise SpecError.one(path, line, "", f"invalid YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise SpecError.one(path, 1, "", f"invalid YAML: {exc}") from None
    finally:
        loader.dispose()
    return data, LazyLines(text)


def _check_json_syntax(path: Path, text: str) -> None:
    """A JSON syntax error as `file:line: invalid JSON` (the YAML road would name it less
    plainly); otherwise the YAML road reads the file and names any limit it is over."""
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError.one(path, exc.lineno, "", f"invalid JSON: {exc.msg}") from None
    except (RecursionError, ValueError):
        pass  # too deep, or too long a number: the YAML road names the limit and line


def read_document(path: Path) -> tuple[Any, Lines]:
    """Read and parse a YAML or JSON file; every failure is a SpecError naming the file.

    At most MAX_BYTES are read, so a huge file, a device or an endless pipe costs no more.
    """
    try:
        with path.open("rb") as stream:
            raw = stream.read(MAX_BYTES + 1)
    except OSError as exc:
        raise SpecError.one(path, 1, "", f"cannot read file: {exc}") from None
    if len(raw) > MAX_BYTES:
        raise SpecError.one(
            path, 1, "", f"the file is larger than {MAX_BYTES // 2**20} MiB, the limit"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SpecError.one(
            path, line, "", f"cannot read file: not UTF-8 text ({exc.reason})"
        ) from None
    return parse_document(path, text)


def read_list_document(path: Path, key: str) -> tuple[Any, Lines, Loc]:
    """A document holding a list, bare or as the one field `key` of a mapping: (that
    data, the lines, where it sits). Whether it is a list is the caller's to check."""
    data, lines = read_document(path)
    if isinstance(data, dict) and set(data) == {key}:
        return data[key], lines, (key,)
    return data, lines, ()


def read_yaml(path: Path) -> Any:
    """The data of a small YAML/JSON side file (prices, mappings); a ValueError with the
    first `file:line: message` when it cannot be read or parsed."""
    try:
        return read_document(path)[0]
    except SpecError as exc:
        raise ValueError(exc.lines()[0]) from None


def format_loc(loc: Loc) -> str:
    """`("expect", "trajectory", "required", 1, "args")` → `expect.trajectory.required[1].args`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def line_of(lines: Lines, loc: Loc) -> int:
    """The line of the deepest prefix of `loc` that the file has (missing fields → parent)."""
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return 1


def _data_loc(data: Any, loc: tuple[Any, ...], tags: frozenset[str]) -> Loc:
    """Keep only the parts of a pydantic error location that exist in the data.

    Pydantic adds union tags and validator names to locations; a reader wants the path
    of the field in their file.
    """
    out: list[str | int] = []
    node = data
    for part in loc:
        in_dict = isinstance(node, dict) and part in node
        in_list = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        if in_dict or in_list:
            out.append(part)
            node = node[part]
        elif isinstance(node, dict) and isinstance(part, str) and not _is_tag(part, tags):
            out.append(part)  # a missing or unknown field: name it
            node = None
    return tuple(out)


def _is_tag(part: str, tags: frozenset[str]) -> bool:
    """Union tags (`tags`) and validator names that pydantic puts in locations."""
    return part in tags or "[" in part or part[:1].isupper()


def issues_from_validation(
    path: Path,
    exc: ValidationError,
    data: Any,
    lines: Lines,
    prefix: Loc,
    tags: frozenset[str] = frozenset(),
) -> list[Problem]:
    """One (file, line, field, message) per distinct pydantic error; `tags` are the
    discriminator tags of the model's unions, which a reader's field path leaves out."""
    seen: set[tuple[Loc, str]] = set()
    out: list[Problem] = []
    for err in exc.errors(include_url=False):
        loc = (*prefix, *_data_loc(data, err["loc"], tags))
        message = _message(err)
        if (loc, message) in seen:
            continue
        seen.add((loc, message))
        out.append((path, line_of(lines, loc), format_loc(loc), message))
    return out


def validated(check: Callable[[Any], T], path: Path, data: Any, lines: Lines) -> T:
    """`check(data)` (a model's `model_validate`, a TypeAdapter's `validate_python`) on
    what was read from `path`; its problems a SpecError naming file, line and field."""
    from pydantic import ValidationError  # loaded by the model `check` belongs to

    try:
        return check(data)
    except ValidationError as exc:
        raise SpecError(issues_from_validation(path, exc, data, lines, ())) from None


def read_model(
    path: Path, check: Callable[[Any], T], not_mapping: str, *, empty_is_default: bool = False
) -> T:
    """A file holding one mapping (settings, a rubric), read by `check` (`validated`);
    one that holds anything else is `not_mapping`, at line 1. `empty_is_default`: an
    empty file is the model's defaults."""
    data, lines = read_document(path)
    if data is None and empty_is_default:
        data = {}
    if not isinstance(data, dict):
        raise SpecError.one(path, 1, "", not_mapping)
    return validated(check, path, data, lines)


def _message(err: Any) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "missing":
        return "required field is missing"
    msg = str(err["msg"])
    return msg.removeprefix("Value error, ")


def dump_document(data: Any) -> str:
    """`data` as YAML text in the order given (what proctor writes for people to edit:
    promoted task files); reading it back is `read_document`."""
    return str(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100))
