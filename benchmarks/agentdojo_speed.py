"""AgentDojo in proctor against AgentDojo's own runner: the same tasks, CPU time as a ratio.

Each side runs in a process of its own, the sides alternating (and which goes first
alternating between repetitions), so a neighbour's load falls on both alike; the figure
is the ratio of the two CPU times of a repetition, min and median over repetitions.
proctor's side runs both reference agents through `Runner`, as `proctor run` does;
AgentDojo's side is its `run_task_with_pipeline` on environments its own loader builds,
with the same calls (bench/agentdojo/conformance.py). Both sides play the same runs:
`obedient` only where there is an injection to obey (on a user task alone it makes the
ground truth's calls and answer, so AgentDojo's side runs no second pipeline there and
each side's `obedient` verdict on it is its `ground_truth` one). Each side computes the
attack's injections itself. Both print a digest of their verdicts, which must be equal.

    python benchmarks/agentdojo_speed.py [--every 8] [--repeat 3] [--suites workspace,...]

`--every N` takes every Nth user task of each suite with its injection pairs (1: the whole
benchmark, 1,046 tasks).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import time
from functools import partial
from typing import Any

from peers import interleave

SUITES = ("workspace", "travel", "banking", "slack")
SIDES = ("proctor", "agentdojo")


def sample(benchmark: str, name: str, every: int) -> list[tuple[str, str | None]]:
    """Every Nth user task with all its injection pairs: each side's work per user task
    (the attack's vectors, starts kept between tasks) is as in the whole benchmark."""
    from proctor.bench.agentdojo.conformance import task_ids

    users = sorted({user for user, _ in task_ids(benchmark, name)}, key=numbered)[::every]
    return [(u, i) for u, i in task_ids(benchmark, name) if u in users]


def numbered(task: str) -> int:
    return int(task.rsplit("_", 1)[1])


def proctor_side(benchmark: str, name: str, every: int) -> dict[str, bool]:
    from proctor import load_suite
    from proctor.bench.agentdojo import ground_truth, obedient
    from proctor.bench.agentdojo.conformance import task_id
    from proctor.run import Runner

    suite = load_suite([f"agentdojo:{name}@{benchmark}"])
    tasks = sample(benchmark, name, every)
    every_id = [task_id(name, u, i) for u, i in tasks]
    attacked = [task_id(name, u, i) for u, i in tasks if i is not None]
    verdicts = {}
    for label, agent, ids in (
        ("ground_truth", ground_truth, every_id),
        ("obedient", obedient, attacked),
    ):
        if ids:  # `select` with no ids selects every task
            for result in Runner(suite.select(ids=ids), agent, timeout_s=None).run().results:
                verdicts[f"{label} {result.task_id}"] = result.passed
    for user_id, injection_id in tasks:
        if injection_id is None:
            alone = task_id(name, user_id, None)
            verdicts[f"obedient {alone}"] = verdicts[f"ground_truth {alone}"]
    return verdicts


def agentdojo_side(benchmark: str, name: str, every: int) -> dict[str, bool]:
    from proctor.bench.agentdojo.conformance import agentdojo_run, task_id

    verdicts = {}
    for user_id, injection_id in sample(benchmark, name, every):
        found, _ = agentdojo_run(benchmark, name, user_id, injection_id)
        for label, verdict in found.items():
            verdicts[f"{label} {task_id(name, user_id, injection_id)}"] = verdict.passed
    return verdicts


def one_side(side: str, benchmark: str, suites: list[str], every: int) -> dict[str, Any]:
    """Run one side here (after importing what it needs): its CPU time and verdicts."""
    from proctor.bench.agentdojo import suites as ad

    ad.agentdojo()
    run = proctor_side if side == "proctor" else agentdojo_side
    cpu, wall = time.process_time(), time.perf_counter()
    verdicts: dict[str, bool] = {}
    for name in suites:
        verdicts.update(run(benchmark, name, every))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    digest = hashlib.sha256(json.dumps(sorted(verdicts.items())).encode()).hexdigest()[:12]
    return {"side": side, "cpu": cpu, "wall": wall, "tasks": len(verdicts) // 2, "digest": digest}


def run_side(side: str, benchmark: str, suites: list[str], every: int) -> dict[str, Any]:
    """`one_side` in a fresh process."""
    args = [sys.executable, __file__, "--side", side, "--every", str(every)]
    args += ["--benchmark", benchmark, "--suites", ",".join(suites)]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return dict(json.loads(out.splitlines()[-1]))


def measure(benchmark: str, suites: list[str], every: int, repeat: int) -> dict[str, Any]:
    """Both sides `repeat` times, alternating, each in a fresh process: CPU seconds per
    side, the per-repetition ratios proctor / AgentDojo, the load, the verdict digests."""
    sides = {side: partial(run_side, side, benchmark, suites, every) for side in SIDES}
    found, load = interleave(sides, repeat)
    times = {name: [f["cpu"] for f in found[name]] for name in SIDES}
    digests = {f["digest"] for name in SIDES for f in found[name]}
    tasks = found["proctor"][0]["tasks"]
    ratios = [p / a for p, a in zip(times["proctor"], times["agentdojo"], strict=True)]
    return {
        "tasks": tasks,
        "repeat": repeat,
        "cpu": times,
        "ratios": ratios,
        "load": (min(load), max(load)),
        "same_verdicts": len(digests) == 1,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", default=",".join(SUITES))
    parser.add_argument("--benchmark", default="v1.2.1")
    parser.add_argument("--every", type=int, default=8, help="every Nth user task of a suite")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    suites = args.suites.split(",")
    if args.side:
        print(json.dumps(one_side(args.side, args.benchmark, suites, args.every)))
        return
    found = measure(args.benchmark, suites, args.every, args.repeat)
    for side in SIDES:
        cpu = found["cpu"][side]
        print(f"{side:9} CPU s: min {min(cpu):.2f} median {statistics.median(cpu):.2f}  {cpu}")
    ratios = found["ratios"]
    print(
        f"proctor / AgentDojo on {found['tasks']} tasks × 2 agents: min {min(ratios):.2f}× "
        f"median {statistics.median(ratios):.2f}×; load average {found['load'][0]:.1f}–"
        f"{found['load'][1]:.1f}; same verdicts: {found['same_verdicts']}"
    )


if __name__ == "__main__":
    main()
