"""Answer graders: what the agent told the user, and whether it made anything up.

Mentions are matched case-insensitively on whole tokens, so `41` is not found in `410`
or `41.5`. `grounded` extracts every number and identifier from the answer and requires
it to appear in a tool result or in the prompt (what the user said is not invented).
"""

from __future__ import annotations

import re
from functools import lru_cache

from proctor.core.results import Check
from proctor.grade.context import GradeContext
from proctor.grade.registry import grader

_TOKEN = re.compile(r"[A-Za-z0-9]+(?:[-_/.:][A-Za-z0-9]+|,\d{3}(?![\d]))*")
_DIGIT = re.compile(r"[0-9]")
_NUMBER = re.compile(r"^\d{1,3}(?:,\d{3})+(?:\.\d+)?$|^\d+(?:\.\d+)?$")


@lru_cache(maxsize=1024)
def mention_pattern(term: str) -> re.Pattern[str]:
    body = r"\s+".join(re.escape(part) for part in term.split())
    left = r"(?<![0-9A-Za-z])(?<!\d\.)" if term[:1].isalnum() else ""
    right = r"(?![0-9A-Za-z])(?!\.\d)" if term[-1:].isalnum() else ""
    return re.compile(left + body + right, re.IGNORECASE)


def mentions(text: str, term: str) -> bool:
    """Is `term` in `text` as whole words, ignoring case and spacing?"""
    return bool(term.strip()) and mention_pattern(term.strip()).search(text) is not None


def factual_tokens(text: str) -> set[str]:
    """Numbers and identifiers (tokens with a digit): the claims an answer can invent."""
    return set(filter(_DIGIT.search, _TOKEN.findall(text)))


def _number_value(token: str) -> float | None:
    """The value of a plain number (`41`, `41.0`, `1,234.5`), else None."""
    if _NUMBER.match(token):
        return float(token.replace(",", ""))
    return None


def ungrounded(answer: str, sources: list[str]) -> list[str]:
    """Tokens of the answer found in no source; numbers compare by value (41 == 41.0)."""
    known: set[str] = set()
    for source in sources:
        known |= {t.casefold() for t in factual_tokens(source)}
    values = {v for v in map(_number_value, known) if v is not None}
    missing = []
    for token in sorted(factual_tokens(answer)):
        value = _number_value(token)
        if token.casefold() in known or (value is not None and value in values):
            continue
        missing.append(token)
    return missing


@grader("answer")
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
        checks.append(
            Check(
                f"not_mentions:{term}",
                "answer",
                not mentions(answer, term),
                evidence={"term": term},
            )
        )
    for pattern in spec.matches:
        hit = re.search(pattern, answer)
        checks.append(
            Check(
                f"matches:{pattern}",
                "answer",
                hit is not None,
                evidence={"pattern": pattern, "match": hit.group(0) if hit else None},
            )
        )
    for pattern in spec.not_matches:
        hit = re.search(pattern, answer)
        checks.append(
            Check(
                f"not_matches:{pattern}",
                "answer",
                hit is None,
                evidence={"pattern": pattern, "match": hit.group(0) if hit else None},
            )
        )
    if spec.grounded:
        missing = ungrounded(answer, [ctx.task.prompt, *ctx.tool_texts])
        checks.append(
            Check(
                "grounded",
                "answer",
                not missing,
                evidence={"ungrounded": missing, "sources": len(ctx.tool_texts) + 1},
            )
        )
    return checks
