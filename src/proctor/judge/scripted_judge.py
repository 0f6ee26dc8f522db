"""ScriptedJudge: a simulated judge with known faults, for work without an API key.

Like ScriptedAgent for agents: it knows the hidden truth (a function giving the score a
careful person would give a view) and errs the way model judges are known to err, each
by a configurable amount: seeded noise, leniency (scores everything higher), length bias
(score points per doubling of the subject's length), position bias (in pairwise, points
for whichever response is shown first) and self-preference (points for subjects written
by a model of its own family). Its noise is drawn from a seed and the view's content, so
a judgment is reproducible and the cache is exact. Calibration then has something real
to catch: a lenient judge passes what people fail (docs/architecture.md, Judges).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from types import CodeType
from typing import Any

from proctor.core.jsonvalues import digest
from proctor.core.results import Usage
from proctor.judge.family import model_family
from proctor.judge.judgment import JudgeView, Judgment, Preference, Winner
from proctor.tasks.rubrics import Rubric

Truth = Callable[[Rubric, JudgeView], float]
#: The subject length (characters) at which length bias adds nothing.
REFERENCE_LENGTH = 200


def _code_identity(code: CodeType) -> list[Any]:
    """Bytecode and constants, nested code objects (comprehensions, inner functions) by
    their own identity: their repr holds a memory address, which differs every process."""
    consts = [_code_identity(c) if isinstance(c, CodeType) else repr(c) for c in code.co_consts]
    return [code.co_code.hex(), consts, list(code.co_names)]


def _truth_identity(truth: Truth) -> dict[str, Any]:
    """The truth function by name and by code (its bytecode, constants and defaults), so
    an edited truth is another judge. The name is its qualified name without its module:
    a file loaded by path gets a module name per checkout, and a calibration made in one
    process must count in the next (judge.calibration_records.standing)."""
    code = getattr(truth, "__code__", None)
    defaults = getattr(truth, "__defaults__", None)
    return {
        "name": getattr(truth, "__qualname__", type(truth).__name__),
        "code": None if code is None else digest([_code_identity(code), repr(defaults)]),
    }


class ScriptedJudge:
    """`truth(rubric, view)` is the score a careful person would give; the judge reports
    it with noise (standard deviation `noise`, in score points) and biases."""

    def __init__(
        self,
        truth: Truth,
        *,
        name: str = "scripted-judge",
        model: str = "scripted-judge",
        family: str | None = None,
        noise: float = 0.3,
        leniency: float = 0.0,
        length_bias: float = 0.0,
        position_bias: float = 0.0,
        self_preference: float = 0.0,
        tie_margin: float = 0.3,
        seed: int = 0,
        usd_per_1m_input: float = 0.15,
        usd_per_1m_output: float = 0.6,
    ) -> None:
        self.truth = truth
        self.name = name
        self.model = model
        self.family = family or model_family(model)
        self.noise = noise
        self.leniency = leniency
        self.length_bias = length_bias
        self.position_bias = position_bias
        self.self_preference = self_preference
        self.tie_margin = tie_margin
        self.seed = seed
        self.prices = (usd_per_1m_input, usd_per_1m_output)

    @property
    def settings(self) -> dict[str, Any]:
        """Every parameter: the judge's identity (two judges differing in any one of them,
        the hidden truth's code included, are two judges)."""
        return {
            "model": self.model,
            "family": self.family,
            "noise": self.noise,
            "leniency": self.leniency,
            "length_bias": self.length_bias,
            "position_bias": self.position_bias,
            "self_preference": self.self_preference,
            "tie_margin": self.tie_margin,
            "seed": self.seed,
            "truth": _truth_identity(self.truth),
            "usd_per_1m": list(self.prices),
        }

    @property
    def identity(self) -> dict[str, Any]:
        return {"kind": "scripted", **self.settings}

    @property
    def fingerprint(self) -> str:
        return digest(self.identity)

    def _latent(self, rubric: Rubric, view: JudgeView, salt: str) -> float:
        """The score the judge believes, before rounding: truth, biases and noise."""
        rng = random.Random(f"{self.seed}:{salt}:{view.key}")
        value = self.truth(rubric, view) + self.leniency
        length = max(len(view.text), 1)
        value += self.length_bias * math.log2(length / REFERENCE_LENGTH)
        if self.family is not None and model_family(view.agent_model) == self.family:
            value += self.self_preference
        return value + rng.gauss(0.0, self.noise)

    def _usage(self, *views: JudgeView) -> Usage:
        tokens_in = sum(len(str(v.to_dict())) for v in views) // 4 + 300
        tokens_out = 60
        cost = (tokens_in * self.prices[0] + tokens_out * self.prices[1]) / 1_000_000
        return Usage(tokens_in, tokens_out, cost, 1)

    async def score(self, rubric: Rubric, view: JudgeView) -> Judgment:
        latent = self._latent(rubric, view, rubric.version)
        scores = rubric.scores
        score = min(scores, key=lambda s: (abs(s - latent), s))
        margin = abs(latent - (rubric.pass_threshold - 0.5))
        confidence = round(min(1.0, margin), 3)
        verdict = "meets" if rubric.passes(score) else "falls short of"
        why = f"Simulated reading: the subject {verdict} the bar ({latent:.2f} on the scale)."
        return Judgment(score, why, confidence, self._usage(view), 1)

    async def prefer(self, rubric: Rubric, first: JudgeView, second: JudgeView) -> Preference:
        a = self._latent(rubric, first, "pair1") + self.position_bias
        b = self._latent(rubric, second, "pair2")
        winner: Winner = "tie" if abs(a - b) < self.tie_margin else "1" if a > b else "2"
        why = f"Simulated comparison: response 1 at {a:.2f}, response 2 at {b:.2f}."
        return Preference(winner, why, round(min(1.0, abs(a - b)), 3), self._usage(first, second))
