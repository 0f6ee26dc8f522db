"""Regrading stored trials: graders re-run from stored traces, written as a new run.

Builds a store with the overhead workload (`--tasks` x `--trials` trials, every trace
event stored), then times `proctor.run.regrade.regrade` on it, and its parts: reading and
decoding the stored trials, grading them, writing the new run.

    python benchmarks/regrade.py [--tasks 1000] [--trials 20]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from workload import workload

from proctor import Runner, Store
from proctor.grade import GradeContext
from proctor.run.regrade import regrade
from proctor.run.trial import CRASH_CHECK, judge


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--trials", type=int, default=20)
    args = parser.parse_args()
    suite, agent = workload(args.tasks)
    members = {t.id: t for t in suite.tasks}
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "bench.db")
        started = time.perf_counter()
        source = Runner(suite, agent, trials=args.trials, concurrency=4, store=store).run()
        n = source.summary["trials"]
        print(f"stored {n} trials in {time.perf_counter() - started:.1f} s")

        started = time.perf_counter()
        done = regrade(store, source.run_id, suite)
        wall = time.perf_counter() - started
        assert not done.flips, done.flips
        print(f"regrade: {n} trials in {wall:.3f} s = {n / wall:,.0f} trials/s")

        # The same work, streamed, with a clock around each part.
        read = grading = 0.0
        trials = iter(store.graded_trials(source.run_id, CRASH_CHECK))
        while True:
            t0 = time.perf_counter()
            s = next(trials, None)
            t1 = time.perf_counter()
            if s is None:
                break
            member = members[s.result.task_id]
            ctx = GradeContext(
                member.task, s.trace, s.outcome, s.result.usage, s.result.latency_s, member.domain
            )
            judge(s.result, ctx, [], None, None)
            read, grading = read + t1 - t0, grading + time.perf_counter() - t1
        print(
            f"  of which: read + decode {1e6 * read / n:.0f} us/trial, "
            f"grading {1e6 * grading / n:.0f} us/trial, "
            f"write + summary {1e6 * max(wall - read - grading, 0.0) / n:.0f} us/trial"
        )
        store.close()


if __name__ == "__main__":
    main()
