"""Resolve `--judge` references: `chat:MODEL[?option=value&...]` for a model judge on any
OpenAI-compatible endpoint, or `FILE.py:NAME` / `MODULE:NAME` for a judge written in
Python (a ScriptedJudge, or any object with the Judge protocol's methods)."""

from __future__ import annotations

from collections.abc import Sequence

from proctor.agents.agent_refs import load_reference
from proctor.judge.cache import JudgeCache
from proctor.judge.judgment import Judge
from proctor.judge.panel import Combine, JudgePanel


class JudgeNotFound(LookupError):
    pass


def load_judge(ref: str) -> Judge:
    judge: Judge = load_reference(
        ref,
        "--judge",
        JudgeNotFound,
        _chat_judge,
        Judge,
        "a judge (it needs name, model, fingerprint, async score(rubric, view) and "
        "async prefer(rubric, first, second))",
    )
    return judge


def _chat_judge(model: str, options: dict[str, str]) -> Judge:
    from proctor.judge.chat_judge import ChatJudge

    return ChatJudge.from_options(model, options)


def load_panel(
    refs: Sequence[str], combine: Combine = "mean", cache: JudgeCache | None = None
) -> JudgePanel:
    """The panel of the `--judge` references (one or more)."""
    judges = [load_judge(ref) for ref in refs]
    try:
        return JudgePanel(judges, combine, cache)
    except ValueError as exc:
        raise JudgeNotFound(f"--judge: {exc}") from None
