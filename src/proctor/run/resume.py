"""Resuming an interrupted run: the same run id, its missing trials, the same seeds.

A run killed part-way keeps every trial it committed. Resuming runs the others, each with
the seed (`trial_seed(seed, task, trial)`) and trace id it would have had; a trial is never
stored twice (the store's key is (run, task, trial)). It is only the same run if what
decides its trials is the same: the suite's content, the agent reference, the seed, the
trial count, the faults injected into every task and the model playing the users.

A run still marked `running` may be one that is being run right now by another process;
the store cannot tell. Resume a run only once its process is gone.
"""

from __future__ import annotations

import json
from typing import Any

from proctor.core.jsonvalues import get_path

RESUMABLE = ("running", "interrupted")
#: What must not change between a run and its resumption: (label, manifest path).
SAME = (
    ("suite digest", "suite.digest"),
    ("agent", "agent.ref"),
    ("seed", "seed"),
    ("trials", "trials"),
    ("faults", "run_faults"),
    ("user model", "user_model"),
)


class ResumeError(ValueError):
    """This run cannot be resumed as asked; `str()` is one line for the user."""


def resumed_manifest(stored: dict[str, Any], manifest: dict[str, Any]) -> dict[str, Any]:
    """The stored run's manifest with this resumption noted, if `manifest` is that run's."""
    run_id, status = stored["run_id"], stored["status"]
    if status not in RESUMABLE:
        raise ResumeError(f"run {run_id} is {status}: only a running or interrupted run resumes")
    old, new = stored["manifest"], json.loads(json.dumps(manifest, default=str))
    differ = [
        f"{label} (run: {get_path(old, path)!r}, now: {get_path(new, path)!r})"
        for label, path in SAME
        if get_path(old, path) != get_path(new, path)
    ]
    if differ:
        raise ResumeError(f"cannot resume run {run_id}: it differs in " + "; ".join(differ))
    resumption = {
        "at": manifest["created_at"],
        "host": manifest["host"]["name"],
        "executor": manifest["executor"],
    }
    return {**old, "resumes": [*old.get("resumes", []), resumption]}
