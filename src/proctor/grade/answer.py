"""Answer graders: what the agent told the user, and whether it made anything up.

How answers are read (whole-token mentions, grounding) is proctor.grade.language; how a
term matches its spellings and inflections is proctor.grade.terms; the task's regexes run
on RE2 (proctor.tasks.regex), in time linear in the answer.
"""

from __future__ import annotations

from typing import Any

from proctor.core.results import Check
from proctor.grade.claims import Undecided
from proctor.grade.context import GradeContext
from proctor.grade.grounding import grounding
from proctor.grade.language import mention, mentions
from proctor.grade.reading import undecided_evidence
from proctor.grade.registry import grader
from proctor.tasks.regex import search


@grader("answer", applies=lambda task: task.expect.answer is not None)
def grade_answer(ctx: GradeContext) -> list[Check]:
    spec = ctx.task.expect.answer
    if spec is None:
        return []
    answer = ctx.answer
    checks = []
    for item in spec.must_mention:
        options = [item] if isinstance(item, str) else item
        found = [o for o in options if mentions(answer, o)]
        label = item if isinstance(item, str) else "|".join(item)
        checks.append(
            Check(
                f"mentions:{label}",
                "answer",
                bool(found),
                evidence={"any_of": options, "found": found},
            )
        )
    for term in spec.must_not_mention:
        said = mention(answer, term, inflect=True)  # "refund" is in "refunded" too
        checks.append(
            Check(
                f"not_mentions:{term}",
                "answer",
                said is None,
                evidence={"term": term, "found": said},
            )
        )
    for pattern in spec.matches:
        hit = search(pattern, answer)
        checks.append(
            Check(
                f"matches:{pattern}",
                "answer",
                hit is not None,
                evidence={"pattern": pattern, "match": hit},
            )
        )
    for pattern in spec.not_matches:
        hit = search(pattern, answer)
        checks.append(
            Check(
                f"not_matches:{pattern}",
                "answer",
                hit is None,
                evidence={"pattern": pattern, "match": hit},
            )
        )
    if spec.grounded:
        checks.append(_grounded(ctx))
    return checks


def _grounded(ctx: GradeContext) -> Check:
    """Every fact from a source; undecided when none is missing but the answer wrote a
    number its language cannot read (grade.grounding)."""
    sources = [ctx.task.prompt, *ctx.tool_texts]
    missing, unreadable = grounding(ctx.answer, sources, ctx.task.language)
    evidence: dict[str, Any] = {"ungrounded": missing, "sources": len(sources)}
    if unreadable and not missing:
        why = f"numbers written as {', '.join(unreadable[:3])} cannot be read in this language"
        evidence.update(undecided_evidence([Undecided(ctx.answer.strip()[:200], why)]))
    return Check("grounded", "answer", not missing and not unreadable, evidence=evidence)
