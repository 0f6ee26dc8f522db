"""Resolve `--agent` references: `path/to/file.py:attr`, `package.module:attr`, or
`chat:MODEL[?option=value&...]` for the built-in ChatAgent."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from proctor.agents.agent import agent_callable
from proctor.env.domain_finder import load_module_from_path


class AgentNotFound(LookupError):
    pass


CHAT_PREFIX = "chat:"


def load_agent(ref: str) -> Any:
    """The agent named by `ref`; a class is instantiated without arguments."""
    if ref.startswith(CHAT_PREFIX):
        return _chat_agent(ref)
    agent = load_object(ref, "--agent", AgentNotFound)
    try:
        agent_callable(agent)
    except TypeError as exc:
        raise AgentNotFound(f"--agent {ref!r}: {exc}") from None
    return agent


def load_object(ref: str, option: str, error: type[Exception]) -> Any:
    """The attribute `FILE.py:NAME` or `MODULE:NAME` names (a class is instantiated
    without arguments); `error(one line)` when it cannot be had."""
    where, sep, attr = ref.rpartition(":")
    if not sep or not where or not attr:
        raise error(f"{option} {ref!r}: expected FILE.py:NAME or MODULE:NAME")
    try:
        if where.endswith(".py") or "/" in where:
            path = Path(where)
            if not path.is_file():
                raise error(f"{option} {ref!r}: no file {where}")
            module = load_module_from_path(path)
        else:
            module = importlib.import_module(where)
    except error:
        raise
    except (Exception, SystemExit) as exc:  # a module that calls sys.exit() as it loads
        raise error(f"{option} {ref!r}: importing failed: {type(exc).__name__}: {exc}") from exc
    if not hasattr(module, attr):
        raise error(f"{option} {ref!r}: {where} has no attribute {attr!r}")
    found = getattr(module, attr)
    if not isinstance(found, type):
        return found
    try:
        return found()
    except (Exception, SystemExit) as exc:
        raise error(
            f"{option} {ref!r}: creating {attr} failed: {type(exc).__name__}: {exc}"
        ) from exc


def chat_reference(ref: str, option: str, error: type[Exception]) -> tuple[str, dict[str, str]]:
    """(model, options) of `chat:MODEL?option=value&...`; the model name may itself hold
    colons (`chat:llama3.1:8b`); options follow a `?`."""
    model, _, query = ref[len(CHAT_PREFIX) :].partition("?")
    if not model:
        raise error(f"{option} {ref!r}: name a model, e.g. chat:gpt-4o-mini")
    return model, dict(parse_qsl(query, keep_blank_values=True))


def load_reference(
    ref: str,
    option: str,
    error: type[Exception],
    chat: Callable[[str, dict[str, str]], Any],
    kind: type,
    what: str,
) -> Any:
    """What `ref` names for `option` (`--judge`, `--user-model`): `chat(model, options)`
    for `chat:MODEL?...`, else the `FILE.py:NAME` / `MODULE:NAME` object, which must be a
    `kind` (a runtime-checkable protocol); `error(one line)` naming `what` it must be."""
    if ref.startswith(CHAT_PREFIX):
        model, options = chat_reference(ref, option, error)
        try:
            return chat(model, options)
        except ValueError as exc:
            raise error(f"{option} {ref!r}: {exc}") from None
    found = load_object(ref, option, error)
    if not isinstance(found, kind):
        raise error(f"{option} {ref!r}: not {what}")
    return found


def _chat_agent(ref: str) -> Any:
    """`chat:MODEL?temperature=0&seed=1&max_steps=8&system_prompt=@file&prices=FILE`."""
    from proctor.agents.chat import ChatAgent

    model, options = chat_reference(ref, "--agent", AgentNotFound)
    try:
        return ChatAgent.from_options(model, options)
    except ValueError as exc:
        raise AgentNotFound(f"--agent {ref!r}: {exc}") from None
