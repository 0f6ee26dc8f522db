"""The review desk on a run of 100,000 trials: how long its pages take to render.

Writes one run of `--tasks` x `--trials` trials, each with a short trace (prompt, a tool
call through the policy, its result, a state change, the answer), computes its summary
as the Runner does, queues its review items (the one step that reads every trial), then
times the desk's pages in-process (routing, the store, the templates; no network), each
the fastest of 5 on a warm page cache:

- the queue page (its first page, and a page deep in the queue),
- an item page (a trial's task, trace and label form),
- the run's trial list, first page and a page deep in the run, with counts by status,
- the agreement page (with every queued item labelled once).

    python benchmarks/review_desk.py [--tasks 1000] [--trials 100]
"""

from __future__ import annotations

import argparse
import re
import resource
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from store_scale import RUN, best_of, results

from proctor import Store
from proctor.core.results import TaskInfo
from proctor.core.trace import Trace, TraceEvent
from proctor.decide.summarize import Tally, summarize
from proctor.labels.desk_settings import DeskSettings
from proctor.review.assignment import enqueue
from proctor.review.auth import add_reviewer
from proctor.review.queue import review_queue
from proctor.store import desk
from proctor.store import label_tables as stored
from proctor.store.export import store_run
from proctor.store.label_tables import LabelRow


def trace_of(task_id: str, trial: int, trace_id: str) -> Trace:
    order = f"A-{trial:03d}"
    events = [
        ("message", {"role": "user", "content": f"Cancel order {order} for {task_id}."}),
        ("tool_proposal", {"call_id": "c1", "tool": "orders.cancel", "args": {"id": order}}),
        ("policy_decision", {"call_id": "c1", "tool": "orders.cancel", "allowed": True}),
        ("tool_result", {"call_id": "c1", "tool": "orders.cancel", "result": {"ok": True}}),
        (
            "state_change",
            {
                "call_id": "c1",
                "tool": "orders.cancel",
                "changes": [{"path": f"orders.{order}.status", "before": "placed", "after": "x"}],
            },
        ),
        ("answer", {"text": f"Order {order} is cancelled."}),
    ]
    return Trace(
        f"{task_id}#{trial}",
        trace_id,
        [TraceEvent(n, float(n), kind, data) for n, (kind, data) in enumerate(events, 1)],
    )


def write_run(path: Path, tasks: int, trials: int) -> None:
    infos = {f"task-{t:05d}": TaskInfo(f"task-{t:05d}") for t in range(tasks)}
    manifest = {
        "run_id": RUN,
        "agent": {"name": "bench-agent", "version": "1"},
        "trials": trials,
        "suite": {"name": "bench", "digest": "d", "paths": [], "task_digests": {}},
    }
    store = Store(path)
    store.create_run(RUN, manifest)
    tally = Tally()
    store.begin()
    for count, r in enumerate(results(tasks, trials), 1):
        store.write_trial(r, trace_of(r.task_id, r.trial, r.trace_id), "", None)
        tally.add(r)
        if count % 50_000 == 0:
            store.commit()
            store.begin()
    store.commit()
    store.finish_run(RUN, "completed", summarize(RUN, tally.results, infos, trials_per_task=trials))
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--trials", type=int, default=100)
    args = parser.parse_args()
    from starlette.testclient import TestClient

    from proctor.review.server import create_app

    n = args.tasks * args.trials
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "desk.db"
        started = time.perf_counter()
        write_run(path, args.tasks, args.trials)
        print(f"{n:,} trials with traces written in {time.perf_counter() - started:.1f} s")

        store = Store(path)
        started = time.perf_counter()
        run = store_run(store, RUN)
        _, items = enqueue(store, run, review_queue(run), double_share=0.2, seed=0)
        del run
        queued = time.perf_counter() - started
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"queue built (reads every trial, once): {queued:.1f} s, {len(items):,} items;")
        print(f"  peak RSS so far {rss:,.0f} MiB")

        add_reviewer(store, "bench", "", adjudicator=False)  # labels every item, below
        # the pages are read by an adjudicator holding no item (the agreement page is hers,
        # and leaves out items she holds), on a desk showing automated verdicts (the status
        # filter and counts)
        link, _ = add_reviewer(store, "lead", "", adjudicator=True)
        app = create_app(path, DeskSettings(show_automated=True))
        client = TestClient(app, base_url="http://127.0.0.1:8765")
        token = link.split("token=", 1)[1]
        client.post("/signin", data={"token": token}, follow_redirects=False)
        csrf = re.search(r'name="csrf" value="(\w+)"', client.get("/").text)
        assert csrf is not None
        # the first trials page counts the run's trials by status (kept once it has)
        started = time.perf_counter()
        assert client.get(f"/runs/{RUN}/trials").status_code == 200
        first = time.perf_counter() - started
        print(f"{'trials page, first view (counts them)':38} {1000 * first:7.1f} ms")
        # every item labelled once, for the agreement page (as the desk stores a label)
        started = time.perf_counter()
        for item, *_ in desk.items_page(store, RUN, 0, -1, len(items)):
            assignment = desk.claim(store, RUN, 1, item.id)
            assert assignment is not None
            label = LabelRow(
                1, "bench", RUN, item.task_id, item.trial, "fail", False, "x", "n", False, "v", 0.0
            )
            stored.add_labels(store, assignment, [label])
        print(f"{len(items):,} labels stored in {time.perf_counter() - started:.1f} s")
        last = desk.items_page(store, RUN, 0, -1, len(items))[-1][0]
        deep_item = len(items) - 60
        middle = f"task-{args.tasks // 2:05d}"
        pages: list[tuple[str, str]] = [
            ("queue page (first 50 items)", f"/runs/{RUN}/queue"),
            (f"queue page (deep: after item {deep_item})", f"/runs/{RUN}/queue?after={deep_item}"),
            ("item page (task, trace, form)", f"/items/{last.id}"),
            ("trials page (first 50, counts)", f"/runs/{RUN}/trials"),
            ("trials page (deep: mid-run)", f"/runs/{RUN}/trials?after={middle}:50"),
            ("trials page (failed only)", f"/runs/{RUN}/trials?status=failed"),
            (f"agreement page ({len(items)} labels)", f"/runs/{RUN}/agreement"),
        ]

        def get(url: str) -> Any:
            response = client.get(url)
            assert response.status_code == 200, (url, response.status_code)
            return response

        for name, url in pages:
            seconds, response = best_of(5, lambda url=url: get(url))
            print(f"{name:38} {1000 * seconds:7.1f} ms  ({len(response.content) / 1024:.0f} KiB)")
        tracemalloc.start()
        get(pages[0][1])
        get(pages[2][1])
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(f"memory allocated serving a queue and an item page: peak {peak / 2**20:.1f} MiB")
        store.close()


if __name__ == "__main__":
    main()
