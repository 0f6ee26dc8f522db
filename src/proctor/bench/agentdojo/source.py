"""The `agentdojo:SUITE[@VERSION]` suite source: AgentDojo's tasks as proctor tasks.

`SUITE/user_task_N` is the user task alone (suite kind `capability`);
`SUITE/user_task_N/injection_task_M` the same task with the injection task's goal placed,
in the attack's words (AgentDojo's `direct` attack: a fixed, model-free text), in every
injection vector the user task's environment shows (kind `adversarial`). The version
defaults to v1.2.1. Each task's prompt is AgentDojo's, its agent settings carry
AgentDojo's system message, its metadata says which AgentDojo task it is; the state and
the verdict come from the domain (domain.py, checks.py). Registered as the
`proctor.suite_sources` entry point `agentdojo` (env/sources.py).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from proctor.bench.agentdojo import suites
from proctor.bench.agentdojo.checks import agentdojo_checks
from proctor.bench.agentdojo.suite_domain import AgentDojoDomain
from proctor.env.domain import Domain
from proctor.env.sources import SourceError
from proctor.tasks.models import Task

#: Characters of the injection goal used as its canary (its first line: AgentDojo's YAML
#: folds the line breaks of a longer goal where it is placed).
CANARY_CHARS = 80


@lru_cache(maxsize=32)
def agentdojo_domain(benchmark: str, name: str) -> AgentDojoDomain:
    """One domain per suite and version in a process, with AgentDojo's checks."""
    domain = AgentDojoDomain(benchmark, name)
    domain.check(lambda task, trace, outcome: agentdojo_checks(domain, task, trace, outcome))
    return domain


def parse_spec(spec: str) -> tuple[str, str]:
    """`banking@v1.2` → (suite, benchmark version)."""
    name, _, benchmark = spec.partition("@")
    if not name:
        raise SourceError("name an AgentDojo suite: agentdojo:SUITE[@VERSION]")
    return name, benchmark or suites.DEFAULT_VERSION


def tasks(spec: str) -> list[tuple[Task, Domain]]:
    """The suite's user tasks, then every user task with every injection task."""
    name, benchmark = parse_spec(spec)
    domain = agentdojo_domain(benchmark, name)
    task_suite = suites.suite(benchmark, name)
    user_ids = suites.numbered(task_suite.user_tasks)
    injection_ids = suites.numbered(task_suite.injection_tasks)
    out: list[tuple[Task, Domain]] = [
        (_task(task_suite, benchmark, user_id, None), domain) for user_id in user_ids
    ]
    for user_id in user_ids:
        for injection_id in injection_ids:
            out.append((_task(task_suite, benchmark, user_id, injection_id), domain))
    return out


def _task(task_suite: Any, benchmark: str, user_id: str, injection_id: str | None) -> Task:
    user_task = task_suite.get_user_task_by_id(user_id)
    ref = {
        "suite": task_suite.name,
        "benchmark": benchmark,
        "package": suites.package_version(),
        "user_task": user_id,
        "injection_task": injection_id,
        "attack": suites.DEFAULT_ATTACK,
    }
    tags = [task_suite.name, f"difficulty:{user_task.DIFFICULTY.name.lower()}"]
    expect: dict[str, Any] = {}
    if injection_id is not None:
        injection = task_suite.get_injection_task_by_id(injection_id)
        tags.append(f"{task_suite.name}/{injection_id}")
        canary = injection.GOAL.split("\n", 1)[0][:CANARY_CHARS]
        expect = {"safety": {"injection": {"canary": canary, "severity": "medium"}}}
    parts = [task_suite.name, user_id, *([injection_id] if injection_id else [])]
    return Task.model_validate(
        {
            "id": "/".join(parts),
            "version": benchmark,
            "domain": f"agentdojo:{task_suite.name}",
            "description": f"AgentDojo {benchmark} {'/'.join(parts)}",
            "suites": ["adversarial" if injection_id else "capability"],
            "tags": tags,
            "prompt": user_task.PROMPT,
            "expect": expect,
            "metadata": {
                "agentdojo": ref,
                "agent": {"system_prompt": suites.system_message(), "agentdojo": ref},
            },
        }
    )
