"""ScriptedAgent: a deterministic stand-in for a language model.

It follows a per-task plan and misbehaves with given probabilities, seeded per trial, so
that reliability figures (pass^k, violation rates) mean something without an API key.
Each step is billed as one simulated model call (tokens from text length, a fixed price,
a simulated latency), so cost and latency reports have real numbers to show.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from proctor.agents.agent import AgentInput, AgentResult
from proctor.agents.session import Session
from proctor.env.toolbox import Toolbox


@dataclass(frozen=True, slots=True)
class Step:
    """One planned action: a tool call, or a question to the user (`ask`)."""

    tool: str | None = None
    args: Mapping[str, Any] = field(default_factory=dict)
    ask: str | None = None


@dataclass(frozen=True, slots=True)
class Plan:
    """What the agent does on one task. `temptations` are the calls it makes when it errs."""

    steps: tuple[Step, ...]
    answer: str
    temptations: tuple[Step, ...] = ()
    claimed_answer: str | None = None


@dataclass(frozen=True, slots=True)
class Misbehaviour:
    """Per-trial probabilities of the classic agent mistakes."""

    skip_lookup: float = 0.0
    forbidden_call: float = 0.0
    corrupt_argument: float = 0.0
    false_success: float = 0.0


class ScriptedAgent:
    """Plays a Plan per task id; an unknown task gets a polite refusal and no calls."""

    def __init__(
        self,
        plans: Mapping[str, Plan],
        misbehave: Misbehaviour | None = None,
        *,
        name: str = "scripted",
        version: str = "1",
        model: str = "scripted-model",
        usd_per_1k_input: float = 0.0025,
        usd_per_1k_output: float = 0.01,
        latency_s: float = 0.4,
    ) -> None:
        self.plans = dict(plans)
        self.misbehave = misbehave or Misbehaviour()
        self.name = name
        self.version = version
        self.model = model
        self.prices = (usd_per_1k_input, usd_per_1k_output)
        self.latency_s = latency_s

    @property
    def settings(self) -> dict[str, Any]:
        """What the run manifest records about this agent's configuration."""
        m = self.misbehave
        return {
            "model": self.model,
            "misbehave": {
                "skip_lookup": m.skip_lookup,
                "forbidden_call": m.forbidden_call,
                "corrupt_argument": m.corrupt_argument,
                "false_success": m.false_success,
            },
        }

    def choose_steps(
        self, plan: Plan, input: AgentInput, rng: random.Random
    ) -> tuple[list[Step], str]:
        """The steps this trial will take and the answer it will give, after misbehaviour."""
        kinds = {t["name"]: t.get("kind", "read") for t in input.tools}
        steps = list(plan.steps)
        answer = plan.answer
        m = self.misbehave
        lookups = [i for i, s in enumerate(steps) if s.tool and kinds.get(s.tool) == "read"]
        if lookups and rng.random() < m.skip_lookup:
            del steps[rng.choice(lookups)]
        if plan.temptations and rng.random() < m.forbidden_call:
            steps.insert(rng.randrange(len(steps) + 1), rng.choice(plan.temptations))
        calls = [i for i, s in enumerate(steps) if s.tool and s.args]
        if calls and rng.random() < m.corrupt_argument:
            i = rng.choice(calls)
            steps[i] = Step(steps[i].tool, _corrupt(dict(steps[i].args), rng))
        writes = [s for s in steps if s.tool and kinds.get(s.tool) == "write"]
        if writes and rng.random() < m.false_success:
            steps = [s for s in steps if s not in writes]
            answer = plan.claimed_answer or plan.answer
        return steps, answer

    async def run(self, input: AgentInput, toolbox: Toolbox) -> AgentResult:
        rng = random.Random(input.seed)
        plan = self.plans.get(input.task_id)
        steps: list[Step]
        if plan is None:
            steps, answer = [], "I cannot help with that request."
        else:
            steps, answer = self.choose_steps(plan, input, rng)
        session = Session(
            input,
            toolbox,
            model=self.model,
            usd_per_1k_input=self.prices[0],
            usd_per_1k_output=self.prices[1],
            latency_s=self.latency_s,
            rng=rng,
        )
        for step in steps:
            if step.ask is not None:
                await session.ask(step.ask)
            elif step.tool is not None:
                await session.call(step.tool, dict(step.args))
        return session.answer(answer)


def _corrupt(args: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """Change one argument the way a model slips: a digit off, a wrong id."""
    key = rng.choice(sorted(args))
    value = args[key]
    if isinstance(value, bool):
        args[key] = not value
    elif isinstance(value, int | float):
        args[key] = value + 1
    else:
        args[key] = f"{value}X"
    return args
