"""Impossible and trivial tasks, read across the stored runs of several agents.

A task every agent fails is likely broken or impossible; it needs stored runs of at least
`MIN_AGENTS` different agents to say so (one agent failing is that agent's weakness). A
task every agent passes, the null control included, carries no signal: nothing that does
nothing fails it (docs/architecture.md, Suite health). Agents are told apart by the name
and version their runs' manifests record.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from proctor.core.results import TrialResult
from proctor.core.runs import RunData

#: Agents needed before a task every one of them fails is called impossible.
MIN_AGENTS = 2


def agent_label(run: RunData) -> str:
    agent = run.manifest.agent
    return f"{agent.name}@{agent.version}" if agent.version else agent.name


@dataclass
class Population:
    agents: list[str]
    runs: list[str]
    #: task id -> agent -> [valid trials, passes]
    counts: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    impossible: list[str] = field(default_factory=list)
    trivial: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "agents": self.agents,
            "runs": self.runs,
            "min_agents": MIN_AGENTS,
            "impossible": self.impossible,
            "trivial": self.trivial,
            "per_task": {
                t: {a: {"trials": n, "passed": c} for a, (n, c) in by.items()}
                for t, by in self.counts.items()
            },
        }


def _add(
    counts: dict[str, dict[str, list[int]]], agent: str, results: Iterable[TrialResult]
) -> None:
    for r in results:
        if r.valid and r.task_id in counts:
            cell = counts[r.task_id].setdefault(agent, [0, 0])
            cell[0] += 1
            cell[1] += int(r.passed)


def population(
    task_ids: Sequence[str], stored: Sequence[RunData], null_results: Iterable[TrialResult]
) -> Population:
    """Impossible tasks among `stored` runs; trivial ones among them and the null control."""
    counts: dict[str, dict[str, list[int]]] = {t: {} for t in task_ids}
    for run in stored:
        _add(counts, agent_label(run), run.results)
    agents = sorted({agent_label(r) for r in stored})
    impossible = [
        t
        for t, by in counts.items()
        if len(by) >= MIN_AGENTS and all(n and c == 0 for n, c in by.values())
    ]
    _add(counts, "null-control", null_results)
    trivial = [
        t
        for t, by in counts.items()
        if len(by) > 1 and "null-control" in by and all(n and c == n for n, c in by.values())
    ]
    return Population(agents, [r.run_id for r in stored], counts, impossible, trivial)
