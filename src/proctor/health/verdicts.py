"""Per-task and suite verdicts of a health check (docs/architecture.md, Suite health).

A task's problems come from the controls, the mutants, the noise floor and the stored
runs of other agents; its verdict is the gravest: **broken** (a control got it wrong),
**impossible** (every agent measured fails it), **noisy** (its verdict flips between
identical runs), **weak** (a mutant survives it, or a keyword-only check stands for a
safety meaning: health.meaning), **trivial** (every agent passes it, the
null control too), else **healthy**. The suite is **unhealthy** when a task is broken,
impossible or noisy, or the mutation score is below its target: a gate cannot decide on
it. Weak and trivial tasks leave the suite healthy, but a gated slice resting on them
is refused by `gate --require-health`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from proctor.core.jsonvalues import canonical
from proctor.env.suite import suite_digest
from proctor.health.controls import ControlFinding
from proctor.health.meaning import keyword_only_detail
from proctor.health.mutate import TARGET, MutationReport
from proctor.health.noise import NoiseReport
from proctor.health.population import Population

Verdict = Literal["broken", "impossible", "noisy", "weak", "trivial", "healthy"]
#: Gravest first: a task's verdict is the first of its problems in this order.
ORDER: tuple[Verdict, ...] = ("broken", "impossible", "noisy", "weak", "trivial", "healthy")
#: Verdicts that make the whole suite unhealthy.
SUITE_BREAKING = frozenset({"broken", "impossible", "noisy"})


@dataclass
class TaskHealth:
    task_id: str
    digest: str
    problems: list[dict[str, str]] = field(default_factory=list)

    @property
    def verdict(self) -> Verdict:
        kinds = {p["verdict"] for p in self.problems}
        return next(v for v in ORDER if v in kinds or v == "healthy")

    def add(self, verdict: Verdict, detail: str) -> None:
        self.problems.append({"verdict": verdict, "detail": detail})

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "digest": self.digest,
            "verdict": self.verdict,
            "problems": self.problems,
        }


def task_verdicts(
    tasks: Sequence[tuple[str, str]],
    controls: Sequence[ControlFinding],
    mutation: MutationReport,
    noise: NoiseReport,
    pop: Population,
    keyword_only: Mapping[str, list[str]] | None = None,
) -> list[TaskHealth]:
    """(task id, digest) pairs → each task's problems; `keyword_only`: by task, its
    keyword checks on a safety meaning that no judge settles (health.meaning)."""
    health = {t: TaskHealth(t, d) for t, d in tasks}
    for task_id, checks in (keyword_only or {}).items():
        if checks:
            health[task_id].add("weak", keyword_only_detail(checks))
    for finding in controls:
        health[finding.task_id].add("broken", finding.detail)
    for t in pop.impossible:
        agents = ", ".join(sorted(pop.counts[t]))
        health[t].add("impossible", f"every agent measured fails it ({agents})")
    for n in noise.noisy:
        flips = "—" if n.flip_rate is None else f"{n.flip_rate:.0%}"
        health[n.task_id].add("noisy", f"flip rate {flips} over {n.verdicts} verdicts; {n.advice}")
    for hole in mutation.holes:
        health[hole.task_id].add(
            "weak",
            f"mutant survives ({hole.kind}: {hole.change}); "
            f"would be killed by expect: {canonical(hole.hole)}"
            + (
                ""
                if hole.hole_verified
                else " (not checked: it does not kill it, or fails the reference)"
            ),
        )
    for t in pop.trivial:
        health[t].add("trivial", "every agent passes it, the null control too: no signal")
    return list(health.values())


def suite_verdict(tasks: Sequence[TaskHealth], mutation: MutationReport) -> dict[str, Any]:
    """`healthy` or `unhealthy`, with the reasons."""
    reasons = []
    for verdict in ORDER[:3]:
        named = [t.task_id for t in tasks if t.verdict == verdict]
        if named:
            reasons.append(f"{len(named)} {verdict} task(s): {', '.join(named)}")
    score = mutation.score
    if score is not None and score < TARGET:
        reasons.append(f"mutation score {score:.1%} is below the {TARGET:.0%} target")
    counts = {v: sum(t.verdict == v for t in tasks) for v in ORDER}
    return {
        "verdict": "unhealthy" if reasons else "healthy",
        "reasons": reasons,
        "counts": counts,
    }


def inconsistencies(report: dict[str, Any]) -> list[str]:
    """What a health report says that its own figures contradict: a task whose verdict is
    not the gravest of its problems, a suite called healthy with a suite-breaking task or
    a mutation score below target, task digests that do not add up to the suite's. A
    report `proctor health` wrote has none."""
    out = []
    tasks = [t for t in report.get("tasks") or [] if isinstance(t, dict)]
    for t in tasks:
        kinds = {p.get("verdict") for p in t.get("problems") or [] if isinstance(p, dict)}
        gravest = next(v for v in ORDER if v in kinds or v == "healthy")
        if t.get("verdict") != gravest:
            out.append(
                f"task {t.get('task_id')} is called {t.get('verdict')}, its problems say {gravest}"
            )
    verdict = (report.get("suite_verdict") or {}).get("verdict")
    breaking = [str(t.get("task_id")) for t in tasks if t.get("verdict") in SUITE_BREAKING]
    score = (report.get("mutation") or {}).get("score")
    if verdict not in ("healthy", "unhealthy"):
        out.append(f"the suite's verdict {verdict!r} is neither healthy nor unhealthy")
    elif verdict == "healthy" and breaking:
        out.append(f"the suite is called healthy with {', '.join(breaking)} not")
    elif verdict == "healthy" and isinstance(score, int | float) and score < TARGET:
        out.append(f"the suite is called healthy with a mutation score of {score:.1%}")
    digests = report.get("task_digests")
    if not isinstance(digests, dict) or digests != {
        t.get("task_id"): t.get("digest") for t in tasks
    }:
        out.append("its tasks' digests are not its task_digests")
    elif report.get("suite_digest") != suite_digest(digests):
        out.append("its suite_digest is not the digest of its task_digests")
    return out
