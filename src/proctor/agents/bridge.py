"""The task's tools as a model API or an agent framework sees them, answered as text.

Model APIs and frameworks restrict tool names (OpenAI: `^[a-zA-Z0-9_-]{1,64}$`;
smolagents: a Python identifier) while domains name tools `orders.get`. Every adapter
offers a tool under its `api_name` and calls the gateway under its proctor name, so the
trace and the graders only ever see the domain's names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from proctor.env.gateway import ToolResult
from proctor.env.toolbox import SyncToolbox, Toolbox, ToolboxBase

#: The `kind` of the tool that asks the task's simulated user instead of calling the domain.
USER = "user"
ASK_USER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"question": {"type": "string", "description": "What to ask the user."}},
    "required": ["question"],
}


@dataclass(frozen=True, slots=True)
class BridgedTool:
    name: str
    api_name: str
    description: str
    parameters: dict[str, Any]
    kind: str = "read"

    def openai_schema(self) -> dict[str, Any]:
        """The chat-completions `tools` entry."""
        return {
            "type": "function",
            "function": {
                "name": self.api_name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    async def invoke(self, toolbox: Toolbox, raw: str | Mapping[str, Any] | None) -> str:
        """Call with a model's arguments (JSON text or a mapping); the answer as text.

        Malformed arguments are the agent's mistake: the call still goes to the gateway,
        which records it and answers `invalid_arguments`, and the model reads why.
        """
        args, problem = parse_arguments(raw)
        if self.kind == USER:
            question = _question(args)
            return _no_question(toolbox) if question is None else await toolbox.ask_user(question)
        return _with_problem(result_text(await toolbox.call(self.name, args)), problem)

    def invoke_sync(self, toolbox: SyncToolbox, raw: str | Mapping[str, Any] | None) -> str:
        """`invoke` for synchronous frameworks."""
        args, problem = parse_arguments(raw)
        if self.kind == USER:
            question = _question(args)
            return _no_question(toolbox) if question is None else toolbox.ask_user(question)
        return _with_problem(result_text(toolbox.call(self.name, args)), problem)


def _api_name(name: str) -> str:
    cleaned = re.sub(r"\W", "_", name, flags=re.ASCII).strip("_") or "tool"
    return ("t_" + cleaned if cleaned[0].isdigit() else cleaned)[:60]


def bridge_tools(specs: Sequence[Mapping[str, Any]], *, ask_user: bool = True) -> list[BridgedTool]:
    """The tools of `AgentInput.tools` under unique identifier-safe names, and (unless the
    domain has one) an `ask_user` tool through which the agent talks to the task's user."""
    taken: set[str] = set()
    out = []
    for spec in specs:
        base = api = _api_name(spec["name"])
        n = 2
        while api in taken:
            api, n = f"{base}_{n}", n + 1
        taken.add(api)
        params = dict(spec.get("parameters") or {"type": "object", "properties": {}})
        out.append(
            BridgedTool(
                spec["name"], api, spec.get("description") or "", params, spec.get("kind", "read")
            )
        )
    if ask_user and "ask_user" not in taken:
        description = "Ask the user a question (e.g. to confirm an action) and get the reply."
        out.append(BridgedTool("ask_user", "ask_user", description, ASK_USER_SCHEMA, USER))
    return out


def find_tool(tools: Sequence[BridgedTool], api_name: str) -> BridgedTool:
    """The tool offered as `api_name`; an unknown name is passed on to the gateway, which
    records the call and answers `unknown_tool`."""
    for tool in tools:
        if tool.api_name == api_name:
            return tool
    return BridgedTool(api_name, api_name, "", {})


def result_text(result: ToolResult) -> str:
    """What the model reads back: the value as JSON, or the error with its code."""
    if result.ok:
        if isinstance(result.value, str):
            return result.value
        return json.dumps(result.value, default=str, ensure_ascii=False)
    text = f"error ({result.code}): {result.error}"
    if result.retry_after_s is not None:
        text += f" (retry after {result.retry_after_s} s)"
    return text


def parse_arguments(raw: str | Mapping[str, Any] | None) -> tuple[Any, str | None]:
    """(arguments, problem): a model's JSON argument text, or the text itself with the
    reason it is not a JSON object."""
    if raw is None or raw == "":
        return {}, None
    if isinstance(raw, Mapping):
        return dict(raw), None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return raw, f"arguments are not valid JSON ({exc.msg} at char {exc.pos})"
    except RecursionError:  # a model's (or a hostile endpoint's) 100,000 nested brackets
        return raw, "arguments nest deeper than JSON is read"
    if not isinstance(value, dict):
        return raw, f"arguments must be a JSON object, got {type(value).__name__}"
    return value, None


def _question(args: Any) -> str | None:
    question = args.get("question") if isinstance(args, dict) else None
    return question if isinstance(question, str) and question.strip() else None


def _no_question(toolbox: ToolboxBase) -> str:
    toolbox.note("ask_user called without a question")
    return "error (invalid_arguments): ask_user needs a `question` string"


def _with_problem(text: str, problem: str | None) -> str:
    return text if problem is None else f"{text}; {problem}: send a JSON object"
