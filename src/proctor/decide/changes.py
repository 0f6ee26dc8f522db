"""What changed between two runs: the components of their manifests that differ.

A comparison measures what a change did only when one thing changed. Each component is
read from the run manifest (docs/architecture.md, Verdicts: every run records a
manifest): the agent and its version, the model, the system prompt, the tool schemas, the
domain policy, the suite, the graders and the judges. When more than one differs, the
comparison cannot say which change caused a difference, and `compare` warns.

Some components are instruments rather than what a change changes: the simulated user
(docs/architecture.md, Simulated users) writes half of every multi-turn conversation, and
baseline and candidate share its seeds so that the paired compare removes its noise. A
comparison between two different simulators cannot pair that noise out, so these
components (MATCHED) must match for a gate's baseline rules, unless a rule allows the
change (`allow_changed:`), and `compare` always warns when they differ.
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


#: Components a gate's baseline rules require to match: the name a gates file gives one
#: (`allow_changed: [user_model]`) -> the component's name here.
MATCHED = {"user_model": "user model"}


def _shown(value: Any) -> str:
    """A component value in one line: a model user's name and fingerprint, else the value."""
    if value is None:
        return "none"
    if isinstance(value, dict) and "model" in value:
        return f"{value['model']}@{str(value.get('fingerprint', ''))[:8]}"
    return str(value)


def unmatched(base: Manifest, cand: Manifest) -> dict[str, str]:
    """The MATCHED components that differ (gates-file name -> what differs, in one line)."""
    out = {}
    for key, name in MATCHED.items():
        before, after = COMPONENTS[name](base), COMPONENTS[name](cand)
        if canonical(before) == canonical(after):
            continue
        if isinstance(before, dict) and isinstance(after, dict):
            detail = _detail(before, after)
            out[key] = "; ".join(f"{k}: {b} -> {a}" for k, (b, a) in detail.items())
        else:
            out[key] = f"{_shown(before)} -> {_shown(after)}"
    return out


def unmatched_warnings(base: Manifest, cand: Manifest) -> list[str]:
    """What `compare` and `gate` warn of when a MATCHED component differs."""
    return [
        f"the {MATCHED[key]} differs ({what}): its noise is not paired out; a gate's baseline "
        f"rules fail unless they say `allow_changed: [{key}]`"
        for key, what in unmatched(base, cand).items()
    ]


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
