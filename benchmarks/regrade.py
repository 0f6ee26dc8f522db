"""Regrading stored trials: graders re-run from stored traces, written as a new run.

Builds a store with the overhead workload (`--tasks` x `--trials` trials, every trace
event stored; the suite written to files, as worker processes rebuild it from them),
then times `proctor.run.regrade.regrade` on it: in this process, in 1 and 2 worker
processes (`--workers`), and, with `--cluster`, on a two-node Ray cluster started on
this machine (tests/ray_cluster.py). Every regrade must reproduce the source's verdicts.
Its graders make the checks stored, so a regraded trial shares their rows and writes none
(`checks_of`); with `--changed` the regrades grade against the suite with every task's
trajectory budget raised: each trial's checks differ in that check's evidence, none is
shared and every row is written again (the verdicts stay the same).
With workers, their CPU time is printed beside this process's, and from both the ratio
2 workers / 1 that two free cores would give (on a shared machine the rates cannot say).
The in-process run is then split into its parts: reading and decoding the stored
trials, grading them, writing the new run.

    python benchmarks/regrade.py [--tasks 1000] [--trials 20] [--workers 1,2] [--changed]
                                 [--cluster]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
from pathlib import Path

from workload import workload, write_suite

from proctor import Runner, Store, load_suite
from proctor.env.suite import Suite
from proctor.grade import GradeContext
from proctor.run.pool import Pool, ProcessPool, open_pool
from proctor.run.regrade import regrade
from proctor.run.trial import HARNESS_CHECKS, judge


def suite_files(root: Path, tasks: int, changed: bool = False) -> Suite:
    """The workload's suite as files: its domain module and a JSON file per task (with
    `changed`, each task's trajectory budget one call more); prints how long loading them
    takes (what each worker process does first)."""
    write_suite(root, tasks, range(tasks) if changed else ())
    started = time.perf_counter()
    suite = load_suite(root)
    print(f"suite of {tasks} JSON task files loaded in {time.perf_counter() - started:.2f} s")
    return suite


def workers_cpu(pool: Pool) -> float | None:
    """The CPU seconds a process pool's workers have used (from /proc; None elsewhere)."""
    if not isinstance(pool, ProcessPool):
        return None
    tick, total = os.sysconf("SC_CLK_TCK"), 0
    for worker in pool.procs:
        try:
            fields = Path(f"/proc/{worker.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / tick


def timed(
    label: str, store: Store, source: str, suite: Suite, n: int, pool: Pool
) -> tuple[float, float | None]:
    """One regrade's rate, with this process's CPU time a trial (all of it in this
    process; with workers, the part that caps their scaling), the workers' together
    and the load average; returns those CPU times."""
    started, cpu, before = time.perf_counter(), time.process_time(), workers_cpu(pool)
    done = regrade(store, source, suite, pool=pool)
    wall, cpu, after = time.perf_counter() - started, time.process_time() - cpu, workers_cpu(pool)
    assert not done.flips and done.summary.trials == n, (done.flips, done.summary.trials)
    workers = None if before is None or after is None else after - before
    spent = "" if workers is None else f", the workers' {1e6 * workers / n:.0f} us/trial"
    print(
        f"regrade, {label}: {n} trials in {wall:.2f} s = {n / wall:,.0f} trials/s"
        f" (this process's CPU {1e6 * cpu / n:.0f} us/trial{spent},"
        f" load {os.getloadavg()[0]:.1f})"
    )
    return cpu, workers


def scaling(one: tuple[float, float | None], two: tuple[float, float | None]) -> None:
    """What 2 workers would give over 1 on two free cores, from CPU time (what a shared
    machine still measures): one worker grades while this process works on the other
    core; two share both cores with this process, so 2 W1 / (W2 + P2)."""
    if one[1] is not None and two[1] is not None:
        print(
            f"2 workers / 1 on two free cores, from CPU time: {2 * one[1] / (two[0] + two[1]):.2f}x"
        )


def parts(store: Store, source: str, suite: Suite, n: int, cpu: float) -> None:
    """The in-process work, streamed, with a CPU clock around each part (a wall clock
    charges each part with whatever else the machine runs); the collector paused, as a
    regrade pauses it while a share is graded (run/regrade.py). The rest of the regrade's
    CPU is writing and the summary."""
    members = {t.id: t for t in suite.tasks}
    read = grading = 0.0
    trials = iter(store.graded_trials(source, HARNESS_CHECKS))
    gc.disable()
    while True:
        t0 = time.process_time()
        s = next(trials, None)
        t1 = time.process_time()
        if s is None:
            break
        member = members[s.result.task_id]
        ctx = GradeContext(
            member.task, s.trace, s.outcome, s.result.usage, s.result.latency_s, member.domain
        )
        judge(s.result, ctx, s.kept, None, None)
        read, grading = read + t1 - t0, grading + time.process_time() - t1
    gc.enable()
    print(
        f"  of which: read + decode {1e6 * read / n:.0f} us/trial, "
        f"grading {1e6 * grading / n:.0f} us/trial, "
        f"write + summary {1e6 * max(cpu - read - grading, 0.0) / n:.0f} us/trial (CPU)"
    )


def on_cluster(store: Store, source: str, suite: Suite, n: int) -> None:
    """The same regrade on a two-node Ray cluster (1 CPU each) on this machine."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from ray_cluster import RayCluster, unavailable

    why = unavailable()
    if why is not None:
        print(f"cluster: skipped ({why})")
        return
    cluster = RayCluster()
    try:
        started = time.perf_counter()
        cluster.start()
        print(f"cluster: two nodes up in {time.perf_counter() - started:.1f} s")
        os.environ.update({k: v for k, v in cluster.env.items() if k.startswith("RAY_")})
        with open_pool(executor="ray", address=cluster.address) as pool:
            timed(f"two-node Ray cluster ({pool.workers} CPUs)", store, source, suite, n, pool)
    finally:
        cluster.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument(
        "--workers", default="1,2", help='worker process counts, comma-separated (none: "")'
    )
    parser.add_argument(
        "--changed", action="store_true", help="regrade with every trial's checks changed"
    )
    parser.add_argument("--cluster", action="store_true", help="also on a two-node Ray cluster")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        suite = suite_files(Path(tmp) / "suite", args.tasks)
        _, agent = workload(args.tasks)
        store = Store(Path(tmp) / "bench.db")
        started = time.perf_counter()
        source = Runner(suite, agent, trials=args.trials, concurrency=4, store=store).run()
        n: int = source.summary.trials
        print(f"stored {n} trials in {time.perf_counter() - started:.1f} s")
        if args.changed:
            suite = suite_files(Path(tmp) / "changed", args.tasks, changed=True)
            print("regrades against every task's budget changed: every check written again")
        cpu, _ = timed("in this process", store, source.run_id, suite, n, open_pool(1))
        parts(store, source.run_id, suite, n, cpu)
        spent = {}
        for workers in (int(w) for w in args.workers.split(",") if w):
            with ProcessPool(workers) as pool:
                label = f"{workers} worker process{'es' if workers > 1 else ''}"
                spent[workers] = timed(label, store, source.run_id, suite, n, pool)
        if 1 in spent and 2 in spent:
            scaling(spent[1], spent[2])
        if args.cluster:
            on_cluster(store, source.run_id, suite, n)
        store.close()


if __name__ == "__main__":
    main()
