"""Pairwise: does the candidate write better than the baseline, on each rubric task?

For trial i of a task in both runs, the judge sees the two subjects twice, once in each
order (the order of asking drawn from a seed), and says which is better or that neither
is. A preference that follows the position rather than the text (it flips when the order
flips) is a tie. From the pairs:

- the candidate's win rate, (wins + ties/2) / pairs, with the task-clustered interval the
  success rate has (`stats.rates.bounded_mean_interval`: pairs within a task are not
  independent);
- the position-consistency rate: the share of pairs whose two orders agree;
- length control: the correlation of the preference (+1 candidate, 0 tie, −1 baseline)
  with the length difference (candidate − baseline, characters), its p-value (Fisher's
  z), and the win rate at equal length (the intercept of a least-squares line). When the
  correlation is clear (p < 0.05, |r| ≥ 0.3) the report says length explains the
  preference (docs/architecture.md, Judges).
"""

from __future__ import annotations

import asyncio
import math
import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from proctor.judge.judgment import JudgeView
from proctor.judge.panel import JudgePanel
from proctor.stats.rates import bounded_mean_interval
from proctor.tasks.rubrics import Rubric

#: (task id, rubric id) → the views of that task's trials for that rubric, by trial.
Views = Mapping[tuple[str, str], Sequence[JudgeView | None]]


def _correlation(xs: Sequence[float], ys: Sequence[float]) -> tuple[float | None, float | None]:
    """Pearson's r and its two-sided p-value (Fisher's z, normal approximation)."""
    n = len(xs)
    if n < 4:
        return None, None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx == 0 or syy == 0:
        return None, None
    r = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / math.sqrt(sxx * syy)
    r = max(-0.999999, min(0.999999, r))
    z = math.atanh(r) * math.sqrt(n - 3)
    return r, math.erfc(abs(z) / math.sqrt(2))


def _intercept(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """The least-squares line's value at x = 0 (None without spread in x)."""
    n = len(xs)
    if n < 2:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    return my - slope * mx


async def _pair(
    panel: JudgePanel, rubric: Rubric, base: JudgeView, cand: JudgeView, rng: random.Random
) -> dict[str, Any]:
    """Both orders of one pair; the candidate's outcome (+1, 0, −1) and whether the
    orders agreed."""
    orders = [("base", "cand"), ("cand", "base")]
    rng.shuffle(orders)
    views = {"base": base, "cand": cand}
    picks: dict[tuple[str, str], str] = {}
    calls = 0
    for first, second in orders:
        winner, _, new = await panel.prefer(rubric, views[first], views[second])
        calls += new
        picks[(first, second)] = {"1": first, "2": second}.get(winner, "tie")
    a, b = picks[("base", "cand")], picks[("cand", "base")]
    outcome = a if a == b else "tie"
    return {
        "consistent": a == b,
        "preference": {"cand": 1, "base": -1, "tie": 0}[outcome],
        "length_difference": len(cand.text) - len(base.text),
        "asked_first": "-".join(orders[0]),
        "calls": calls,
    }


async def compare_pairwise(
    panel: JudgePanel,
    rubrics: Mapping[str, Sequence[Rubric]],
    base: Views,
    cand: Views,
    *,
    seed: int = 0,
) -> dict[str, Any]:
    """The pairwise report of `cand` against `base` on the tasks both have with rubrics."""
    jobs, keys = [], []
    skipped = 0
    for task_id in sorted(rubrics):
        for rubric in rubrics[task_id]:
            key = (task_id, rubric.id)
            for i, (a, b) in enumerate(zip(base.get(key, ()), cand.get(key, ()), strict=False)):
                if a is None or b is None:
                    skipped += 1
                    continue
                rng = random.Random(f"{seed}:{task_id}:{rubric.id}:{i}")
                jobs.append(_pair(panel, rubric, a, b, rng))
                keys.append((task_id, rubric.id))
    pairs = await asyncio.gather(*jobs)
    per_task: dict[str, list[float]] = defaultdict(list)
    for (task_id, _), pair in zip(keys, pairs, strict=True):
        per_task[task_id].append((pair["preference"] + 1) / 2)
    n = len(pairs)
    wins = sum(p["preference"] > 0 for p in pairs)
    losses = sum(p["preference"] < 0 for p in pairs)
    means = [sum(v) / len(v) for v in per_task.values()]
    spread = bounded_mean_interval(means, [len(v) for v in per_task.values()])
    xs = [float(p["length_difference"]) for p in pairs]
    ys = [float(p["preference"]) for p in pairs]
    r, p_value = _correlation(xs, ys)
    at_equal = _intercept(xs, ys)
    explains = r is not None and p_value is not None and p_value < 0.05 and abs(r) >= 0.3
    return {
        "judge": panel.name,
        "pairs": n,
        "tasks": len(per_task),
        "skipped_pairs": skipped,
        "candidate_wins": wins,
        "baseline_wins": losses,
        "ties": n - wins - losses,
        "win_rate": (wins + (n - wins - losses) / 2) / n if n else None,
        "win_rate_ci": [spread.low, spread.high] if n else None,
        "position_consistency": sum(p["consistent"] for p in pairs) / n if n else None,
        "length": {
            "correlation": r,
            "p_value": p_value,
            "win_rate_at_equal_length": None
            if at_equal is None
            else max(0.0, min(1.0, (at_equal + 1) / 2)),
            "explains_preference": explains,
        },
        "judge_calls": sum(p["calls"] for p in pairs),
        "per_task": {task_id: sum(v) / len(v) for task_id, v in sorted(per_task.items())},
    }
