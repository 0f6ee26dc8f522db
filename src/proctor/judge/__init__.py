"""Judges: rubric graders on model or simulated judges, their cache, pairwise comparison,
and calibration against people's labels (docs/architecture.md, Judges).

Names load on first use (PEP 562): the run and the CLI import only what they use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from proctor.core.lazy import lazy_exports

_EXPORTS = {
    "Judge": "proctor.judge.base",
    "JudgeError": "proctor.judge.base",
    "JudgeView": "proctor.judge.base",
    "Judgment": "proctor.judge.base",
    "Preference": "proctor.judge.base",
    "ChatJudge": "proctor.judge.chat",
    "ScriptedJudge": "proctor.judge.scripted",
    "JudgePanel": "proctor.judge.panel",
    "JudgeCache": "proctor.judge.cache",
    "CalibrationPolicy": "proctor.judge.records",
    "load_judge": "proctor.judge.loading",
}
__all__ = [
    "CalibrationPolicy",
    "ChatJudge",
    "Judge",
    "JudgeCache",
    "JudgeError",
    "JudgePanel",
    "JudgeView",
    "Judgment",
    "Preference",
    "ScriptedJudge",
    "load_judge",
]
__getattr__ = lazy_exports(globals(), _EXPORTS, {})


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from proctor.judge.base import Judge, JudgeError, JudgeView, Judgment, Preference
    from proctor.judge.cache import JudgeCache
    from proctor.judge.chat import ChatJudge
    from proctor.judge.loading import load_judge
    from proctor.judge.panel import JudgePanel
    from proctor.judge.records import CalibrationPolicy
    from proctor.judge.scripted import ScriptedJudge
