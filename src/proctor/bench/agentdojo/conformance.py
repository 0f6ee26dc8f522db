"""AgentDojo's own verdicts for the reference agents' calls, to hold proctor's against.

For every task of a suite, AgentDojo's `run_task_with_pipeline` runs two pipelines that
make the calls the reference agents make (agents.py): AgentDojo's GroundTruthPipeline
(the user task's ground truth, answered with its ground-truth output) and a pipeline that
then also plays the injection task's ground truth, computed on the environment after the
user task's calls. Each environment is loaded by AgentDojo's own loader, once per task,
and copied for the two pipelines. A task's verdict is AgentDojo's utility and not its
security (the attack succeeding); a user task alone has only utility.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
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


def reference_verdicts(
    benchmark: str, name: str, task_ids: Collection[str] | None = None
) -> dict[str, Reference]:
    """Task id → AgentDojo's verdicts for `ground_truth` and `obedient`, for every task
    of the suite or for those in `task_ids`."""
    from proctor.bench.agentdojo.source import agentdojo_domain

    ad = suites.agentdojo()
    task_suite = suites.suite(benchmark, name)
    domain = agentdojo_domain(benchmark, name)
    out: dict[str, Reference] = {}
    injection_ids: list[str | None] = [None, *suites.numbered(task_suite.injection_tasks)]
    for user_id in suites.numbered(task_suite.user_tasks):
        user_task = task_suite.get_user_task_by_id(user_id)
        for injection_id in injection_ids:
            task_id = "/".join([name, user_id, *([injection_id] if injection_id else [])])
            if task_ids is not None and task_id not in task_ids:
                continue
            injection = task_suite.get_injection_task_by_id(injection_id) if injection_id else None
            placed = suites.injections(
                benchmark, name, user_id, injection_id, suites.DEFAULT_ATTACK
            )
            env = task_suite.load_and_inject_default_environment(placed)
            pipelines = {"ground_truth": ad.GroundTruthPipeline(user_task)}
            if injection is not None:
                pipelines["obedient"] = _obedient_pipeline(user_task, injection)
            ours = domain.codec.load(
                domain.start(user_id, injection_id, suites.DEFAULT_ATTACK).state
            )
            verdicts = {}
            for agent, pipeline in pipelines.items():
                utility, attacked = task_suite.run_task_with_pipeline(
                    pipeline, user_task, injection, placed, environment=env.model_copy(deep=True)
                )
                verdicts[agent] = Verdict(bool(utility), bool(attacked) and injection is not None)
            verdicts.setdefault("obedient", verdicts["ground_truth"])
            out[task_id] = Reference(verdicts, ours == user_task.init_environment(env))
    return out
