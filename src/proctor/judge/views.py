"""What a judge sees of a trial: the subject and only what the rubric shows.

The subject is the agent's final answer, or the text it wrote into an argument of the
calls to one tool that reached the tool (a document request's message, say). Besides the
task's prompt, the judge sees only what the rubric's `shows` lists: the answer, the
conversation, the tool calls with their results, the final state, the expectations
only when the rubric names `expected`, and the task's own reference text (its
`expect.judge` entry's `reference`) when the rubric names `reference`
(docs/architecture.md, Judges).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from proctor.core.outcome import Outcome
from proctor.core.trace import USER_SIM_KEY, Trace
from proctor.grade.context import calls_from_trace
from proctor.judge.judgment import JudgeView
from proctor.tasks.models import JudgeExpect, Task
from proctor.tasks.rubrics import Rubric, ToolSubject

#: How a transcript marks the user's turn that ended the conversation.
ENDS = "[ends the conversation: {}]"


def transcript(turns: Iterable[tuple[str, str, str | None]]) -> str:
    """(who, text, stop reason or None) turns as the fidelity judge reads them: `User:` and
    `Agent:` lines, the turn that ended the conversation marked with its reason."""
    return "\n".join(
        f"{who}{'' if stop is None else ' ' + ENDS.format(stop)}: {text}"
        for who, text, stop in turns
    )


def conversation_turns(trace: Trace) -> list[tuple[str, str, str | None]]:
    """The turns of a conversation a model user played (empty when none played): what
    each side said to the other, the agent's final answer last. A `user_sim` note
    that stops comes before the message it stops with."""
    turns: list[tuple[str, str, str | None]] = []
    stop: str | None = None
    played = False
    for e in trace.events:
        note = e.noted(USER_SIM_KEY)
        if note is not None:
            played = True
            stop = note.get("stop_reason") if note.get("stop") else None
        elif e.kind == "message" and e.data.get("role") == "user":
            turns.append(("User", str(e.data.get("content") or ""), stop))
            stop = None
        elif e.kind == "message" and e.data.get("to") == "user":
            turns.append(("Agent", str(e.data.get("content") or ""), None))
    if not played:
        return []
    if trace.answer.strip():
        turns.append(("Agent (final answer)", trace.answer, None))
    return turns


def subject_of(rubric: Rubric, trace: Trace) -> tuple[str, ...]:
    """The texts the rubric judges in this trace (empty when there is none)."""
    if rubric.subject == "user_turns":
        turns = conversation_turns(trace)
        return (transcript(turns),) if turns else ()
    if not isinstance(rubric.subject, ToolSubject):
        answer = trace.answer
        return (answer,) if answer.strip() else ()
    tool, argument = rubric.subject.tool, rubric.subject.argument
    texts = []
    for call in calls_from_trace(trace):
        value = call.arg_dict.get(argument)
        if call.tool == tool and call.executed and isinstance(value, str) and value.strip():
            texts.append(value)
    return tuple(texts)


def judge_entries(task: Task, rubrics: Sequence[Rubric]) -> dict[str, JudgeExpect]:
    """Each rubric's `expect.judge` entry, by rubric id: a suite binds a task's rubrics in
    the order of its entries, one each (env/suite.py)."""
    return {r.id: entry for r, entry in zip(rubrics, task.expect.judge, strict=True)}


def _shown(
    name: str, task: Task, trace: Trace, outcome: Outcome | None, reference: str | None
) -> Any:
    if name == "reference":
        return reference
    if name == "answer":
        return trace.answer
    if name == "messages":
        return [
            {"role": e.data.get("role"), "content": e.data.get("content")}
            for e in trace.of_kind("message")
        ]
    if name == "tool_calls":
        return [
            {
                "tool": c.tool,
                "args": c.args,
                **({"result": c.result} if c.succeeded else {"error": c.error_code}),
            }
            for c in calls_from_trace(trace)
        ]
    if name == "final_state":
        return outcome.final_state if outcome is not None else None
    expected = task.expect.model_dump(mode="json", exclude_defaults=True)
    expected.pop("judge", None)
    return expected


def trial_view(
    rubric: Rubric,
    task: Task,
    trace: Trace,
    outcome: Outcome | None,
    agent_model: str | None,
    reference: str | None = None,
) -> JudgeView | None:
    """The view of one trial for `rubric` (with the task's `reference` for it); None when
    the trial has nothing to judge."""
    subject = subject_of(rubric, trace)
    if not subject:
        return None
    shown = tuple((name, _shown(name, task, trace, outcome, reference)) for name in rubric.shows)
    return JudgeView(task.prompt, subject, shown, agent_model)
