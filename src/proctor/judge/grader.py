"""The judge grader: a trial's rubrics, judged, as checks of kind `judge`.

One check per rubric of the task, `judge:RUBRIC`, passed when the panel's verdict clears
the rubric's threshold, scored 0–1 along the scale. Its severity is the rubric's only
when the panel is calibrated on this rubric version (proctor.judge.calibration_records); otherwise
it
has none, so it cannot fail a trial (core/results.py: Check.blocks) nor enter a gate's
judge metrics, and its evidence says it is advisory and why. A trial with nothing to
judge (no answer, no message) fails the check without a call: no pass from silence.
Judge tokens and cost are the trial's `judge_*` metrics, apart from the agent's usage
(docs/architecture.md, Judges). A check the task's `expect.judge` entry marks `advisory`
has no severity even when calibrated: it is shown, and never decides. A JudgeError of a
check that decides is the harness's (the trial is an `error`); of an advisory check it
is counted (`judge_error`) and shown in the check's evidence, and the trial stands.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from proctor.core.credentials import scrub
from proctor.core.outcome import Outcome
from proctor.core.results import Check, Usage
from proctor.core.trace import Trace
from proctor.judge.calibration_records import CalibrationPolicy, Standing, standing
from proctor.judge.family import model_family
from proctor.judge.judgment import JudgeError
from proctor.judge.panel import JudgePanel, Verdict
from proctor.judge.prompt import PROMPT_HASH
from proctor.judge.views import judge_entries, trial_view
from proctor.tasks.models import Task
from proctor.tasks.rubrics import Rubric

if TYPE_CHECKING:
    from proctor.store.sqlite import Store


def check_name(rubric: Rubric) -> str:
    return f"judge:{rubric.id}"


def self_preference_warnings(panel: JudgePanel, agent_model: str | None) -> list[str]:
    """A warning per judge of the agent's own model family."""
    agent = model_family(agent_model)
    out = []
    for judge in panel.judges:
        family = getattr(judge, "family", None) or model_family(judge.model)
        if agent is not None and family == agent:
            out.append(
                f"self-preference: judge {judge.name} is of the agent's model family "
                f"({family}); it may favour its own family's text"
            )
    return out


@dataclass
class Judging:
    """A panel ready to judge one run's trials, with each rubric's standing."""

    panel: JudgePanel
    refs: list[str]
    policy: CalibrationPolicy
    standings: dict[str, Standing] = field(default_factory=dict)
    agent_model: str | None = None
    warnings: list[str] = field(default_factory=list)
    rubrics: dict[str, Rubric] = field(default_factory=dict)

    @classmethod
    def prepare(
        cls,
        panel: JudgePanel,
        refs: Sequence[str],
        rubrics: Iterable[Rubric],
        store: Store | None,
        policy: CalibrationPolicy,
        agent_model: str | None,
    ) -> Judging:
        """Look up each rubric's standing for this panel, once, before any trial."""
        by_version = {r.version: r for r in rubrics}
        standings = {
            version: standing(store, r.id, version, panel.fingerprint, policy)
            for version, r in by_version.items()
        }
        warnings = self_preference_warnings(panel, agent_model)
        return cls(panel, list(refs), policy, standings, agent_model, warnings, by_version)

    def manifest(self) -> dict[str, Any]:
        """What the run manifest records of its judges (never a credential of theirs)."""
        described: dict[str, Any] = scrub(
            {
                "refs": self.refs,
                **self.panel.describe(),
                "prompt_hash": PROMPT_HASH,
                "policy": self.policy.to_dict(),
                "rubrics": {
                    r.id: {"version": r.version, **self.standings[v].to_dict()}
                    for v, r in sorted(self.rubrics.items(), key=lambda item: item[1].id)
                },
                "warnings": self.warnings,
            }
        )
        return described

    def decides(self, rubric: Rubric, advisory: bool) -> bool:
        """Whether the rubric's check can fail a trial: calibrated, and not marked advisory."""
        held = self.standings.get(rubric.version)
        return held is not None and held.calibrated and not advisory

    def _check(
        self, rubric: Rubric, verdict: Verdict | None, advisory: bool, error: str = ""
    ) -> Check:
        held = self.standings.get(rubric.version) or Standing(False, "uncalibrated")
        severity = rubric.severity if self.decides(rubric, advisory) else None
        evidence: dict[str, Any] = {
            "rubric": rubric.id,
            "rubric_version": rubric.version,
            "judge": self.panel.name,
            "threshold": rubric.pass_threshold,
            "calibrated": held.calibrated,
            "standing": held.reason,
        }
        if advisory:
            evidence["advisory"] = "the task's judge entry is advisory: it never decides"
        if error:
            evidence["judge_error"] = error
            return Check(check_name(rubric), "judge", False, 0.0, None, evidence)
        if verdict is None:
            evidence["nothing_to_judge"] = f"the trial has no {rubric.describe_subject()}"
            return Check(check_name(rubric), "judge", False, 0.0, severity, evidence)
        low, high = rubric.scores[0], rubric.scores[-1]
        first = verdict.members[0]
        evidence.update(
            {
                "score": verdict.score,
                "justification": first.justification,
                "confidence": verdict.confidence,
                "agreement": verdict.agreement,
                "unanimous": verdict.unanimous,
                "members": [m.to_dict() for m in verdict.members],
            }
        )
        score = (verdict.score - low) / (high - low)
        return Check(
            check_name(rubric), "judge", verdict.passed, round(score, 6), severity, evidence
        )

    async def judge(
        self,
        task: Task,
        rubrics: Sequence[Rubric],
        trace: Trace,
        outcome: Outcome | None,
    ) -> tuple[list[Check], dict[str, float]]:
        """The judge checks of one trial and its judge metrics. Raises JudgeError when a
        check that decides has no verdict; an advisory one's error is a check saying so."""
        checks: list[Check] = []
        usage, calls, hits, errors = Usage(), 0, 0, 0
        entries = judge_entries(task, rubrics)
        for rubric in rubrics:
            entry = entries[rubric.id]
            view = trial_view(rubric, task, trace, outcome, self.agent_model, entry.reference)
            try:
                verdict = None if view is None else await self.panel.score(rubric, view)
            except JudgeError as exc:
                if self.decides(rubric, entry.advisory):
                    raise JudgeError(str(exc), usage + exc.usage) from exc
                usage, calls, errors = (
                    usage + exc.usage,
                    calls + (exc.usage.model_calls or 0),
                    errors + 1,
                )
                checks.append(self._check(rubric, None, entry.advisory, str(exc)))
                continue
            if verdict is not None:
                usage, calls, hits = (
                    usage + verdict.usage,
                    calls + verdict.calls,
                    hits + verdict.cache_hits,
                )
            checks.append(self._check(rubric, verdict, entry.advisory))
        return checks, judge_metrics(usage, calls, hits, errors)


def judge_metrics(
    usage: Usage, calls: int, hits: int | None = None, errors: int = 0
) -> dict[str, float]:
    """The judges' spending in a trial as its metrics, apart from the agent's: calls,
    answers from the judge cache (None: not counted, a judging that broke), tokens and
    cost (a figure no call reported is left out, "not measured", never written as 0;
    `judge_partial_<figure>` where some calls left it out: a lower bound), and judge
    errors when there were any."""
    figures = {
        "judge_calls": calls,
        "judge_cache_hits": hits,
        "judge_input_tokens": usage.input_tokens,
        "judge_output_tokens": usage.output_tokens,
        "judge_cost_usd": usage.cost_usd,
        "judge_error": errors or None,
        **{f"judge_partial_{name}": 1 for name in usage.partial},
    }
    return {name: float(value) for name, value in figures.items() if value is not None}
