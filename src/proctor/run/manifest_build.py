"""The run manifest: every version involved, so two runs can be compared honestly; never
a credential (core/credentials.py: a key in the agent's reference or settings is removed).

`build_manifest` makes the typed record (core/manifest.Manifest) a run starts with, its
keys in the order the store has always kept them.
"""

from __future__ import annotations

import inspect
import json
import platform
import socket
import sys
import time
from typing import Any

from proctor.agents.agent import agent_name, agent_version
from proctor.core.credentials import scrub
from proctor.core.jsonvalues import digest
from proctor.core.manifest import MANIFEST_VERSION, Manifest
from proctor.env.suite import Suite
from proctor.grade.registry import grader_versions


def _policy_source(suite: Suite) -> list[str]:
    sources = []
    for domain in suite.domains.values():
        for rule in domain._authorizers:
            try:
                sources.append(inspect.getsource(rule))
            except (OSError, TypeError):
                sources.append(getattr(rule, "__qualname__", repr(rule)))
    return sources


def build_manifest(
    run_id: str,
    suite: Suite,
    agent: Any,
    *,
    agent_ref: str,
    trials: int,
    seed: int,
    timeout_s: float | None,
    concurrency: int,
    executor: str = "local",
    filters: dict[str, Any],
    faults: list[dict[str, Any]],
) -> Manifest:
    """The manifest of a run of `suite` by `agent` with these options."""
    from proctor.core.version import __version__

    settings = getattr(agent, "settings", None)
    system_prompt = getattr(agent, "system_prompt", None)
    # A run that touches holdout tasks is marked, and the digest lets `compare` count how
    # often the same holdout has been looked at (tuning on it spoils it).
    holdout = {t.id: t.task.digest for t in suite.tasks if t.task.split == "holdout"}
    manifest = {
        "run_id": run_id,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "agent": {
            "name": agent_name(agent),
            "version": agent_version(agent),
            "ref": agent_ref,
            "settings": settings if isinstance(settings, dict) else {},
        },
        "model": (settings or {}).get("model") if isinstance(settings, dict) else None,
        "prompt_hash": digest(
            {"system": system_prompt, "tasks": {t.id: t.task.prompt for t in suite.tasks}}
        ),
        "system_prompt_hash": digest(system_prompt),  # the agent's own, apart from the tasks'
        "tool_schema_hash": digest({n: d.digest_source for n, d in suite.domains.items()}),
        "policy_hash": digest(_policy_source(suite)),
        "suite": {
            "name": suite.name,
            "paths": [str(p) for p in suite.roots],  # what `proctor regrade` reloads
            "digest": suite.digest,
            "tasks": len(suite.tasks),
            "task_digests": {t.id: t.task.digest for t in suite.tasks},
            "domains": {n: d.version for n, d in suite.domains.items()},
            "splits": sorted({t.task.split for t in suite.tasks}),
            "holdout_digest": digest(holdout) if holdout else None,
        },
        "holdout": bool(holdout),
        "grader_versions": grader_versions(),
        "judge_model": None,
        "proctor_version": __version__,
        "seed": seed,
        "trials": trials,
        "timeout_s": timeout_s,
        "concurrency": concurrency,
        "executor": executor,
        "filters": filters,
        "run_faults": faults,
        "host": {
            "name": socket.gethostname(),
            "python": sys.version.split()[0],
            "platform": platform.platform(),
        },
        "manifest_version": MANIFEST_VERSION,
    }
    # the agent's settings are its own: held as the store keeps them (JSON, text for
    # anything else), so the record writes back the bytes a dict of them was stored as
    return Manifest.model_validate(json.loads(json.dumps(scrub(manifest), default=str)))
