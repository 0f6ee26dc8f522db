"""Resolve `--agent` references: `path/to/file.py:attr` or `package.module:attr`."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from proctor.agents.base import agent_callable
from proctor.env.loading import load_module_from_path


class AgentNotFound(LookupError):
    pass


def load_agent(ref: str) -> Any:
    """The agent named by `ref`; a class is instantiated without arguments."""
    where, sep, attr = ref.rpartition(":")
    if not sep or not where or not attr:
        raise AgentNotFound(f"--agent {ref!r}: expected FILE.py:NAME or MODULE:NAME")
    try:
        if where.endswith(".py") or "/" in where:
            path = Path(where)
            if not path.is_file():
                raise AgentNotFound(f"--agent {ref!r}: no file {where}")
            module = load_module_from_path(path)
        else:
            module = importlib.import_module(where)
    except AgentNotFound:
        raise
    except Exception as exc:
        raise AgentNotFound(
            f"--agent {ref!r}: importing failed: {type(exc).__name__}: {exc}"
        ) from exc
    if not hasattr(module, attr):
        raise AgentNotFound(f"--agent {ref!r}: {where} has no attribute {attr!r}")
    agent = getattr(module, attr)
    if isinstance(agent, type):
        agent = agent()
    try:
        agent_callable(agent)
    except TypeError as exc:
        raise AgentNotFound(f"--agent {ref!r}: {exc}") from None
    return agent
