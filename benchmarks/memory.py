"""Peak memory of a long run: 100,000 trials streamed to the store.

The Runner keeps no trial: each is written to the store and reduced to what the summary
reads. Peak RSS is the process's high-water mark (`ru_maxrss`), after the summary too.
`--no-store` keeps every full result in memory instead (what a run without a store must
do), for comparison.

    python benchmarks/memory.py [--tasks 1000] [--trials 100] [--no-store]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from workload import workload

from proctor import Runner, Store


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--no-store", action="store_true")
    args = parser.parse_args()
    suite, agent = workload(args.tasks)
    with tempfile.TemporaryDirectory() as tmp:
        store = None if args.no_store else Store(Path(tmp) / "bench.db")
        runner = Runner(suite, agent, trials=args.trials, concurrency=8, store=store)
        before = rss_mib()
        started = time.perf_counter()
        report = runner.run()
        wall = time.perf_counter() - started
        peak = rss_mib()
        size = (Path(tmp) / "bench.db").stat().st_size / 2**20 if store else 0.0
    n = report.summary.trials
    print(
        f"trials: {n} in {wall:.0f} s ({'no store' if args.no_store else f'store {size:,.0f} MiB'})"
    )
    print(f"peak RSS: {peak:.0f} MiB (before the run: {before:.0f} MiB)")
    print(f"per trial: {1024 * (peak - before) / n:.2f} KiB above the start")


if __name__ == "__main__":
    main()
