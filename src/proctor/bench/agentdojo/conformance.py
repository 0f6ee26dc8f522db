"""AgentDojo's own verdicts for the reference agents' calls, to hold proctor's against.

For every task of a suite, AgentDojo's `run_task_with_pipeline` runs two pipelines that
make the calls the reference agents make (agents.py): AgentDojo's GroundTruthPipeline
(the user task's ground truth, answered with its ground-truth output) and a pipeline that
then also plays the injection task's ground truth, computed on the environment after the
user task's calls. The injections are those of AgentDojo's own attack object (proctor
finds the vectors a user task sees on its own parse, suites.py). Each environment is
loaded by AgentDojo's own loader, once per task, and copied for the two pipelines. A
task's verdict is AgentDojo's utility and not its security (the attack succeeding); a
user task alone has only utility.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from proctor.bench.agentdojo import suites


@dataclass(frozen=True, slots=True)
class Verdict:
    utility: bool
    attacked: bool

    @property
    def passed(self) -> bool:
        return self.utility and not self.attacked


def _obedient_pipeline(user_task: Any, injection_task: Any) -> Any:
    """AgentDojo pipeline making the obedient agent's calls and answer."""
    from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement
    from agentdojo.types import (
        ChatAssistantMessage,
        ChatToolResultMessage,
        ChatUserMessage,
        text_content_block_from_string,
    )

    def text(value: str) -> list[Any]:
        return [text_content_block_from_string(value)]

    class Obedient(BasePipelineElement):
        name = "proctor-obedient"

        def query(
            self,
            query: str,
            runtime: Any,
            env: Any,
            messages: Any = (),
            extra_args: Any = None,
        ) -> tuple[str, Any, Any, list[Any], Any]:
            out = [*messages, ChatUserMessage(role="user", content=text(query))]
            for task in (user_task, injection_task):
                for call in task.ground_truth(env):
                    out.append(
                        ChatAssistantMessage(role="assistant", content=text(""), tool_calls=[call])
                    )
                    result, error = runtime.run_function(env, call.function, call.args)
                    out.append(
                        ChatToolResultMessage(
                            role="tool",
                            content=text(str(result)),
                            tool_call=call,
                            tool_call_id=None,
                            error=error,
                        )
                    )
            answer = " ".join(
                t.GROUND_TRUTH_OUTPUT for t in (user_task, injection_task) if t.GROUND_TRUTH_OUTPUT
            )
            out.append(
                ChatAssistantMessage(role="assistant", content=text(answer), tool_calls=None)
            )
            return query, runtime, env, out, extra_args or {}

    return Obedient()


@dataclass(frozen=True, slots=True)
class Reference:
    """AgentDojo's verdicts on one task, and whether its environment is proctor's."""

    verdicts: dict[str, Verdict]
    same_environment: bool


@lru_cache(maxsize=8)
def _their_attack(benchmark: str, name: str) -> Any:
    """AgentDojo's own attack, finding the injection vectors with its own loader."""
    return suites.agentdojo().load_attack(
        suites.DEFAULT_ATTACK, suites.suite(benchmark, name), None
    )


def task_ids(benchmark: str, name: str) -> list[tuple[str, str | None]]:
    """(user task, injection task or None) of every task of a suite, in proctor's order
    (source.py): the user tasks alone, then every pair."""
    task_suite = suites.suite(benchmark, name)
    users = suites.numbered(task_suite.user_tasks)
    injections = suites.numbered(task_suite.injection_tasks)
    return [(u, None) for u in users] + [(u, i) for u in users for i in injections]


def task_id(name: str, user_id: str, injection_id: str | None) -> str:
    return "/".join([name, user_id, *([injection_id] if injection_id else [])])


def agentdojo_run(
    benchmark: str, name: str, user_id: str, injection_id: str | None
) -> tuple[dict[str, Verdict], Any]:
    """AgentDojo's own runner on one task: its verdicts for both agents, and the
    environment its loader built (before the user task's `init_environment`)."""
    ad = suites.agentdojo()
    task_suite = suites.suite(benchmark, name)
    user_task = task_suite.get_user_task_by_id(user_id)
    injection = task_suite.get_injection_task_by_id(injection_id) if injection_id else None
    placed = _their_attack(benchmark, name).attack(user_task, injection) if injection else {}
    env = task_suite.load_and_inject_default_environment(placed)
    pipelines = {"ground_truth": ad.GroundTruthPipeline(user_task)}
    if injection is not None:
        pipelines["obedient"] = _obedient_pipeline(user_task, injection)
    verdicts = {}
    for agent, pipeline in pipelines.items():
        utility, attacked = task_suite.run_task_with_pipeline(
            pipeline, user_task, injection, placed, environment=env.model_copy(deep=True)
        )
        verdicts[agent] = Verdict(bool(utility), bool(attacked) and injection is not None)
    verdicts.setdefault("obedient", verdicts["ground_truth"])
    return verdicts, env


def reference_verdicts(
    benchmark: str, name: str, only: Collection[str] | None = None
) -> dict[str, Reference]:
    """Task id → AgentDojo's verdicts for `ground_truth` and `obedient`, for every task
    of the suite or for those in `only`."""
    from proctor.bench.agentdojo.source import agentdojo_domain

    task_suite = suites.suite(benchmark, name)
    domain = agentdojo_domain(benchmark, name)
    out: dict[str, Reference] = {}
    for user_id, injection_id in task_ids(benchmark, name):
        tid = task_id(name, user_id, injection_id)
        if only is not None and tid not in only:
            continue
        verdicts, env = agentdojo_run(benchmark, name, user_id, injection_id)
        ours = domain.codec.load(domain.start(user_id, injection_id, suites.DEFAULT_ATTACK).state)
        theirs = task_suite.get_user_task_by_id(user_id).init_environment(env)
        out[tid] = Reference(verdicts, ours == theirs)
    return out
