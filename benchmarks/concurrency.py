"""Concurrency efficiency: does the harness fill the agent's concurrency budget?

1,000 trials of an agent making 3 model calls of 100 ms simulated latency each (awaited,
as a real client's network wait), at concurrency 200. The ideal wall time is
ceil(1000 / 200) x 0.3 s = 1.5 s; the target is within 1.2x of it. `--sync` runs a sync
agent (blocking sleeps, on the agent threads) instead.

    python benchmarks/concurrency.py [--trials 1000] [--concurrency 200] [--sync]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import tempfile
import time
from pathlib import Path

from workload import workload

from proctor import AgentInput, Runner, Store, SyncToolbox, Toolbox

CALLS = 3
LATENCY_S = 0.1


class WaitingAgent:
    """Three model calls of 100 ms each, with a lookup and a cancellation between them."""

    name = "waiting"

    async def run(self, input: AgentInput, toolbox: Toolbox) -> str:
        oid = input.prompt.split()[2].rstrip(",")
        calls = [
            ("orders.get", {"order_id": oid}),
            ("orders.cancel", {"order_id": oid, "reason": "changed mind"}),
        ]
        for i in range(CALLS):
            await asyncio.sleep(LATENCY_S)
            toolbox.record_model_call(
                model="sim", input_tokens=300, output_tokens=20, cost_usd=0.001
            )
            if i < len(calls):
                await toolbox.call(*calls[i])
        return f"Order {oid} is now cancelled."


class BlockingAgent:
    """The same, as a sync agent whose client blocks."""

    name = "blocking"

    def run(self, input: AgentInput, toolbox: SyncToolbox) -> str:
        oid = input.prompt.split()[2].rstrip(",")
        calls = [
            ("orders.get", {"order_id": oid}),
            ("orders.cancel", {"order_id": oid, "reason": "changed mind"}),
        ]
        for i in range(CALLS):
            time.sleep(LATENCY_S)
            toolbox.record_model_call(
                model="sim", input_tokens=300, output_tokens=20, cost_usd=0.001
            )
            if i < len(calls):
                toolbox.call(*calls[i])
        return f"Order {oid} is now cancelled."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--sync", action="store_true", help="A sync (blocking) agent.")
    args = parser.parse_args()
    tasks = 100
    suite, _ = workload(tasks)
    agent = BlockingAgent() if args.sync else WaitingAgent()
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "bench.db")
        runner = Runner(
            suite,
            agent,
            trials=math.ceil(args.trials / tasks),
            concurrency=args.concurrency,
            store=store,
        )
        started, cpu0 = time.perf_counter(), time.process_time()
        report = runner.run()
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu0
        store.close()
    n = report.summary.trials
    ideal = math.ceil(n / args.concurrency) * CALLS * LATENCY_S
    print(f"trials: {n} at concurrency {args.concurrency}, {report.summary.statuses}")
    print(f"agent: {agent.name}, {CALLS} model calls of {LATENCY_S * 1000:.0f} ms each")
    print(f"wall: {wall:.3f} s   ideal: {ideal:.3f} s   ratio: {wall / ideal:.3f}")
    print(f"harness cpu: {cpu:.3f} s ({1000 * cpu / n:.3f} ms per trial)")


if __name__ == "__main__":
    main()
