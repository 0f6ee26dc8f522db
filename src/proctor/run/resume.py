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

from collections.abc import Callable
from typing import Any

from pydantic_core import to_jsonable_python

from proctor.core.manifest import Manifest, Resumption

RESUMABLE = ("running", "interrupted")
#: What must not change between a run and its resumption: (label, its value in a manifest).
SAME: tuple[tuple[str, Callable[[Manifest], Any]], ...] = (
    ("suite digest", lambda m: m.suite.digest),
    ("agent", lambda m: m.agent.ref),
    ("seed", lambda m: m.seed),
    ("trials", lambda m: m.trials),
    ("faults", lambda m: m.run_faults),
    ("user model", lambda m: m.user_model),
)


class ResumeError(ValueError):
    """This run cannot be resumed as asked; `str()` is one line for the user."""


def resumed_manifest(stored: dict[str, Any], manifest: Manifest) -> Manifest:
    """The stored run's manifest with this resumption noted, if `manifest` is that run's."""
    run_id, status = stored["run_id"], stored["status"]
    if status not in RESUMABLE:
        raise ResumeError(f"run {run_id} is {status}: only a running or interrupted run resumes")
    old = Manifest.from_json(stored["manifest"])
    differ = []
    for label, value in SAME:
        was, now = to_jsonable_python(value(old)), to_jsonable_python(value(manifest))
        if was != now:
            differ.append(f"{label} (run: {was!r}, now: {now!r})")
    if differ:
        raise ResumeError(f"cannot resume run {run_id}: it differs in " + "; ".join(differ))
    made, host, executor = manifest.created_at, manifest.host, manifest.executor
    assert made is not None and host is not None and executor is not None  # build_manifest's
    resumption = Resumption(at=made, host=host.name, executor=executor)
    return old.model_copy(update={"resumes": [*old.resumes, resumption]})
