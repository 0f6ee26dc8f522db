"""Model families, for the self-preference warning.

A judge tends to prefer text written by a model of its own family (the sources name it
among the known judge biases). proctor cannot remove that bias, but it can say when a
run is exposed to it: the judge's family equals the agent's (docs/architecture.md,
Judges).
"""

from __future__ import annotations

import re

#: Leading words of model names, by the family (maker) they belong to.
_FAMILIES = {
    "openai": ("gpt", "o1", "o3", "o4", "chatgpt", "davinci"),
    "anthropic": ("claude",),
    "google": ("gemini", "gemma", "palm"),
    "meta": ("llama", "meta-llama"),
    "mistral": ("mistral", "mixtral", "ministral", "codestral", "magistral"),
    "qwen": ("qwen", "qwq"),
    "deepseek": ("deepseek",),
    "xai": ("grok",),
    "microsoft": ("phi",),
    "cohere": ("command", "aya"),
}


def model_family(model: str | None) -> str | None:
    """`gpt-4.1-mini` → openai, `anthropic/claude-3-5-haiku` → anthropic; an unknown name
    is its own first word (`simulated-analyst` → simulated); None for no model."""
    if not model:
        return None
    name = model.lower().rsplit("/", 1)[-1]
    provider, sep, rest = name.partition(":")
    if sep and provider in _FAMILIES:  # `openai:gpt-4o`, as pydantic-ai writes models
        name = rest
    word = re.split(r"[-_.:\s]", name, maxsplit=1)[0]
    for family, prefixes in _FAMILIES.items():
        if any(name.startswith(p) for p in prefixes if "-" in p) or word in prefixes:
            return family
        if any(re.fullmatch(rf"{p}\d*[a-z]?", word) for p in prefixes):
            return family
    return word or None
