"""The store at a million trials: per-task pass counts and the run summary, from indexes.

Writes one run of `--tasks` x `--trials` trial rows straight into a store (the rows a run
writes, without traces: they do not enter these reads), computes and stores its summary
the way the Runner does (a Tally of the streamed results), then times the reads a report
or a dashboard makes, each the fastest of 3, on a warm page cache.

    python benchmarks/store_scale.py [--tasks 10000] [--trials 100]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from proctor import Store
from proctor.core.results import Check, TaskInfo, TrialResult, Usage
from proctor.core.trace import Trace
from proctor.decide.summarize import Tally, summarize

RUN = "scale"


def results(tasks: int, trials: int) -> Iterator[TrialResult]:
    rng = random.Random(0)
    for t in range(tasks):
        skill = rng.random()
        for i in range(trials):
            ok = rng.random() < skill
            yield TrialResult(
                run_id=RUN,
                task_id=f"task-{t:05d}",
                trial=i,
                seed=rng.getrandbits(32),
                status="passed" if ok else rng.choice(["failed", "failed", "timeout"]),
                checks=[
                    Check("state:orders.status", "outcome", ok),
                    Check("required:orders.get", "trajectory", True),
                ],
                usage=Usage(900, 40, 0.0026, 5),
                latency_s=round(rng.uniform(0.5, 3.0), 6),
                trace_id=f"{rng.getrandbits(128):032x}",
                score=1.0 if ok else 0.5,
                metrics={"tool_calls": 4.0, "tool_precision": 1.0},
            )


def best_of(n: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    times, value = [], None
    for _ in range(n):
        started = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - started)
    return min(times), value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--trials", type=int, default=100)
    args = parser.parse_args()
    n = args.tasks * args.trials
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "scale.db"
        store = Store(path)
        store.create_run(RUN, {"run_id": RUN})
        started = time.perf_counter()
        tally = Tally()
        store.begin()
        for count, r in enumerate(results(args.tasks, args.trials), 1):
            store.write_trial(r, Trace(f"{r.task_id}#{r.trial}", r.trace_id), "", None)
            tally.add(r)
            if count % 100_000 == 0:
                store.commit()
                store.begin()
        store.commit()
        wrote = time.perf_counter() - started
        started = time.perf_counter()
        infos = {f"task-{t:05d}": TaskInfo(f"task-{t:05d}") for t in range(args.tasks)}
        summary = summarize(RUN, tally.results, infos, trials_per_task=args.trials)
        summarized = time.perf_counter() - started
        store.finish_run(RUN, "completed", summary)
        store.close()
        size = path.stat().st_size
        print(f"{n:,} trials written in {wrote:.1f} s; store {size / 2**20:,.0f} MiB")
        print(f"summary of the streamed results (end of a run): {summarized:.2f} s")

        store = Store(path)
        opened, _ = best_of(3, lambda: Store(path).close())
        counts_s, counts = best_of(3, lambda: store.task_counts(RUN))
        summary_s, row = best_of(3, lambda: store.run(RUN))
        keys_s, keys = best_of(1, lambda: store.trial_keys(RUN))
        assert len(counts) == args.tasks and sum(c["trials"] for c in counts.values()) == n
        assert row["summary"]["trials"] == n and len(keys) == n
        print(f"open the store:            {1000 * opened:8.1f} ms")
        print(f"per-task pass counts:      {1000 * counts_s:8.1f} ms  ({args.tasks} tasks)")
        print(f"run summary (stored):      {1000 * summary_s:8.1f} ms")
        print(f"stored (task, trial) keys: {1000 * keys_s:8.1f} ms  (what --resume reads)")
        store.close()


if __name__ == "__main__":
    main()
