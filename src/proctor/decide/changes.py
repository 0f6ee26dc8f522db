"""What changed between two runs: the components of their manifests that differ.

A comparison measures what a change did only when one thing changed. Each component is
read from the run manifest (docs/architecture.md, Verdicts: every run records a
manifest): the agent and its version, the model, the system prompt, the tool schemas, the
domain policy, the suite, the graders and the judges. When more than one differs, the
comparison cannot say which change caused a difference, and `compare` warns.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from proctor.core.jsonvalues import canonical
from proctor.core.manifest import Manifest


def _agent(m: Manifest) -> Any:
    return f"{m.agent.name} {m.agent.version or ''}".strip() or None


def _prompt(m: Manifest) -> Any:
    """The system prompt's hash where the manifest has it: the combined prompt hash also
    covers the task prompts, which the suite digest already follows."""
    return m.system_prompt_hash or m.prompt_hash


def _judges(m: Manifest) -> Any:
    named = {"judge_model": m.judge_model, "judges": m.judges}
    return {k: v for k, v in named.items() if v is not None}


#: Component -> how to read it from a manifest.
COMPONENTS: dict[str, Callable[[Manifest], Any]] = {
    "agent": _agent,
    "model": lambda m: m.model,
    "prompt": _prompt,
    "tool schemas": lambda m: m.tool_schema_hash,
    "policy": lambda m: m.policy_hash,
    "suite": lambda m: m.suite.digest,
    "graders": lambda m: m.grader_versions,
    "judges": _judges,
    "user model": lambda m: m.user_model,
}


def _detail(before: Any, after: Any) -> Any:
    """For mappings (grader versions), only the entries that differ."""
    if isinstance(before, dict) and isinstance(after, dict):
        keys = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        return {k: [before.get(k), after.get(k)] for k in keys}
    return [before, after]


def manifest_changes(base: Manifest, cand: Manifest) -> dict[str, Any]:
    """The components that differ, with baseline and candidate values, and the warning
    when more than one does (JSON-ready; `compare --json` carries it as `changes`)."""
    changed = []
    for name, read in COMPONENTS.items():
        before, after = read(base), read(cand)
        if canonical(before) != canonical(after):
            changed.append({"component": name, "change": _detail(before, after)})
    names = [c["component"] for c in changed]
    warning = None
    if len(changed) > 1:
        warning = (
            f"{len(changed)} components changed ({', '.join(names)}): the comparison cannot "
            "say which change caused a difference"
        )
    return {"changed": changed, "components": list(COMPONENTS), "warning": warning}
