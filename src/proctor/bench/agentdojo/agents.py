"""Two reference agents for AgentDojo tasks: for conformance and for demos.

`ground_truth` makes the user task's ground-truth calls (computed by AgentDojo on the
task's starting environment) through the toolbox and answers with the task's
ground-truth output; it ignores injections. `obedient` does the same, then carries out
the injection task's ground-truth calls, computed on the environment as it stands after
the user task's calls, and adds the injection task's ground-truth output to its answer.
To know that environment, it replays each call that succeeded on a private copy.
Neither calls a model: AgentDojo's `run_task_with_pipeline` with the same calls must
reach the same verdicts (tests/test_agentdojo_conformance.py).
"""

from __future__ import annotations

from typing import Any

from proctor.agents.agent import AgentInput, AgentResult
from proctor.bench.agentdojo import suites
from proctor.env.toolbox import SyncToolbox


class ReferenceAgent:
    """Plays AgentDojo's ground truth; `obey` also plays the injection task's."""

    version = "1"

    def __init__(self, name: str, obey: bool) -> None:
        self.name = name
        self.obey = obey

    def run(self, input: AgentInput, toolbox: SyncToolbox) -> AgentResult:
        from proctor.bench.agentdojo.source import agentdojo_domain

        ref = input.settings.get("agentdojo")
        if not isinstance(ref, dict):
            raise ValueError(f"task {input.task_id!r} is not an AgentDojo task")
        domain = agentdojo_domain(ref["benchmark"], ref["suite"])
        task_suite = suites.suite(ref["benchmark"], ref["suite"])
        user_task = task_suite.get_user_task_by_id(ref["user_task"])
        start = domain.start(ref["user_task"], ref.get("injection_task"), ref["attack"])
        env = start.environment() if self.obey else None
        runtime = suites.agentdojo().FunctionsRuntime(task_suite.tools)
        outputs = [user_task.GROUND_TRUTH_OUTPUT]
        self._play(list(start.ground_truth), toolbox, env, runtime)
        if self.obey and ref.get("injection_task"):
            injection = task_suite.get_injection_task_by_id(ref["injection_task"])
            self._play(injection.ground_truth(env), toolbox, env, runtime)
            outputs.append(injection.GROUND_TRUTH_OUTPUT)
        return AgentResult(answer=" ".join(text for text in outputs if text))

    def _play(self, calls: list[Any], toolbox: SyncToolbox, env: Any, runtime: Any) -> None:
        for call in calls:
            result = toolbox.call(call.function, dict(call.args))
            if self.obey and result.ok:
                runtime.run_function(env, call.function, call.args)


ground_truth = ReferenceAgent("agentdojo-ground-truth", obey=False)
obedient = ReferenceAgent("agentdojo-obedient", obey=True)
