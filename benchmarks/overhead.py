"""Harness overhead per trial: a scripted agent doing 4 tool calls, full grading, stored.

The agent's own cost is near zero (no model, simulated latency), so the time per trial is
the harness's: environment copy, gateway, trace, graders, SQLite writes. Run it on an idle
core (`taskset -c 0`); CPU time is printed beside wall time.

    python benchmarks/overhead.py [--tasks 200] [--trials 5] [--concurrency 1] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import tempfile
import time
from pathlib import Path

from workload import workload

from proctor import Runner, Store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3, help="Runs; the fastest is shown.")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    suite, agent = workload(args.tasks)
    best: tuple[float, float] | None = None
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            store = Store(Path(tmp) / "bench.db")
            runner = Runner(
                suite, agent, trials=args.trials, concurrency=args.concurrency, seed=1, store=store
            )
            profiler = cProfile.Profile() if args.profile else None
            cpu0, wall0 = time.process_time(), time.perf_counter()
            if profiler:
                profiler.enable()
            report = runner.run()
            if profiler:
                profiler.disable()
            wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
            events = store.select("events", "SELECT count(*) FROM events")[0][0]
            store.close()
        best = (wall, cpu) if best is None or wall < best[0] else best
    wall, cpu = best
    n, passed = report.summary.trials, report.summary.passed_trials
    print(f"trials: {n} ({args.tasks} tasks x {args.trials}), passed {passed}")
    print(f"trace events stored: {events} ({events / n:.1f} per trial)")
    print(f"wall: {wall:.3f} s   cpu: {cpu:.3f} s   (fastest of {args.repeat})")
    print(f"per trial: {1000 * wall / n:.3f} ms wall, {1000 * cpu / n:.3f} ms cpu")
    print(f"throughput: {n / wall:,.0f} trials/s")
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
