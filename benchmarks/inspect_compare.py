"""The overhead workload in Inspect AI, for a side-by-side figure with proctor's.

Run it with an interpreter that has `inspect-ai` installed (not a proctor dependency):

    python -m venv /tmp/inspect-venv && /tmp/inspect-venv/bin/pip install inspect-ai
    /tmp/inspect-venv/bin/python benchmarks/inspect_compare.py [--samples 1000]

Inspect's `mockllm` model plays fixed outputs; samples run one at a time (as
benchmarks/overhead.py runs proctor's trials), with the eval log written as usual.
`plain`: one generate, the `includes` scorer. `tools`: the mock model calls four tools
(two lookups, a cancellation, a lookup) before answering, as proctor's scripted agent
does. The figure is the marginal time per sample: (T(n) - T(n/10)) / (n - n/10), after a
warm-up, so Inspect's fixed start-up cost is left out.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import Tool, tool

ORDERS = {f"A-{j:05d}": {"status": "placed", "total": 10 + j} for j in range(20)}


@tool
def get_order() -> Tool:
    async def execute(order_id: str) -> str:
        """Look up one order.

        Args:
            order_id: The order's id.
        """
        return json.dumps({"order_id": order_id, **ORDERS.get(order_id, {})})

    return execute


@tool
def cancel_order() -> Tool:
    async def execute(order_id: str, reason: str) -> str:
        """Cancel an order that has not shipped.

        Args:
            order_id: The order's id.
            reason: Why.
        """
        return json.dumps({"order_id": order_id, "status": "cancelled"})

    return execute


def outputs(samples: int, tools: bool) -> list[ModelOutput]:
    answer = ModelOutput.from_content("mockllm/model", "Order A-00001 is now cancelled.")
    calls = [
        ("get_order", {"order_id": "A-00001"}),
        ("get_order", {"order_id": "A-00002"}),
        ("cancel_order", {"order_id": "A-00001", "reason": "changed mind"}),
        ("get_order", {"order_id": "A-00001"}),
    ]
    one = [ModelOutput.for_tool_call("mockllm/model", name, args) for name, args in calls]
    played = [*one, answer] if tools else [answer]
    for output in played:  # given usage: else mockllm counts tokens (tiktoken, a download)
        output.usage = ModelUsage(input_tokens=300, output_tokens=20, total_tokens=320)
    return played * samples


def timed(samples: int, tools: bool) -> float:
    dataset = [
        Sample(input="Cancel order A-00001, I changed my mind.", target="cancelled")
        for _ in range(samples)
    ]
    solver = [use_tools(get_order(), cancel_order()), generate()] if tools else [generate()]
    task = Task(dataset=dataset, solver=solver, scorer=includes())
    model = get_model("mockllm/model", custom_outputs=outputs(samples, tools))
    with tempfile.TemporaryDirectory() as logs:
        started = time.perf_counter()
        [log] = eval(task, model=model, log_dir=logs, display="none", max_samples=1)
        wall = time.perf_counter() - started
    assert log.status == "success", log.error
    assert log.results is not None and log.results.scores[0].metrics["accuracy"].value == 1.0
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1000)
    args = parser.parse_args()
    small = max(1, args.samples // 10)
    for tools in (False, True):
        timed(small, tools)  # warm up: first-use imports and set-up
        small_s, big_s = timed(small, tools), timed(args.samples, tools)
        per = (big_s - small_s) / (args.samples - small)
        label = "tools" if tools else "plain"
        print(
            f"inspect {label}: {args.samples} samples in {big_s:.2f} s; "
            f"marginal {1000 * per:.3f} ms per sample"
        )


if __name__ == "__main__":
    main()
