"""Judges: rubric graders on model or simulated judges, their cache, pairwise comparison,
and calibration against people's labels (docs/architecture.md, Judges).

Names load on first use (PEP 562): the run and the CLI import only what they use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from proctor.core.lazy import lazy_exports

_EXPORTS = {
    "Judge": "proctor.judge.judgment",
    "JudgeError": "proctor.judge.judgment",
    "JudgeView": "proctor.judge.judgment",
    "Judgment": "proctor.judge.judgment",
    "Preference": "proctor.judge.judgment",
    "ChatJudge": "proctor.judge.chat_judge",
    "ScriptedJudge": "proctor.judge.scripted_judge",
    "JudgePanel": "proctor.judge.panel",
    "JudgeCache": "proctor.judge.cache",
    "CalibrationPolicy": "proctor.judge.calibration_records",
    "load_judge": "proctor.judge.judge_refs",
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
    from proctor.judge.cache import JudgeCache
    from proctor.judge.calibration_records import CalibrationPolicy
    from proctor.judge.chat_judge import ChatJudge
    from proctor.judge.judge_refs import load_judge
    from proctor.judge.judgment import Judge, JudgeError, JudgeView, Judgment, Preference
    from proctor.judge.panel import JudgePanel
    from proctor.judge.scripted_judge import ScriptedJudge
