"""Errors in task files, each pinned to file, line and field."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class SpecIssue(Exception):
    """An issue found while reading one document, before the file name is known."""

    loc: tuple[str | int, ...]
    message: str
    line: int | None = None


class SpecError(Exception):
    """One or more problems in task files; `str()` gives one `file:line: field: message` each."""

    def __init__(self, problems: list[tuple[Path, int, str, str]]) -> None:
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
