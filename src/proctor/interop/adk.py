"""Google ADK evaluation sets (`*.evalset.json`, `*.test.json`) as proctor tasks.

Read with models of ADK's documented schema (snake_case or camelCase below the top
level, as ADK accepts; unknown fields are errors), including the two older `.test.json`
layouts (a list of turns; a list of named cases with `data`). Each eval case becomes a
task of the domain named on the command line:

- the first invocation's user text is the prompt; the later ones are what the simulated
  user says next (`user.turns`); a `conversation_scenario` gives its starting prompt;
- `session_input.state` is the initial state and its `user_id` the identity;
- the invocations' expected tool calls, in order, are the task's reference trajectory,
  matched under ADK's match type (`test_config.json` beside the file, or `--match-type`;
  ADK's default EXACT), which are proctor's order modes `exact`, `in_order` and
  `any_order`; arguments compare as whole dicts (`args: exact`, values as proctor's
  predicates), or not at all with ADK's `ignore_args`;
- the last final response gives answer expectations: the numbers and identifiers it
  states must be mentioned; every final response and rubric is kept in `metadata.adk`;
  with a rubric folder, a judge also compares the final answer with that response
  (`final-response-match`, ADK's `final_response_match_v2`) and holds the run to the
  case's ADK rubrics (`assertions-hold`), each task's text as the judge's reference
  (proctor.interop.rubric_import);
- `final_session_state` gives outcome checks on its top-level keys.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from proctor.core.documents import (
    Loc,
    Problem,
    SpecError,
    format_loc,
    issues_from_validation,
    line_of,
    read_document,
)
from proctor.env.domain import Domain
from proctor.grade.language import factual_tokens
from proctor.interop.rubric_import import ASSERTIONS, FINAL_RESPONSE, RubricFolder, assertion_list
from proctor.interop.task_import import Found, build_task, located
from proctor.tasks.models import Task

MatchType = Literal["EXACT", "IN_ORDER", "ANY_ORDER"]
MATCH_TYPES: tuple[MatchType, ...] = ("EXACT", "IN_ORDER", "ANY_ORDER")
TRAJECTORY_METRIC = "tool_trajectory_avg_score"


class _Adk(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)


class _Open(_Adk):
    """google-genai's types: many optional fields; the ones proctor reads are declared."""

    model_config = ConfigDict(extra="allow", alias_generator=to_camel, populate_by_name=True)


class FunctionCall(_Open):
    name: str
    args: dict[str, Any] | None = None
    id: str | None = None


class Part(_Open):
    text: str | None = None
    thought: bool | None = None
    function_call: FunctionCall | None = None


class Content(_Open):
    parts: list[Part] | None = None
    role: str | None = None

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts or [] if p.text and not p.thought)


class IntermediateData(_Adk):
    tool_uses: list[FunctionCall] = Field(default_factory=list)
    tool_responses: list[dict[str, Any]] = Field(default_factory=list)
    intermediate_responses: list[Any] = Field(default_factory=list)


class InvocationEvent(_Open):
    author: str | None = None
    content: Content | None = None


class InvocationEvents(_Adk):
    invocation_events: list[InvocationEvent] = Field(default_factory=list)


class Rubric(_Adk):
    rubric_id: str
    rubric_content: dict[str, Any]
    description: str | None = None
    type: str | None = None

    @property
    def text(self) -> str:
        """What the rubric asks: ADK's `text_property`, else its description."""
        said = self.rubric_content.get("text_property", self.rubric_content.get("textProperty"))
        return said if isinstance(said, str) and said.strip() else self.description or ""


class Invocation(_Adk):
    invocation_id: str = ""
    user_content: Content
    final_response: Content | None = None
    intermediate_data: IntermediateData | InvocationEvents | None = None
    creation_timestamp: float = 0.0
    duration: float | None = None
    model_duration: float | None = None
    tool_duration: float | None = None
    rubrics: list[Rubric] | None = None
    app_details: dict[str, Any] | None = None

    def tool_uses(self) -> list[FunctionCall]:
        data = self.intermediate_data
        if isinstance(data, IntermediateData):
            return data.tool_uses
        if isinstance(data, InvocationEvents):
            return [
                p.function_call
                for e in data.invocation_events
                for p in (e.content.parts if e.content else None) or []
                if p.function_call is not None
            ]
        return []


class SessionInput(_Adk):
    app_name: str
    user_id: str
    session_id: str | None = None
    state: dict[str, Any] = Field(default_factory=dict)


class Scenario(_Adk):
    starting_prompt: str
    conversation_plan: str | None = None
    user_persona: Any = None


class EvalCase(_Adk):
    eval_id: str
    conversation: list[Invocation] | None = None
    conversation_scenario: Scenario | None = None
    session_input: SessionInput | None = None
    creation_timestamp: float = 0.0
    rubrics: list[Rubric] | None = None
    final_session_state: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _one_conversation(self) -> EvalCase:
        if (self.conversation is None) == (self.conversation_scenario is None):
            raise ValueError("an eval case has a conversation or a conversation_scenario")
        if self.conversation is not None and not self.conversation:
            raise ValueError("an eval case's conversation has at least one invocation")
        return self


class EvalSet(BaseModel):
    """The top level: ADK reads it in snake_case only."""

    model_config = ConfigDict(extra="forbid")
    eval_set_id: str
    name: str | None = None
    description: str | None = None
    eval_cases: list[EvalCase]
    creation_timestamp: float = 0.0


class OldToolUse(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tool_name: str
    tool_input: dict[str, Any] = Field(default_factory=dict)


class OldTurn(BaseModel):
    """A turn of the older `.test.json` layout."""

    model_config = ConfigDict(extra="forbid")
    query: str
    expected_tool_use: list[OldToolUse] = Field(default_factory=list)
    expected_intermediate_agent_responses: list[Any] = Field(default_factory=list)
    reference: str = ""

    def invocation(self) -> dict[str, Any]:
        return {
            "user_content": {"role": "user", "parts": [{"text": self.query}]},
            "final_response": {"role": "model", "parts": [{"text": self.reference}]},
            "intermediate_data": {
                "tool_uses": [
                    {"name": t.tool_name, "args": t.tool_input} for t in self.expected_tool_use
                ]
            },
        }


class OldCase(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    data: list[OldTurn]
    initial_session: dict[str, Any] = Field(default_factory=dict)


def match_type_of(value: Any) -> MatchType:
    """ADK's spellings: 0/1/2, or the name in any case with `-` or spaces."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 3:
        return MATCH_TYPES[value]
    name = re.sub(r"[-\s]", "_", str(value)).upper()
    if name not in MATCH_TYPES:
        raise ValueError(f"unknown match type {value!r} (EXACT, IN_ORDER, ANY_ORDER)")
    return name


def config_of(path: Path) -> tuple[MatchType, bool]:
    """(match type, ignore_args) from `test_config.json` beside the eval set."""
    config = path.parent / "test_config.json"
    if not config.is_file():
        return "EXACT", False
    data, lines = read_document(config)
    criterion = (
        (data.get("criteria") or {}).get(TRAJECTORY_METRIC) if isinstance(data, dict) else None
    )
    if not isinstance(criterion, dict):
        return "EXACT", False
    raw = criterion.get("match_type", criterion.get("matchType", 0))
    try:
        kind = match_type_of(raw)
    except ValueError as exc:
        loc = ("criteria", TRAJECTORY_METRIC, "match_type")
        raise SpecError.one(config, line_of(lines, loc), format_loc(loc), str(exc)) from None
    return kind, bool(criterion.get("ignore_args", criterion.get("ignoreArgs", False)))


def import_adk(
    path: Path,
    domain: Domain,
    match_type: MatchType | None = None,
    rubrics: RubricFolder | None = None,
) -> list[Task]:
    """The tasks of an ADK eval set file (judged on the `rubrics` folder's rubrics when
    given); SpecError naming every problem."""
    data, lines = read_document(path)
    kind, ignore_args = config_of(path)
    kind = match_type or kind
    cases, problems = _cases(path, data, lines)
    tasks: list[Task] = []
    ids: dict[str, Loc] = {}
    for prefix, case in cases:
        found = Found()
        task = _task(case, domain, kind, ignore_args, found, path, rubrics)
        if task is not None and task.id in ids:
            found.add(("eval_id",), f"task id {task.id!r} is taken by {format_loc(ids[task.id])}")
        problems.extend(located(path, lines, prefix, found))
        if task is not None and not found:
            ids[task.id] = prefix
            tasks.append(task)
    if problems:
        raise SpecError(problems)
    return tasks


def _cases(path: Path, data: Any, lines: Any) -> tuple[list[tuple[Loc, EvalCase]], list[Problem]]:
    """(where, case) for every eval case of the file, in any of ADK's layouts."""
    problems: list[Problem] = []
    if isinstance(data, dict):
        try:
            evalset = EvalSet.model_validate(data)
        except ValidationError as exc:
            return [], issues_from_validation(path, exc, data, lines, ())
        return [(("eval_cases", i), c) for i, c in enumerate(evalset.eval_cases)], []
    if not isinstance(data, list) or not data or not all(isinstance(x, dict) for x in data):
        return [], [(path, 1, "", "not an ADK eval set: expected `eval_cases` or a list of turns")]
    out: list[tuple[Loc, EvalCase]] = []
    if all("data" in item for item in data):
        for i, item in enumerate(data):
            try:
                old = OldCase.model_validate(item)
                session = {"app_name": "", "user_id": "", **old.initial_session}
                out.append(((i,), _old_case(old.name, old.data, session)))
            except ValidationError as exc:
                problems.extend(issues_from_validation(path, exc, item, lines, (i,)))
        return out, problems
    turns = []
    for i, item in enumerate(data):
        try:
            turns.append(OldTurn.model_validate(item))
        except ValidationError as exc:
            problems.extend(issues_from_validation(path, exc, item, lines, (i,)))
    name = path.name.removesuffix(".json").removesuffix(".test")
    return ([((), _old_case(name, turns, None))] if not problems else []), problems


def _old_case(name: str, turns: list[OldTurn], session: dict[str, Any] | None) -> EvalCase:
    return EvalCase.model_validate(
        {
            "eval_id": name,
            "conversation": [t.invocation() for t in turns],
            **({"session_input": session} if session else {}),
        }
    )


def _task(
    case: EvalCase,
    domain: Domain,
    kind: MatchType,
    ignore_args: bool,
    found: Found,
    path: Path,
    rubrics: RubricFolder | None,
) -> Task | None:
    invocations = case.conversation or []
    texts = [i.user_content.text for i in invocations]
    if case.conversation_scenario is not None:
        texts = [case.conversation_scenario.starting_prompt]
    calls = [(j, k, c) for j, i in enumerate(invocations) for k, c in enumerate(i.tool_uses())]
    for j, k, call in calls:
        if call.name not in domain.tools:
            where = ("conversation", j, "intermediate_data", "tool_uses", k, "name")
            found.append((where, f"domain {domain.name!r} has no tool {call.name!r}"))
    expect: dict[str, Any] = {}
    if calls:
        expect["trajectory"] = _trajectory([c for _, _, c in calls], kind, ignore_args)
    answers = [i.final_response.text for i in invocations if i.final_response is not None]
    facts = sorted(factual_tokens(answers[-1])) if answers else []
    if facts:
        expect["answer"] = {"must_mention": facts}
    state = case.final_session_state or {}
    for key in state:
        if "." in key:
            found.append((("final_session_state", key), "a key with a dot is not a state path"))
    if state:
        expect["outcome"] = [{"path": k, "equals": v} for k, v in state.items()]
    session = case.session_input
    adk_rubrics = [*(case.rubrics or []), *(r for i in invocations for r in i.rubrics or [])]
    judged = _judged(answers, [r.text for r in adk_rubrics if r.text], rubrics)
    if judged:
        expect["judge"] = judged
    meta: dict[str, Any] = {"eval_id": case.eval_id, "match_type": kind, "file": path.name}
    meta.update({"final_responses": answers} if answers else {})
    if adk_rubrics:
        meta["rubrics"] = [r.model_dump(exclude_none=True) for r in adk_rubrics]
    if session is not None:
        meta["app_name"] = session.app_name
    if case.conversation_scenario is not None:
        meta["conversation_scenario"] = case.conversation_scenario.model_dump(exclude_none=True)
    task: dict[str, Any] = {
        "id": re.sub(r"[^A-Za-z0-9_.:/-]", "-", case.eval_id),
        "domain": domain.name,
        "prompt": texts[0] if texts else "",
        "expect": expect,
        "metadata": {"adk": meta},
    }
    if len(texts) > 1:
        task["user"] = {"turns": texts[1:]}
    if session is not None:
        task["initial_state"] = session.state
        if session.user_id:
            task["identity"] = {"user": session.user_id}
    return build_task(task, found, {"id": ("eval_id",)})


def _trajectory(calls: list[FunctionCall], kind: MatchType, ignore_args: bool) -> dict[str, Any]:
    """ADK's expected calls as a reference trajectory: its match types are proctor's order
    modes of the same name, and ADK compares arguments as whole dicts (`exact`)."""
    reference = [{"tool": c.name, "args": c.args or {}} for c in calls]
    args = "ignore" if ignore_args else "exact"
    return {"reference": {"calls": reference, "order": kind.lower(), "args": args}}


def _judged(answers: list[str], criteria: list[str], rubrics: RubricFolder | None) -> list[Any]:
    """The judge entries (none without a rubric folder): the last final response as the
    reference answer, the case's ADK rubrics as assertions."""
    entries: list[Any] = []
    if rubrics is None:
        return entries
    if answers and answers[-1].strip():
        entries.append(rubrics.entry(FINAL_RESPONSE, answers[-1]))
    if criteria:
        entries.append(rubrics.entry(ASSERTIONS, assertion_list(criteria)))
    return entries
