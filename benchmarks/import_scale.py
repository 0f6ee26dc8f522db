"""Importing a million spans: time and peak memory of reading a big trace file.

Writes a JSON-lines file of OpenTelemetry GenAI spans, one per line (`--sessions`
sessions of 10 spans: an `invoke_agent` root, 4 `chat` spans, 5 `execute_tool` spans),
then, in a fresh interpreter, reads every session with `iter_sessions` and keeps none
(what `proctor grade` does before grading each). Prints the file's size, the time, the
sessions read and the peak RSS beside the RSS before reading. Optionally grades the first
`--grade` sessions through `proctor grade` for the whole path, and with `--workers` times
grading them (`grade_sessions`, stored as `proctor grade` does) in this process and on
each number of worker processes given; every pool must reach the in-process verdicts.

    python benchmarks/import_scale.py [--sessions 100000] [--grade 2000] [--workers 1,2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from proctor import Store, load_suite
from proctor.env.suite import Suite
from proctor.run.pool import InlinePool, Pool, ProcessPool
from proctor.traces.grading import grade_sessions
from proctor.traces.trace_files import iter_sessions

PROCTOR = Path(sys.executable).parent / "proctor"
ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import resource, sys, time
from proctor.traces.trace_files import iter_sessions
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
count = events = 0
for session in iter_sessions(sys.argv[1]):
    count += 1
    events += len(session.events)
took = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(count, events, took, before / 1024, peak / 1024)
"""


def spans(n: int) -> list[dict[str, object]]:
    trace = f"{n:032x}"
    root = f"{n:012x}0000"
    t0 = 1_700_000_000_000_000_000 + n * 10_000_000_000
    rows: list[dict[str, object]] = [
        {
            "name": "invoke_agent shop",
            "context": {"trace_id": trace, "span_id": root},
            "parent_id": None,
            "start_time": t0,
            "end_time": t0 + 9_000_000_000,
            "attributes": {"task_id": "cancel-eligible-order", "gen_ai.agent.name": "shop"},
        }
    ]
    for i in range(1, 10):
        chat = i % 2 == 1
        attrs: dict[str, object] = (
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.usage.input_tokens": 400 + i,
                "gen_ai.usage.output_tokens": 20,
            }
            if chat
            else {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "orders.get",
                "gen_ai.tool.call.arguments": '{"order_id": "A-100"}',
                "gen_ai.tool.call.result": '{"status": "placed"}',
            }
        )
        rows.append(
            {
                "name": "chat gpt-4o-mini" if chat else "execute_tool orders.get",
                "context": {"trace_id": trace, "span_id": f"{n:012x}{i:04x}"},
                "parent_id": root,
                "start_time": t0 + i * 500_000_000,
                "end_time": t0 + i * 500_000_000 + 400_000_000,
                "attributes": attrs,
            }
        )
    return rows


def timed_grading(label: str, path: Path, suite: Suite, db: Path, pool: Pool) -> list[object]:
    """Grade and store every session of `path` on `pool`; prints trials/s, returns the
    verdicts (task, trial, status, each check's name and result)."""
    started = time.perf_counter()
    graded = grade_sessions(iter_sessions(path), suite, store=Store(db), run_id=label, pool=pool)
    wall = time.perf_counter() - started
    n = graded.summary.trials
    print(f"grade_sessions, {label}: {n:,} sessions in {wall:.2f} s = {n / wall:,.0f} trials/s")
    return [
        (r.task_id, r.trial, r.status, [(c.name, c.passed) for c in r.checks])
        for r in graded.results
    ]


def on_workers(path: Path, tmp: Path, workers: list[int]) -> None:
    """Grading in this process, then on each number of worker processes."""
    suite = load_suite(ROOT / "examples/support")
    expected = timed_grading("in this process", path, suite, tmp / "inline.db", InlinePool())
    for count in workers:
        with ProcessPool(count) as pool:
            label = f"{count} worker process{'es' if count > 1 else ''}"
            got = timed_grading(label, path, suite, tmp / f"workers-{count}.db", pool)
        assert got == expected, f"{label}: verdicts differ from the in-process ones"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--grade", type=int, default=0, help="Also grade this many sessions.")
    parser.add_argument(
        "--workers", default="", help="time grading the --grade sessions on these worker counts"
    )
    args = parser.parse_args()
    if args.workers and not args.grade:
        parser.error("--workers times grading: give --grade N too")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "spans.jsonl"
        with path.open("w") as out:
            for n in range(args.sessions):
                out.writelines(json.dumps(row) + "\n" for row in spans(n))
        size = path.stat().st_size
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, check=True
        )
        count, events, took, before, peak = done.stdout.split()
        print(
            f"{10 * args.sessions:,} spans ({size / 2**20:.0f} MiB): {int(count):,} sessions, "
            f"{int(events):,} events read in {float(took):.1f} s; peak RSS {float(peak):.0f} MiB "
            f"({float(before):.0f} MiB before reading)"
        )
        if args.grade:
            small = Path(tmp) / "small.jsonl"
            with small.open("w") as out:
                for n in range(args.grade):
                    out.writelines(json.dumps(row) + "\n" for row in spans(n))
            started = time.perf_counter()
            graded = subprocess.run(
                [
                    str(PROCTOR),
                    "grade",
                    str(small),
                    "--suite",
                    str(ROOT / "examples/support"),
                    "--store",
                    str(Path(tmp) / "p.db"),
                    "--quiet",
                ],
                capture_output=True,
                text=True,
            )
            took_s = time.perf_counter() - started
            print(
                f"proctor grade, {args.grade:,} sessions ({10 * args.grade:,} spans): "
                f"{took_s:.1f} s, exit {graded.returncode}: {graded.stdout.strip()[:120]}"
            )
            if args.workers:
                on_workers(small, Path(tmp), [int(w) for w in args.workers.split(",")])


if __name__ == "__main__":
    main()
