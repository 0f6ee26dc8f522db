"""A run outside the store: exported as JSON lines, read back for compare and gates.

A CI job keeps its accepted baseline as a file in the repository (`proctor export RUN
--out baselines/x.jsonl`) instead of a database. The first line holds the run (manifest,
summary, status); each further line is one trial result with its checks. Traces stay in
the store: comparisons and gates need only verdicts, checks, usage and metrics.

An export says what it holds and carries digests, checked when it is read: each trial
line its SHA-256 (`digest`), the header the trials of each task (`contents`) and a
digest of itself and of the trials' digests in order. A file whose trials are not its
contents (an added, removed or duplicated trial), whose trial is of a task the manifest
does not list, of another run, or numbered past the manifest's trials (a live run), or
whose digests do not match, is refused with file and line. The digests are not keyed:
they catch an edited file, not one rewritten with proctor's own code, so keep
baselines where changes are reviewed. Files of `proctor-run/1` (no digests) are read
with the same checks on their trials.

A trial a model user played also carries `user_turns` (env/user.py: recorded_turns):
what each side said, so `proctor run --user-replay FILE` can replay the user where the
agent says the same (the traces themselves stay in the store).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from proctor.core.jsonvalues import MISSING, digest, get_path
from proctor.core.manifest import Manifest
from proctor.core.results import Check, TrialResult, Usage
from proctor.core.runs import RunData
from proctor.core.summary import RunSummary
from proctor.store.sqlite import RunNotFound, Store

FORMAT = "proctor-run/2"
#: Exports written before trials carried digests: read, their trials checked all the same.
UNDIGESTED = "proctor-run/1"
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


def _digest(value: Any) -> str:
    return digest(json.loads(json.dumps(value, default=str)), 64)


def _contents(results: list[TrialResult] | list[dict[str, Any]]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for r in results:
        task, trial = (r["task_id"], r["trial"]) if isinstance(r, dict) else (r.task_id, r.trial)
        out.setdefault(str(task), []).append(trial)
    return {task: sorted(trials) for task, trials in sorted(out.items())}


def _head_digest(head: dict[str, Any], trial_digests: list[str]) -> str:
    return _digest(
        {"head": {k: v for k, v in head.items() if k != "digest"}, "trials": trial_digests}
    )


#: A trial's recorded conversation with a model user, by (task id, trial).
UserTurns = Mapping[tuple[str, int], list[dict[str, Any]]]


def export_run(run: RunData, path: str | Path, user_turns: UserTurns | None = None) -> int:
    """Write `run` as JSON lines, with each trial's `user_turns` where a model played its
    user; returns the number of trials written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    turns = user_turns or {}
    rows = [
        {**r.to_dict(), **({"user_turns": t} if (t := turns.get((r.task_id, r.trial))) else {})}
        for r in run.results
    ]
    digests = [_digest(row) for row in rows]
    head = {
        "format": FORMAT,
        "run_id": run.run_id,
        "created_at": run.created_at,
        "status": run.status,
        "manifest": run.manifest.to_json(),
        "summary": run.summary.to_json() if run.summary is not None else None,
        "contents": _contents(run.results),
    }
    head["digest"] = _head_digest(head, digests)
    with path.open("w", encoding="utf-8") as out:
        out.write(json.dumps(head, default=str) + "\n")
        for row, row_digest in zip(rows, digests, strict=True):
            out.write(json.dumps({**row, "digest": row_digest}, default=str) + "\n")
    return len(run.results)


def _checked_trials(path: Path, head: dict[str, Any], rows: list[tuple[int, Any]]) -> None:
    """What the export's trials must be, digests or not (RunInputError with the line)."""
    manifest = head["manifest"]
    listed = manifest["suite"]["task_digests"]
    k = manifest.get("trials")
    live = "import" not in manifest  # an import numbers a task's sessions past its k
    seen: dict[tuple[Any, int], int] = {}
    for number, row in rows:
        if not isinstance(row, dict):
            raise RunInputError(f"{path}:{number}: not a trial result")
        task, trial = row.get("task_id"), row.get("trial")
        where = f"{path}:{number}: trial {task}#{trial}"
        if row.get("run_id") != head["run_id"]:
            raise RunInputError(f"{where} is of run {row.get('run_id')}, not {head['run_id']}")
        if task not in listed:
            raise RunInputError(f"{where}: the manifest lists no task {task}")
        if not isinstance(trial, int) or isinstance(trial, bool) or trial < 0:
            raise RunInputError(f"{where}: a trial is numbered 0, 1, ...")
        if live and isinstance(k, int) and trial >= k:
            raise RunInputError(f"{where}: the manifest ran {k} trials per task")
        if (task, trial) in seen:
            raise RunInputError(f"{where} again (first at line {seen[task, trial]})")
        seen[task, trial] = number


def _checked_digests(path: Path, head: dict[str, Any], rows: list[tuple[int, Any]]) -> None:
    digests = []
    for number, row in rows:
        found = row.pop("digest", None)
        if found != _digest(row):
            why = "has no digest" if found is None else "does not match its digest (edited?)"
            raise RunInputError(f"{path}:{number}: the trial {why}")
        digests.append(found)
    if head.get("contents") != _contents([row for _, row in rows]):
        raise RunInputError(f"{path}:1: the trials are not the contents the header lists")
    if head.get("digest") != _head_digest(head, digests):
        raise RunInputError(f"{path}:1: the header does not match its digest (edited?)")


def _trial(data: dict[str, Any]) -> TrialResult:
    data = {k: v for k, v in data.items() if k != "user_turns"}
    return TrialResult(
        **{
            **data,
            "checks": [Check.from_dict(c) for c in data["checks"]],
            "usage": Usage.stored(data["usage"]),
        }
    )


def _json(text: str) -> Any:
    """JSON text's value; None when it is not JSON, or nests deeper than `json` can read."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None


def read_export(path: str | Path) -> RunData:
    """Read a file written by `export_run`; anything else is a RunInputError."""
    return _read(Path(path))[0]


def read_user_turns(path: str | Path) -> tuple[RunData, dict[tuple[str, int], list[Any]]]:
    """The run of an export, and its trials' recorded conversations with a model user
    (checked like the rest of the file; RunInputError when it holds none)."""
    run, rows = _read(Path(path))
    turns = {
        (str(row["task_id"]), int(row["trial"])): row["user_turns"]
        for _, row in rows
        if isinstance(row.get("user_turns"), list)
    }
    if not turns:
        raise RunInputError(
            f"{path}: no trial has recorded user turns (was it a run with --user-model, "
            "exported by this version?)"
        )
    return run, turns


def _read(path: Path) -> tuple[RunData, list[tuple[int, Any]]]:
    """The export's run and its trial rows, checked."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RunInputError(f"{path}: cannot read: {exc}") from None
    lines = text.splitlines()
    head = _json(lines[0]) if lines else None
    if not isinstance(head, dict) or head.get("format") not in (FORMAT, UNDIGESTED):
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
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        try:
            rows.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise RunInputError(f"{path}:{number}: not a trial result: {exc}") from None
        except RecursionError:
            raise RunInputError(f"{path}:{number}: nested deeper than JSON is read") from None
    _checked_trials(path, head, rows)
    if head["format"] == FORMAT:
        _checked_digests(path, head, rows)
    results = []
    for number, row in rows:
        try:
            results.append(_trial(row))
        except (TypeError, KeyError) as exc:
            raise RunInputError(f"{path}:{number}: not a trial result: {exc}") from None
    try:
        summary = stored_summary(head["summary"])
    except (ValidationError, ValueError) as exc:
        first = str(exc).splitlines()[0]
        raise RunInputError(f"{path}:1: summary: {first}") from None
    try:
        manifest = Manifest.from_json(head["manifest"])
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"])
        raise RunInputError(f"{path}:1: manifest.{field}: {error['msg']}") from None
    except ValueError as exc:
        raise RunInputError(f"{path}:1: manifest: {exc}") from None
    run = RunData(
        head["run_id"],
        manifest,
        summary,
        results,
        head.get("status", "completed"),
        head.get("created_at", 0.0),
    )
    return run, rows


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
