"""Replay: re-run an agent on recorded sessions, its tool calls answered from the recording.

A model or prompt change can then be tried on real sessions without side effects. Each
session gets a domain whose tools (the suite's, with their schemas, when the session
matches a task; else the tools the recording used) answer a call by tool name and
arguments from what was recorded, in recorded order (a repeat of the last answer when a
call is made more often). A call the recording lacks is a divergence: the agent gets a
`divergence` tool error and the report lists the call. The replay is stored as a run, so
`proctor compare GRADED REPLAY` puts it beside the graded recording, task by task.

The simulated user is the matched task's (`user:`); recorded later user turns are not
replayed. Replays run on the local executor: each session's recording lives in memory.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import zip_longest
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError

from proctor.core.jsonvalues import canonical
from proctor.core.summary import RunSummary
from proctor.env.domain import Domain, Tool, ToolError
from proctor.env.suite import Suite, SuiteTask
from proctor.grade.context import NOT_ATTEMPTED
from proctor.grade.state import without_state_checks
from proctor.run.runner import Runner
from proctor.run.trial import TrialSpec, trial_seed
from proctor.tasks.loader import LoadedTask
from proctor.tasks.models import Task
from proctor.traces.grading import match_sessions
from proctor.traces.imported import Session

if TYPE_CHECKING:
    from proctor.judge.grader import Judging
    from proctor.store.sqlite import Store

DIVERGENCE = "divergence"
Call = tuple[str, str]  # (tool, canonical arguments)


class _AnyArguments(BaseModel):
    """Arguments of a tool known only from the recording: anything goes."""

    model_config = ConfigDict(extra="allow")


@dataclass
class Recording:
    """One session's tool answers, and what the replay asked of them."""

    answers: dict[Call, list[tuple[bool, Any]]]
    recorded: list[Call]
    examples: dict[str, dict[str, Any]]  # tool -> the arguments it was called with
    made: list[Call] = field(default_factory=list)
    unrecorded: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def of(cls, session: Session, base: Domain | None) -> Recording:
        proposals = {}
        answers: dict[Call, list[tuple[bool, Any]]] = {}
        recorded: list[Call] = []
        examples: dict[str, dict[str, Any]] = {}
        for e in session.events:
            d = e.data
            if e.kind == "tool_proposal":
                given = d.get("args")
                args: dict[str, Any] = given if isinstance(given, dict) else {}
                proposals[d.get("call_id")] = (str(d["tool"]), args)
                examples.setdefault(str(d["tool"]), {}).update(args)
            elif e.kind in ("tool_result", "tool_error") and d.get("call_id") in proposals:
                if e.kind == "tool_error" and d.get("code") in NOT_ATTEMPTED:
                    continue  # stopped before the tool in the recording: nothing to answer
                tool, args = proposals.pop(d.get("call_id"))
                key = (tool, _key(base, tool, args))
                answer = (
                    (True, d.get("result"))
                    if e.kind == "tool_result"
                    else (False, (str(d.get("code")), str(d.get("error", ""))))
                )
                answers.setdefault(key, []).append(answer)
                recorded.append(key)
        return cls(answers, recorded, examples)

    def answer(self, tool: str, args: dict[str, Any]) -> Any:
        key = (tool, canonical(args))
        self.made.append(key)
        queue = self.answers.get(key)
        if not queue:
            self.unrecorded.append({"tool": tool, "args": args})
            raise ToolError(f"no recorded answer for this call of {tool}", code=DIVERGENCE)
        ok, value = queue.pop(0) if len(queue) > 1 else queue[0]
        if not ok:
            raise ToolError(value[1], code=value[0])
        return value


def _key(base: Domain | None, tool: str, args: dict[str, Any]) -> str:
    """Arguments as the replay's gateway will pass them (validated, defaults filled)."""
    known = base.tools.get(tool) if base is not None else None
    if known is not None:
        try:
            return canonical(known.validate(args))
        except (ValidationError, TypeError):
            pass
    return canonical(args)


def recorded_domain(recording: Recording, base: Domain | None) -> Domain:
    """A domain answering from `recording`: `base`'s tools (names, schemas, kinds, scopes)
    and any other tool the recording used, with permissive arguments."""
    domain = Domain(base.name if base is not None else "recorded", "answers from a recording")
    for name, tool in (base.tools if base is not None else {}).items():
        domain.tools[name] = replace(tool, fn=_answerer(recording, name), wants_ctx=False)
    for name, example in recording.examples.items():
        if name not in domain.tools:
            tool = Tool(
                name, "", "read", (), _answerer(recording, name), _AnyArguments, None, False, 0.0
            )
            tool.args_schema = {"type": "object", "properties": {k: {} for k in example}}
            domain.tools[name] = tool
    return domain


def _answerer(recording: Recording, tool: str) -> Any:
    def answer(state: dict[str, Any], **args: Any) -> Any:
        return recording.answer(tool, args)

    return answer


@dataclass
class SessionReplay:
    session: str
    task_id: str
    trial: int
    recorded: int
    replayed: int
    unrecorded: list[dict[str, Any]]
    missing: list[dict[str, Any]]
    first_divergence: int | None
    status: str = ""

    @property
    def diverged(self) -> bool:
        return self.first_divergence is not None

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "diverged": self.diverged}


@dataclass
class ReplayReport:
    run_id: str
    summary: RunSummary
    sessions: list[SessionReplay]
    skipped: list[str]


def _compared(recording: Recording) -> tuple[int | None, list[dict[str, Any]]]:
    """(first position where the call sequences differ, recorded calls never made)."""
    first = next(
        (i for i, (a, b) in enumerate(zip_longest(recording.recorded, recording.made)) if a != b),
        None,
    )
    missing = Counter(recording.recorded) - Counter(recording.made)
    return first, [
        {"tool": tool, "args": json.loads(args)}
        for (tool, args), n in missing.items()
        for _ in range(n)
    ]


def _safe_id(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.:-]", "-", text) or "session"


class _ReplayRunner(Runner):
    """A Runner whose trials each get their own recorded domain."""

    def __init__(self, plan: list[tuple[Task, int, Domain]], *args: Any, **kwargs: Any) -> None:
        self.plan = plan
        super().__init__(*args, **kwargs)

    def specs(self) -> Iterator[TrialSpec]:
        for task, trial, domain in self.plan:
            if (task.id, trial) not in self.done:
                seed = trial_seed(self.seed, task.id, trial)
                yield TrialSpec(self.run_id, task, domain, trial, seed, self.faults)


def replay(
    sessions: Sequence[Session],
    agent: Any,
    *,
    suite: Suite | None = None,
    mapping: dict[str, str] | None = None,
    store: Store | None = None,
    agent_ref: str = "",
    timeout_s: float | None = 60.0,
    concurrency: int = 4,
    judging: Judging | None = None,
) -> ReplayReport:
    """Replay every session (matched to a suite task when a suite is given; else as a
    task of its own, with its recorded prompt and no expectations); `judging` judges the
    suite's rubric tasks (a replay that writes what was judged before hits the cache)."""
    if suite is not None:
        matched, unmatched = match_sessions(sessions, suite, mapping)
        groups = [(member, group) for member, group in matched]
    else:
        groups, unmatched = [], []
        for session in sessions:
            if not session.prompt:
                unmatched.append(session.id)
                continue
            task = Task(
                id=_safe_id(session.id), domain="recorded", prompt=session.prompt, suites=["replay"]
            )
            loaded = LoadedTask(task, Path("<replay>"), (), {})
            groups.append((SuiteTask(loaded, Domain("recorded")), [session]))
    plan, recordings, skipped_checks = [], [], set()
    for member, group in groups:
        base = member.domain if suite is not None else None
        # recorded tools change no state: final-state checks cannot hold or fail
        task, dropped = without_state_checks(member.task)
        skipped_checks.update(dropped)
        for trial, session in enumerate(group):
            recording = Recording.of(session, base)
            plan.append((task, trial, recorded_domain(recording, base)))
            recordings.append((session, member.id, trial, recording))
    if not plan:
        raise ValueError("no session to replay: none matches a task, and none has a prompt")
    members = [member for member, _ in groups]
    runner = _ReplayRunner(
        plan,
        Suite(suite.name if suite else "replay", suite.roots if suite else [], members),
        agent,
        trials=min(len(group) for _, group in groups),
        concurrency=concurrency,
        timeout_s=timeout_s,
        store=store,
        agent_ref=agent_ref,
        filters={"replay": True},
        judging=judging,
    )
    notes = {"sessions": len(recordings), "skipped_checks": sorted(skipped_checks)}
    runner.manifest = runner.manifest.model_copy(update={"replay": notes})
    report = runner.run()
    statuses = {(r.task_id, r.trial): r.status for r in report.results}
    replays = []
    for session, task_id, trial, recording in recordings:
        first, missing = _compared(recording)
        replays.append(
            SessionReplay(
                session.id,
                task_id,
                trial,
                len(recording.recorded),
                len(recording.made),
                recording.unrecorded,
                missing,
                first,
                statuses.get((task_id, trial), ""),
            )
        )
    return ReplayReport(report.run_id, report.summary, replays, unmatched)
