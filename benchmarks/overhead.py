"""Harness overhead per trial: a scripted agent doing 4 tool calls, full grading, stored.

The agent's own cost is near zero (no model, simulated latency), so the time per trial is
the harness's: environment copy, gateway, trace, graders, SQLite writes. Beside it, in the
same process, the floor of issue 31: per trial, a deep copy of the starting state and the
trial's stored events written to SQLite again (one transaction per 256 trials, as the
Runner commits), and nothing else. Run it on an idle core (`taskset -c 0`) where you can;
CPU time is printed beside wall time, and the load average at the start.

`--varied-answers`: the agent answers each trial in other words (workload.VariedAgent),
as a model does; the scripted agent's answers repeat from trial to trial, and grading
reads an answer text once, so without it the figure leaves out what reading one costs.

    python benchmarks/overhead.py [--tasks 200] [--trials 5] [--concurrency 1]
        [--isolation thread|process] [--repeat 3] [--varied-answers] [--profile]
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import json
import os
import pstats
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from workload import workload, write_workload

from proctor import Runner, Store, load_suite
from proctor.env.suite import Suite
from proctor.run.executor import Executor, LocalExecutor
from proctor.run.process import ProcessExecutor
from proctor.store.sqlite import compact_json


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--isolation", choices=("thread", "process"), default="thread")
    parser.add_argument("--repeat", type=int, default=3, help="Runs; min and median shown.")
    parser.add_argument(
        "--varied-answers", action="store_true", help="Each trial answers in other words."
    )
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs)")
    with tempfile.TemporaryDirectory() as tmp:
        suite, agent, ref = bench_suite(args.tasks, args.isolation, Path(tmp), args.varied_answers)
        walls, cpus, floors, starts, steady = [], [], [], [], []
        n_all = args.tasks * args.trials
        for i in range(args.repeat):
            store = Store(Path(tmp) / f"bench-{i}.db")
            executor: Executor = (
                ProcessExecutor() if args.isolation == "process" else LocalExecutor()
            )
            runner = Runner(
                suite,
                agent,
                trials=args.trials,
                concurrency=args.concurrency,
                seed=1,
                store=store,
                agent_ref=ref,
                executor=executor,
            )
            profiler = cProfile.Profile() if args.profile else None
            firsts: list[float] = []
            cpu0, wall0 = time.process_time(), time.perf_counter()
            if profiler:
                profiler.enable()
            report = runner.run(lambda _, f=firsts: f or f.append(time.perf_counter()))
            if profiler:
                profiler.disable()
            walls.append(time.perf_counter() - wall0)
            starts.append(firsts[0] - wall0)
            steady.append((walls[-1] - starts[-1]) * n_all / (n_all - 1))
            cpus.append(time.process_time() - cpu0)
            rows = event_rows(store)
            store.close()
            floors.append(floor(suite, rows, Path(tmp) / f"floor-{i}.db"))
    n, passed = report.summary.trials, report.summary.passed_trials
    answers = "varied answers" if args.varied_answers else "answers repeat per task"
    print(
        f"trials: {n} ({args.tasks} tasks x {args.trials}, {args.isolation}, {answers}),"
        f" passed {passed}"
    )
    print(f"trace events stored: {len(rows)} ({len(rows) / n:.1f} per trial)")
    ms = lambda xs: f"{1000 * min(xs) / n:.3f} / {1000 * statistics.median(xs) / n:.3f} ms"  # noqa: E731
    print(f"per trial (min / median of {args.repeat}): wall {ms(walls)}, cpu {ms(cpus)}")
    each = ", ".join(f"{1000 * w / n:.3f}" for w in walls)
    print(f"  each run in turn, wall ms (the first reads each answer; later ones remember): {each}")
    print(f"  after the first record (start-up left out): wall {ms(steady)}")
    print(f"  start-up, to the first record: {min(starts):.3f} / {statistics.median(starts):.3f} s")
    print(f"floor (state copy + events to SQLite): {ms(floors)}")
    ratios = sorted(w / f for w, f in zip(walls, floors, strict=True))
    low, mid = ratios[0], statistics.median(ratios)
    print(f"wall / floor, same repetition: {low:.1f}x min, {mid:.1f}x median")
    print(f"throughput: {n / min(walls):,.0f} trials/s (fastest run)")
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)


def bench_suite(tasks: int, isolation: str, tmp: Path, varied: bool) -> tuple[Suite, Any, str]:
    """The suite, agent and agent reference: in memory, or as files worker processes load."""
    if isolation == "thread":
        suite, agent = workload(tasks, varied)
        return suite, agent, ""
    folder, ref = write_workload(tasks, tmp / "suite", varied)
    suite, agent = load_suite(folder), workload(tasks, varied)[1]
    return suite, agent, ref


def event_rows(store: Store) -> list[tuple[Any, ...]]:
    """Every stored trace event as a row (trial rowid, seq, t, kind, data as JSON text):
    what the floor writes, a row per event, as the store did before schema 4."""
    traces = store.select("the traces", "SELECT trial_rowid, events FROM traces")
    return [
        (rowid, seq, t, kind, compact_json(data))
        for rowid, events in traces
        for seq, t, kind, data in json.loads(events)
    ]


def floor(suite: Suite, rows: list[Any], path: Path) -> float:
    """Seconds to copy each trial's starting state and write its stored events again."""
    by_trial: dict[int, list[Any]] = {}
    for rowid, *event in rows:
        by_trial.setdefault(rowid, []).append(event)
    states = [t.task.initial_state for t in suite.tasks]
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE events(trial INTEGER, seq INTEGER, t REAL, kind TEXT, data TEXT)")
    started = time.perf_counter()
    db.execute("BEGIN")
    for i, (rowid, events) in enumerate(by_trial.items()):
        copy.deepcopy(states[i % len(states)])
        db.executemany("INSERT INTO events VALUES (?,?,?,?,?)", [(rowid, *e) for e in events])
        if i % 256 == 255:
            db.execute("COMMIT")
            db.execute("BEGIN")
    db.execute("COMMIT")
    took = time.perf_counter() - started
    db.close()
    return took


if __name__ == "__main__":
    main()
