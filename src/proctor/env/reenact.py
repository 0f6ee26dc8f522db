"""Re-enacting a trace: the agent's side of it played again in a fresh world, no agent.

A trace mixes what the agent did (the prompt it got, its model calls, tool proposals,
questions to the user, waits, its answer) with what the world answered (policy decisions,
faults, results, errors, state changes, confirmations). `actions_of` keeps the agent's
side; `reenact` plays it through a fresh Environment of a task, so the ToolGateway
validates, authorizes, injects faults and executes every proposal again and the simulated
user answers again, through the same Toolbox a live agent holds. Whatever the actions
are, the trace, the final state and the ledger that come out agree by construction.

`proctor mutate` re-enacts edited actions (a dropped call takes its effect with it);
`proctor promote` re-enacts a failed trial on the task it wrote, to check that the task
rebuilds the world the failure happened in (docs/architecture.md, Flow).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from proctor.core.jsonvalues import copy_json
from proctor.core.outcome import Outcome
from proctor.core.trace import Trace
from proctor.env.domain import Domain
from proctor.env.environment import Environment
from proctor.env.gateway import EnvironmentFault
from proctor.env.toolbox import SyncToolbox
from proctor.tasks.models import Fault, Task

ActionKind = Literal["message", "model_call", "call", "ask", "wait", "note", "answer"]
#: Model-call fields the Toolbox takes by name; the rest travel as extras.
_MODEL_FIELDS = ("model", "input_tokens", "output_tokens", "cost_usd", "latency_s")


@dataclass(frozen=True, slots=True)
class Action:
    """One thing the agent did: `call` {tool, args}, `ask` {question}, `wait` {seconds},
    `model_call` (the event's data), `message` {role, content}, `note`, `answer` {text}."""

    kind: ActionKind
    data: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def call(tool: str, args: Any) -> Action:
        return Action("call", {"tool": tool, "args": copy_json(args)})


class ReenactError(RuntimeError):
    """The domain's code broke while re-enacting: no consistent trace can be made."""


def actions_of(trace: Trace) -> list[Action]:
    """The agent's side of `trace`, in order. A question to the user keeps the question
    only (the task's simulated user answers it again); events the world wrote are left
    out, and so are notes tied to a call."""
    actions: list[Action] = []
    asked = False  # the previous message was a question to the user: skip its reply
    for e in trace.events:
        data = e.data
        if e.kind == "message":
            if data.get("role") == "assistant" and data.get("to") == "user":
                actions.append(Action("ask", {"question": str(data.get("content", ""))}))
                asked = True
                continue
            if asked and data.get("role") == "user":
                asked = False
                continue
            actions.append(Action("message", copy_json(data)))
        elif e.kind == "model_call":
            actions.append(Action("model_call", copy_json(data)))
        elif e.kind == "tool_proposal":
            actions.append(Action.call(str(data.get("tool", "")), data.get("args")))
        elif e.kind == "note" and "wait_s" in data:
            actions.append(Action("wait", {"seconds": float(data["wait_s"])}))
        elif e.kind == "note" and "call_id" not in data:
            actions.append(Action("note", copy_json(data)))
        elif e.kind == "answer":
            actions.append(Action("answer", {"text": str(data.get("text", ""))}))
        asked = asked and e.kind == "message"
    return actions


@dataclass(slots=True)
class Reenacted:
    """A re-enacted trial: its trace, what it changed, and the simulated time it took."""

    trace: Trace
    outcome: Outcome
    latency_s: float


def reenact(
    task: Task,
    domain: Domain,
    actions: Sequence[Action],
    *,
    seed: int,
    faults: Sequence[Fault] = (),
    trial_id: str = "",
    trace_id: str = "",
    watch_every_call: bool = False,
) -> Reenacted:
    """Play `actions` in a fresh world of `task` (seeded like the trial: the same faults
    fire on the same calls). The trace always ends with one answer, as a live trial's.
    `watch_every_call`: the gateway watches reads seen pure too (env/integrity.py)."""
    env = Environment.fresh(task, domain, seed, faults)
    env.gateway.watch_every_call = watch_every_call
    box = SyncToolbox(env)
    answer = ""
    try:
        for action in actions:
            data = action.data
            if action.kind == "call":
                box.call(str(data["tool"]), data.get("args"))
            elif action.kind == "ask":
                box.ask_user(str(data["question"]))
            elif action.kind == "wait":
                box.wait(float(data["seconds"]))
            elif action.kind == "model_call":
                named = {k: data[k] for k in _MODEL_FIELDS if k in data}
                extra = {k: v for k, v in data.items() if k not in _MODEL_FIELDS}
                box.record_model_call(**named, **extra)
            elif action.kind == "answer":
                answer = str(data.get("text", ""))
            else:  # message, note: recorded as they were
                env.recorder.emit(action.kind, copy_json(data))
    except EnvironmentFault as exc:
        raise ReenactError(str(exc)) from None
    finally:
        env.close()
    env.recorder.emit("answer", {"text": answer})
    trace = Trace(trial_id or f"{task.id}#reenacted", trace_id, list(env.recorder.events))
    return Reenacted(trace, env.outcome(), env.recorder.clock.now)
