"""AgentDojo in proctor against AgentDojo itself: agreement per suite, and the time each takes.

For every task of the four v1.2.1 suites (97 user tasks and 949 injection pairs), both
reference agents run through proctor's gateway (`proctor.bench.agentdojo:ground_truth`
and `:obedient`), and AgentDojo's own `run_task_with_pipeline` runs the same calls
(bench/agentdojo/conformance.py). Prints, per suite and agent, how many of proctor's
verdicts equal AgentDojo's, and the CPU and wall time of each side.

    python benchmarks/agentdojo_conformance.py [--suites banking,slack]
"""

from __future__ import annotations

import argparse
import time

from proctor import load_suite
from proctor.bench.agentdojo import ground_truth, obedient
from proctor.bench.agentdojo.conformance import reference_verdicts
from proctor.run import Runner

SUITES = ("workspace", "travel", "banking", "slack")
AGENTS = {"ground_truth": ground_truth, "obedient": obedient}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", default=",".join(SUITES))
    parser.add_argument("--benchmark", default="v1.2.1")
    args = parser.parse_args()
    totals = {"proctor": [0.0, 0.0], "agentdojo": [0.0, 0.0]}
    for name in args.suites.split(","):
        cpu, wall = time.process_time(), time.perf_counter()
        suite = load_suite([f"agentdojo:{name}@{args.benchmark}"])
        ours = {}
        for label, agent in AGENTS.items():
            results = Runner(suite, agent, timeout_s=None).run().results
            ours[label] = {r.task_id: r.passed for r in results}
        spent = (time.process_time() - cpu, time.perf_counter() - wall)
        cpu, wall = time.process_time(), time.perf_counter()
        theirs = reference_verdicts(args.benchmark, name)
        reference = (time.process_time() - cpu, time.perf_counter() - wall)
        for side, (c, w) in (("proctor", spent), ("agentdojo", reference)):
            totals[side][0] += c
            totals[side][1] += w
        for label in AGENTS:
            agree = sum(ours[label][t] == r.verdicts[label].passed for t, r in theirs.items())
            passed = sum(ours[label].values())
            print(f"{name:9} {label:12} agree {agree}/{len(theirs)}  proctor passes {passed}")
        same = sum(r.same_environment for r in theirs.values())
        print(
            f"{name:9} environments equal {same}/{len(theirs)}; "
            f"proctor {spent[0]:.1f} s CPU ({spent[1]:.1f} s wall), "
            f"AgentDojo {reference[0]:.1f} s CPU ({reference[1]:.1f} s wall)"
        )
    for side, (c, w) in totals.items():
        print(f"total {side:9} {c:7.1f} s CPU {w:7.1f} s wall (both agents)")


if __name__ == "__main__":
    main()
