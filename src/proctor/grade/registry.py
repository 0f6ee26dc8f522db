"""Graders are small functions registered by a decorator, each with a version.

A grader takes the GradeContext and returns checks. The versions go into every run
manifest, so a change in grading is visible when two runs are compared.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from proctor.core.results import Check
from proctor.grade.context import GradeContext

GraderFn = Callable[[GradeContext], list[Check]]


@dataclass(frozen=True, slots=True)
class Grader:
    name: str
    version: str
    fn: GraderFn


_GRADERS: dict[str, Grader] = {}


def grader(name: str, version: str = "1") -> Callable[[GraderFn], GraderFn]:
    """Register `fn` as the grader called `name` (a later registration replaces it)."""

    def register(fn: GraderFn) -> GraderFn:
        _GRADERS[name] = Grader(name, version, fn)
        return fn

    return register


def graders() -> list[Grader]:
    return list(_GRADERS.values())


def grader_versions() -> dict[str, str]:
    return {g.name: g.version for g in _GRADERS.values()}
