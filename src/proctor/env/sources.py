"""Suite sources: tasks named by a scheme (`agentdojo:banking`) wherever a path would go.

A peer benchmark's tasks are not files: a source builds them, bound to their domains, from
the text after the scheme. Sources register by scheme, in code (`register_source`) or as
an entry point of the `proctor.suite_sources` group naming a SuiteSource, so `load_suite`
resolves `agentdojo:banking` without this package importing the one that provides it
(docs/architecture.md, Layers). Worker processes resolve the same spec the same way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from pathlib import Path

from proctor.env.domain import Domain
from proctor.tasks.models import Task

ENTRY_POINT_GROUP = "proctor.suite_sources"
#: A scheme has two characters at least, so that a Windows drive (`C:`) stays a path.
_SPEC = re.compile(r"^([a-z][a-z0-9_-]+):(.*)$", re.DOTALL)

#: Builds the tasks of `spec` (the text after the scheme), each with its domain.
SuiteSource = Callable[[str], Sequence[tuple[Task, Domain]]]

_SOURCES: dict[str, SuiteSource] = {}


class SourceError(ValueError):
    """A spec its source cannot serve (unknown suite, a missing extra); one line."""


def register_source(scheme: str, source: SuiteSource) -> None:
    """Serve `scheme:...` task paths with `source` (replacing an earlier one)."""
    if not _SPEC.match(f"{scheme}:"):
        raise ValueError(f"a scheme is lowercase letters, digits, - and _: {scheme!r}")
    _SOURCES[scheme] = source


def source_spec(path: str | Path) -> tuple[str, str] | None:
    """(scheme, rest) when `path` names a source rather than a file or folder."""
    text = str(path)
    found = _SPEC.match(text)
    if found is None or Path(text).exists():
        return None
    return found.group(1), found.group(2)


def _registered(scheme: str) -> SuiteSource | None:
    if scheme not in _SOURCES:
        for point in entry_points(group=ENTRY_POINT_GROUP, name=scheme):
            _SOURCES[scheme] = point.load()
            break
    return _SOURCES.get(scheme)


def known_schemes() -> list[str]:
    return sorted(set(_SOURCES) | {p.name for p in entry_points(group=ENTRY_POINT_GROUP)})


def source_tasks(scheme: str, rest: str) -> list[tuple[Task, Domain]]:
    """The tasks a registered source builds for `scheme:rest`; SourceError if it cannot."""
    source = _registered(scheme)
    if source is None:
        known = ", ".join(f"{s}:" for s in known_schemes()) or "none"
        raise SourceError(f"no suite source {scheme + ':'!r} (known: {known})")
    return list(source(rest))
