"""Simulated users that work against their task.

A scripted user can fail a trial the agent did right: by refusing what the task asks for,
or by running out of lines before the task's write is done. In the trials of the
reference agent, each user reply given while an expected write has not happened yet is
flagged when it is a refusal (it contradicts the task's instructions), when it names an
identifier in place of the prompt's (ORD-1002 where the prompt says ORD-1001, and nothing
the task expects written names ORD-1002), or when it is empty or a goodbye (it ends the
conversation before that write), with the trial and the trace step (docs/architecture.md,
Suite health). Expected writes are the task's effects that must
happen (`count` above 0) and its required calls to write tools.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from proctor.core.trace import Trace
from proctor.env.suite import SuiteTask
from proctor.grade.language import identifiers
from proctor.tasks.models import AnyOf, EffectAssertion, Task

_REFUSAL = re.compile(
    r"^\s*(no\b|nope\b|don'?t\b|do not\b|never ?mind\b|stop\b|cancel that\b|i changed my mind"
    r"|leave it\b|not now\b)",
    re.IGNORECASE,
)
_GOODBYE = re.compile(r"^\s*(bye|goodbye|that'?s all|thanks,? bye|nothing else)\b", re.IGNORECASE)


def expected_writes(member: SuiteTask) -> set[str]:
    """The write tools the task expects to be applied."""
    expect = member.task.expect
    tools = {
        a.effect for a in expect.outcome if isinstance(a, EffectAssertion) and not a.count.test(0)
    }
    for call in (
        expect.trajectory.required if expect.trajectory else ()
    ):  # a name or a pattern; any-of groups are choices
        name = call if isinstance(call, str) else getattr(call, "tool", "")
        tool = member.domain.tools.get(name)
        if tool is not None and tool.kind == "write":
            tools.add(tool.name)
    return tools


@dataclass(frozen=True)
class UserFinding:
    task_id: str
    trial: int
    seq: int
    question: str
    reply: str
    problem: str
    pending: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "trial": self.trial,
            "step": self.seq,
            "question": self.question,
            "reply": self.reply,
            "problem": self.problem,
            "pending_writes": list(self.pending),
        }


#: An identifier's shape: letters as `a`, digits as `9` (ORD-1001 and ord-2002 alike).
_SHAPE = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "a" * 52 + "9" * 10
)


def _written_values(value: Any) -> set[str]:
    """Every string in a predicate as the task file wrote it (`$in` lists included)."""
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return {s for v in value.values() for s in _written_values(v)}
    if isinstance(value, list | tuple):
        return {s for v in value for s in _written_values(v)}
    return set()


def expected_values(task: Task) -> set[str]:
    """The strings the task expects in its writes' and required calls' arguments."""
    predicates: list[Any] = [
        a.where for a in task.expect.outcome if isinstance(a, EffectAssertion) and a.where
    ]
    trajectory = task.expect.trajectory
    for item in trajectory.required_calls if trajectory else ():
        predicates.extend(p.args for p in (item.patterns if isinstance(item, AnyOf) else [item]))
    return {
        s for args in predicates if args for p in args.values() for s in _written_values(p.source)
    }


def _problem(reply: str, prompt_ids: set[str], expected: set[str]) -> str | None:
    if not reply.strip():
        return "ends the conversation (no reply left) before the expected write"
    if _GOODBYE.match(reply):
        return "ends the conversation before the expected write"
    if _REFUSAL.match(reply):
        return "refuses what the task asks for"
    shapes = {i.translate(_SHAPE) for i in prompt_ids}
    others = sorted(
        i for i in identifiers(reply) - prompt_ids - expected if i.translate(_SHAPE) in shapes
    )
    if others:
        named = ", ".join(sorted(prompt_ids))
        return f"names {', '.join(others)} where the prompt names {named}: it contradicts the task"
    return None


def user_findings(member: SuiteTask, trial: int, trace: Trace) -> list[UserFinding]:
    """The replies of the simulated user in one trial that work against its task."""
    spec = member.task.user
    if not spec.turns and not spec.replies:
        return []
    pending = expected_writes(member)
    prompt_ids, expected = identifiers(member.task.prompt), expected_values(member.task)
    question, out = "", []
    for event in trace.events:
        if event.kind == "state_change":
            pending.discard(str(event.data.get("tool", "")))
        elif event.kind == "message" and event.data.get("to") == "user":
            question = str(event.data.get("content", ""))
        elif event.kind == "message" and event.data.get("role") == "user" and question:
            reply = str(event.data.get("content", ""))
            problem = _problem(reply, prompt_ids, expected) if pending else None
            if problem:
                out.append(
                    UserFinding(
                        member.id,
                        trial,
                        event.seq,
                        question,
                        reply,
                        problem,
                        tuple(sorted(pending)),
                    )
                )
            question = ""
    return out


def users_report(
    members: dict[str, SuiteTask], trials: Iterable[tuple[str, int, Trace]]
) -> list[UserFinding]:
    """Findings over (task id, trial, trace) of the reference agent's trials."""
    out: list[UserFinding] = []
    for task_id, trial, trace in trials:
        if task_id in members:
            out.extend(user_findings(members[task_id], trial, trace))
    return out
