"""A run outside the store: exported as JSON lines, read back for compare and gates.

A CI job keeps its accepted baseline as a file in the repository (`proctor export RUN
--out baselines/x.jsonl`) instead of a database. The first line holds the run (manifest,
summary, status); each further line is one trial result with its checks. Traces stay in
the store: comparisons and gates need only verdicts, checks, usage and metrics.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from proctor.core.jsonvalues import MISSING, get_path
from proctor.core.results import Check, TrialResult, Usage
from proctor.core.runs import RunData
from proctor.core.summary import RunSummary
from proctor.store.sqlite import RunNotFound, Store

FORMAT = "proctor-run/1"
#: What compare and gates read from a run header, as dotted paths.
_HEADER = (
    "run_id",
    "summary",
    "manifest.trials",
    "manifest.agent.name",
    "manifest.suite.digest",
    "manifest.suite.task_digests",
)


class RunInputError(ValueError):
    """A run reference or file that cannot be used; `str()` is one line for the user."""


def export_run(run: RunData, path: str | Path) -> int:
    """Write `run` as JSON lines; returns the number of trials written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    head = {
        "format": FORMAT,
        "run_id": run.run_id,
        "created_at": run.created_at,
        "status": run.status,
        "manifest": run.manifest,
        "summary": run.summary.to_json() if run.summary is not None else None,
    }
    with path.open("w", encoding="utf-8") as out:
        out.write(json.dumps(head, default=str) + "\n")
        for r in run.results:
            out.write(json.dumps(r.to_dict(), default=str) + "\n")
    return len(run.results)


def _trial(data: dict[str, Any]) -> TrialResult:
    return TrialResult(
        **{
            **data,
            "checks": [Check.from_dict(c) for c in data["checks"]],
            "usage": Usage(**data["usage"]),
        }
    )


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def read_export(path: str | Path) -> RunData:
    """Read a file written by `export_run`; anything else is a RunInputError."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RunInputError(f"{path}: cannot read: {exc}") from None
    lines = text.splitlines()
    head = _json(lines[0]) if lines else None
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        whole = _json(text)
        if isinstance(whole, dict) and "per_task" in whole:
            raise RunInputError(
                f"{path}: a run summary (proctor run --json) has no per-trial results; "
                "write the run with `proctor export RUN --out FILE` and use that file"
            )
        raise RunInputError(f"{path}: not a proctor run export ({FORMAT} JSON lines)")
    missing = [key for key in _HEADER if get_path(head, key) is MISSING]
    if missing:
        raise RunInputError(f"{path}:1: the run header lacks {', '.join(missing)}")
    results = []
    for number, line in enumerate(lines[1:], start=2):
        try:
            results.append(_trial(json.loads(line)))
        except (json.JSONDecodeError, TypeError, KeyError) as exc:
            raise RunInputError(f"{path}:{number}: not a trial result: {exc}") from None
    try:
        summary = stored_summary(head["summary"])
    except (ValidationError, ValueError) as exc:
        first = str(exc).splitlines()[0]
        raise RunInputError(f"{path}:1: summary: {first}") from None
    return RunData(
        head["run_id"],
        head["manifest"],
        summary,
        results,
        head.get("status", "completed"),
        head.get("created_at", 0.0),
    )


def store_run(store: Store, ref: str) -> RunData:
    """A run from the store by id, unique prefix or `latest`."""
    try:
        row = store.run(ref)
    except RunNotFound as exc:
        raise RunInputError(str(exc)) from None
    return RunData(
        row["run_id"],
        row["manifest"],
        stored_summary(row["summary"]),
        list(store.trial_results(row["run_id"])),
        row["status"],
        row["created_at"],
    )


def stored_summary(data: dict[str, Any] | None) -> RunSummary | None:
    """A stored summary (any version) as a RunSummary; None for a run that has none."""
    return None if data is None else RunSummary.from_json(data)


def load_run(ref: str, store: Store | None) -> RunData:
    """`ref` is an exported file if one exists at that path, else a run in the store."""
    if Path(ref).is_file():
        return read_export(ref)
    if ref.endswith((".jsonl", ".json")):
        raise RunInputError(f"{ref}: no such file")
    if store is None:
        raise RunInputError(f"{ref}: not a file, and there is no store to look the run up in")
    return store_run(store, ref)
