"""CPU of the agent's turn in the overhead workload, on one thread (issue 31).

Sets up 1,000 trials (the workload's 200 tasks x 5), then times only their turns:
the scripted agent's four tool calls through the gateway and its five billed model
calls. Prints the minimum over repetitions of CPU microseconds per turn.
"""

from __future__ import annotations

import asyncio
import sys
import time

from workload import workload

from proctor import Runner
from proctor.agents.agent import agent_callable
from proctor.run.executor import LocalExecutor
from proctor.run.trial import set_up
from proctor.run.turn import turn_on_loop


async def turns(repeat: int) -> list[float]:
    suite, agent = workload(200)
    runner = Runner(suite, agent, trials=5, concurrency=1, seed=1, executor=LocalExecutor())
    specs = list(runner.specs())
    fn = agent_callable(agent)
    out = []
    for _ in range(repeat):
        sets = [set_up(s) for s in specs]
        start = time.process_time()
        for env, ai in sets:
            await turn_on_loop(fn, ai, env, None)
        out.append((time.process_time() - start) / len(sets) * 1e6)
    return out


if __name__ == "__main__":
    figures = asyncio.run(turns(int(sys.argv[1]) if len(sys.argv) > 1 else 7))
    print(f"turn CPU min {min(figures):.1f} us, median {sorted(figures)[len(figures) // 2]:.1f} us")
