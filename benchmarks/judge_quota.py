"""The scheduler against a quota: how much of it is used, and is anything lost to 429s?

A loopback OpenAI-compatible endpoint serves `--rate` requests per second (a token bucket
holding one second's worth) and answers 429 with `retry-after-ms` past it, as providers
do. Two workloads go through proctor's scheduler (proctor.agents.scheduler):

- judges: `--judgments` distinct judgments at once through a ChatJudge (64 in flight at
  most: on a busy machine a judge request takes the better part of a second, and 16 in
  flight would cap the rate below the quota);
- agents: a run of `--trials` ChatAgent trials (the support example's `handle-missing-order`
  task, answered by the endpoint in one completion) at concurrency 16.

Each runs twice: with the quota configured (`rpm=`, what a user who knows their quota
sets) and without (the scheduler learns it from 429s and Retry-After alone). Quota use =
requests served / (rate × wall time + the bucket's one second): the share of what the
endpoint would have allowed in that time. The target is >= 90% with no judgment and no
trial lost.

    python benchmarks/judge_quota.py [--rate 50] [--judgments 500] [--trials 300]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

import openai  # noqa: E402, F401  (imported here: its first import is not the scheduler's time)

from openai_server import QuotaChatServer, completion, judge_reply  # noqa: E402
from proctor.agents.chat import ChatAgent  # noqa: E402
from proctor.judge.chat_judge import ChatJudge  # noqa: E402
from proctor.judge.judgment import JudgeView  # noqa: E402
from proctor.judge.panel import JudgePanel  # noqa: E402
from proctor.run import Runner  # noqa: E402
from proctor.tasks.rubrics import load_rubric  # noqa: E402


def answer(request: dict[str, Any]) -> dict[str, Any]:
    if request.get("tools"):
        return completion("I could not find an order C-404.")
    return judge_reply(3)


def use(server: QuotaChatServer, rate: float, wall: float) -> float:
    return server.served / (rate * wall + rate)


def judges(rate: float, n: int, rpm: float | None) -> dict[str, Any]:
    rubric = load_rubric(REPO / "examples" / "kyc" / "rubrics" / "document-request.yaml")
    with QuotaChatServer(rate, answer) as server:
        judge = ChatJudge(
            "gpt-4.1-mini", base_url=server.url, api_key="k", rpm=rpm, max_concurrency=64
        )
        views = [JudgeView("p", (f"message {i}",)) for i in range(n)]

        async def all_of_them() -> list[Any]:
            panel = JudgePanel([judge])
            return await asyncio.gather(
                *(panel.score(rubric, v) for v in views), return_exceptions=True
            )

        started = time.perf_counter()
        verdicts = asyncio.run(all_of_them())
        wall = time.perf_counter() - started
    lost = sum(isinstance(v, BaseException) for v in verdicts)
    return {
        "workload": "judges",
        "rpm": rpm,
        "requests": n,
        "lost": lost,
        "served": server.served,
        "429s": server.rejected,
        "wall_s": round(wall, 2),
        "quota_use": round(use(server, rate, wall), 3),
    }


def agents(rate: float, trials: int, rpm: float | None) -> dict[str, Any]:
    from proctor import load_tasks

    suite = load_tasks(REPO / "examples" / "support", ids=["handle-missing-order"])
    with QuotaChatServer(rate, answer) as server:
        agent = ChatAgent("gpt-4o-mini", base_url=server.url, api_key="k", rpm=rpm)
        started = time.perf_counter()
        report = Runner(suite, agent, trials=trials, concurrency=16, timeout_s=None).run()
        wall = time.perf_counter() - started
    return {
        "workload": "agents",
        "rpm": rpm,
        "requests": trials,
        "lost": report.summary.errors,
        "served": server.served,
        "429s": server.rejected,
        "wall_s": round(wall, 2),
        "quota_use": round(use(server, rate, wall), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", type=float, default=50.0, help="requests per second")
    parser.add_argument("--judgments", type=int, default=500)
    parser.add_argument("--trials", type=int, default=300)
    args = parser.parse_args()
    for rpm in (args.rate * 60, None):
        print(json.dumps(judges(args.rate, args.judgments, rpm)))
        print(json.dumps(agents(args.rate, args.trials, rpm)))


if __name__ == "__main__":
    main()
