"""A panel of judges: one judge, or several whose verdicts combine (mean or majority).

Every member's judgment goes through the judge cache. The panel's verdict is the mean
score against the rubric's threshold (`mean`) or the majority of the members' pass/fail
verdicts (`majority`; a tie fails: no pass without a majority). Its agreement is the
share of members whose own verdict is the panel's; a split panel is routed to people
(docs/architecture.md, Judges). A member's JudgeError fails the whole verdict: a panel
missing a member is not the panel that was calibrated.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from proctor.core.jsonvalues import digest
from proctor.core.results import Usage
from proctor.judge.cache import JudgeCache, judgment_key
from proctor.judge.judgment import Judge, JudgeView, Judgment, Preference, Winner
from proctor.tasks.rubrics import Rubric

Combine = Literal["mean", "majority"]
COMBINE: tuple[Combine, ...] = ("mean", "majority")


@dataclass(frozen=True)
class Member:
    """One member's judgment as the panel used it."""

    name: str
    score: int
    passed: bool
    justification: str
    confidence: float
    cached: bool
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "judge": self.name,
            "score": self.score,
            "passed": self.passed,
            "justification": self.justification,
            "confidence": self.confidence,
            "cached": self.cached,
            **({"note": self.note} if self.note else {}),
        }


@dataclass(frozen=True)
class Verdict:
    """The panel's verdict; `usage` and `calls` count only new (uncached) judge calls."""

    score: float
    passed: bool
    confidence: float
    members: tuple[Member, ...]
    usage: Usage = field(default_factory=Usage)
    calls: int = 0
    cache_hits: int = 0

    @property
    def agreement(self) -> float:
        return sum(m.passed == self.passed for m in self.members) / len(self.members)

    @property
    def unanimous(self) -> bool:
        return len({m.passed for m in self.members}) == 1


def _member(judge: Judge) -> dict[str, Any]:
    """A member as a manifest records it: name, model, fingerprint, and what the judge
    says of itself (its identity, the model ids its provider reported) when it does."""
    identity = getattr(judge, "identity", None)
    reported = getattr(judge, "reported_models", None)
    return {
        "name": judge.name,
        "model": judge.model,
        "fingerprint": judge.fingerprint,
        **({"identity": identity} if identity is not None else {}),
        **({"reported_models": sorted(reported)} if reported else {}),
    }


class JudgePanel:
    """`JudgePanel([judge])` or several judges and a `combine` rule."""

    def __init__(
        self, judges: Sequence[Judge], combine: Combine = "mean", cache: JudgeCache | None = None
    ) -> None:
        if not judges:
            raise ValueError("a panel needs at least one judge")
        if combine not in COMBINE:
            raise ValueError(f"combine must be one of {', '.join(COMBINE)}")
        names = [j.name for j in judges]
        if len(set(names)) != len(names):
            raise ValueError(f"judges need distinct names: {', '.join(names)}")
        self.judges = list(judges)
        self.combine = combine
        self.cache = cache or JudgeCache()

    @property
    def name(self) -> str:
        names = "+".join(j.name for j in self.judges)
        return names if len(self.judges) == 1 else f"{self.combine}({names})"

    @property
    def models(self) -> list[str]:
        return [j.model for j in self.judges]

    @property
    def fingerprint(self) -> str:
        """Identifies the panel in calibration records: members, and how they combine."""
        if len(self.judges) == 1:
            return self.judges[0].fingerprint
        return digest({"combine": self.combine, "judges": [j.fingerprint for j in self.judges]})

    def describe(self) -> dict[str, Any]:
        """What a manifest or a calibration record says of the panel."""
        return {
            "name": self.name,
            "fingerprint": self.fingerprint,
            "combine": self.combine,
            "members": [_member(j) for j in self.judges],
        }

    async def _member(self, judge: Judge, rubric: Rubric, view: JudgeView) -> tuple[Judgment, bool]:
        async def compute() -> dict[str, Any]:
            return (await judge.score(rubric, view)).to_dict()

        key = judgment_key("score", rubric.version, judge.fingerprint, view.to_dict())
        value, cached = await self.cache.fetch(key, judge.name, rubric.version, compute)
        return Judgment.from_dict(value), cached

    async def score(self, rubric: Rubric, view: JudgeView) -> Verdict:
        """Every member's judgment of `view`, combined. Raises JudgeError."""
        found = await asyncio.gather(*(self._member(j, rubric, view) for j in self.judges))
        members = tuple(
            Member(
                j.name,
                g.score,
                rubric.passes(g.score),
                g.justification,
                g.confidence,
                cached,
                g.note,
            )
            for j, (g, cached) in zip(self.judges, found, strict=True)
        )
        mean = sum(m.score for m in members) / len(members)
        if self.combine == "mean":
            passed = rubric.passes(mean)
        else:
            passed = 2 * sum(m.passed for m in members) > len(members)
        new = [g for g, cached in found if not cached]
        usage = sum((g.usage for g in new), Usage())
        confidence = min(m.confidence for m in members)
        return Verdict(
            round(mean, 6),
            passed,
            confidence,
            members,
            usage,
            usage.model_calls or 0,  # none recorded: no new call
            len(found) - len(new),
        )

    async def _prefer(
        self, judge: Judge, rubric: Rubric, first: JudgeView, second: JudgeView
    ) -> tuple[Preference, bool]:
        async def compute() -> dict[str, Any]:
            return (await judge.prefer(rubric, first, second)).to_dict()

        key = judgment_key(
            "pair", rubric.version, judge.fingerprint, [first.to_dict(), second.to_dict()]
        )
        value, cached = await self.cache.fetch(key, judge.name, rubric.version, compute)
        return Preference.from_dict(value), cached

    async def prefer(
        self, rubric: Rubric, first: JudgeView, second: JudgeView
    ) -> tuple[Winner, list[Preference], int]:
        """(the majority winner, each member's preference, new calls); no majority is a tie."""
        found = await asyncio.gather(*(self._prefer(j, rubric, first, second) for j in self.judges))
        prefs = [p for p, _ in found]
        votes = {w: sum(p.winner == w for p in prefs) for w in ("1", "2")}
        winner: Winner = "tie"
        for w in ("1", "2"):
            if 2 * votes[w] > len(prefs):
                winner = "1" if w == "1" else "2"
        calls = sum(p.usage.model_calls or 0 for p, cached in found if not cached)
        return winner, prefs, calls
