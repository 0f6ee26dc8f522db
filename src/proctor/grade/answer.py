"""Answer graders: what the agent told the user, and whether it made anything up; and
whether it answered at all (an agent stopped by its step limit did not: `max_steps_reached`).

How answers are read (whole-token mentions, grounding) is proctor.grade.language; how a
term matches its spellings and inflections is proctor.grade.terms; the task's regexes run
on RE2 (proctor.tasks.regex), in time linear in the answer.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from proctor.core.memo import per_object
from proctor.core.results import Check
from proctor.core.trace import STOPPED_KEY
from proctor.grade.claims import Undecided
from proctor.grade.context import GradeContext
from proctor.grade.grounding import trial_grounding, unreadable_numbers
from proctor.grade.language import mention, mentions
from proctor.grade.reading import undecided_evidence, unread_mention
from proctor.grade.registry import grader
from proctor.tasks.models import AnswerExpect
from proctor.tasks.regex import search


@grader("answer", applies=lambda task: task.expect.answer is not None)
def grade_answer(ctx: GradeContext) -> list[Check]:
    spec = ctx.task.expect.answer
    if spec is None:
        return []
    answer = ctx.answer
    checks = []
    language = ctx.task.language
    for name, options, synonyms in _mention_items(spec):
        found, negated = _said(answer, synonyms, language)
        evidence: dict[str, Any] = {"any_of": list(options), "found": list(found)}
        if found and len(negated) == len(found):  # no mention can be read as said
            evidence.update(undecided_evidence(negated))
        # one synonym said plainly is the mention, whatever another says under a negation
        asserted = len(negated) < len(found)
        checks.append(Check(name, "answer", asserted, evidence=evidence))
    for term in spec.must_not_mention:
        said = mention(answer, term, inflect=True)  # "refund" is in "refunded" too
        evidence = {"term": term, "found": said}
        unread = unread_mention(answer, term, language, inflect=True) if said else None
        if unread is not None:
            evidence.update(undecided_evidence([unread]))
        checks.append(Check(f"not_mentions:{term}", "answer", said is None, evidence=evidence))
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


@per_object
def _mention_items(spec: AnswerExpect) -> list[tuple[str, list[str], tuple[str, ...]]]:
    """Each `must_mention` item: its check's name and its synonyms (one for a bare term)."""
    items = []
    for item in spec.must_mention:
        options = [item] if isinstance(item, str) else item
        label = item if isinstance(item, str) else "|".join(item)
        items.append((f"mentions:{label}", options, tuple(options)))
    return items


@lru_cache(maxsize=256)
def _said(
    answer: str, synonyms: tuple[str, ...], language: str | None
) -> tuple[tuple[str, ...], tuple[Undecided, ...]]:
    """The synonyms `answer` mentions, and why each of those it says only under a negation
    cannot be read as said. Remembered like grade.reading's readings: a task's trials
    mostly give the same answer."""
    found = tuple(o for o in synonyms if mentions(answer, o))
    negated = tuple(u for o in found if (u := unread_mention(answer, o, language)) is not None)
    return found, negated


@grader("stopped")
def grade_stopped(ctx: GradeContext) -> list[Check]:
    """A trial whose agent stopped on a limit before answering (a `note` event carrying
    STOPPED_KEY, as ChatAgent writes on `max_steps`) never passes, whatever the world
    looks like: the gating check is named after the limit; no check otherwise."""
    return [
        Check(
            str(event.data[STOPPED_KEY]),
            "answer",
            False,
            evidence={"seq": event.seq, "note": event.data.get("text", "")},
        )
        for event in ctx.of_kind("note")
        if event.data.get(STOPPED_KEY)
    ][:1]


def _grounded(ctx: GradeContext) -> Check:
    """Every fact from a source; undecided when none is missing but the answer wrote a
    number its language cannot read (grade.grounding)."""
    missing, unreadable, sources = trial_grounding(ctx)
    evidence: dict[str, Any] = {"ungrounded": missing, "sources": sources}
    if unreadable and not missing:
        evidence.update(undecided_evidence([unreadable_numbers(ctx.answer, unreadable)]))
    return Check("grounded", "answer", not missing and not unreadable, evidence=evidence)
