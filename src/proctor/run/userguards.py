"""Guards on a model user's reply, before the agent sees it.

The field's user simulators fail in known ways (docs/architecture.md, Simulated users):
they swap roles ("as an AI…"), leak their instructions or reasoning, start the
conversation over, invent identifiers, say a fact before the agent asked for it, rescue
the agent (correct it, name its tools), or stop before their goals could be done. Each
guard is a deterministic reading of the reply against the scenario and the conversation
so far; a reply that breaks one is regenerated (proctor.run.simulator), never delivered.
"""

from __future__ import annotations

import functools
import inspect
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from proctor.core.jsonvalues import digest
from proctor.grade.language import identifiers, mentions
from proctor.tasks.models import UserFact, UserSpec

#: Stop reasons a model user may give; `max_turns` is the harness's, never the model's.
STOP_REASONS = ("done", "declined")
#: Consecutive words of the instructions that, found in a reply, are a leak (or a restart).
SHINGLE = 6
#: The answer format's stand-in for the message in the prompt: a model that copies the
#: format's example instead of writing (a base model does) says this, never a person.
PLACEHOLDER = "<your next message>"

_ROLE_SWAP = re.compile(
    r"\bas an? (ai|assistant|language model|chatbot)\b|\bi('m| am) (an? )?(ai|assistant|"
    r"language model|chatbot|virtual agent)\b|\bhow (can|may) i (help|assist) you\b"
    r"|\bi('m| am) here to help\b",
    re.IGNORECASE,
)
_REASONING = re.compile(
    r"</?think>|\b(my|the) (goals?|sub-?goals?|persona|scenario|instructions|system prompt|"
    r"stance)\b|\bstop_reason\b|\bdisclos(e|ed|ure) (policy|rule)\b|\bas the (simulated )?user\b"
    r"|\bi('m| am) (playing|simulating|role-?playing)\b|\bsimulated user\b",
    re.IGNORECASE,
)
_RESTART = re.compile(
    r"\b(start (over|again)|new conversation|from the (top|beginning))\b"
    r"|^\W*(hi|hello|hey|good (morning|afternoon|evening))\b.*\b(i need|i want|i'd like|"
    r"can you|could you)\b",
    re.IGNORECASE,
)
_RESCUE = re.compile(
    r"\b(you (should|need to|have to|must|forgot|missed)|try (calling|using|to call)"
    r"|instead,? (call|use)|that('s| is) (wrong|incorrect|not right)|the (correct|right) "
    r"(tool|function|way|step)|(call|use) the \w+ (tool|function)|tool call|function call)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[a-z0-9]+(?:[-'][a-z0-9]+)*")
#: Tokens with a digit and a letter that name no record: ordinals (the 24th), times (11am).
_NOT_AN_ID = re.compile(r"\d+(st|nd|rd|th|am|pm)", re.IGNORECASE)
#: A tool name a user could not say by chance (`book_room`, `orders.cancel`; not `think`).
_NAMED = re.compile(r"[^A-Za-z]")


@dataclass(frozen=True, slots=True)
class Draft:
    """A model user's reply as parsed: the JSON fields it must answer with."""

    message: str
    stop: bool
    stop_reason: str | None
    disclosed: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Conversation:
    """What the guards read: the scenario, the opening, and the turns so far."""

    spec: UserSpec
    opening: str
    #: The prompt's own rules: a reply that repeats them leaks (goals and persona are the
    #: user's to say in their words, and so are sometimes said in the same words).
    rules: str
    tools: tuple[str, ...]
    agent: tuple[str, ...]
    user: tuple[str, ...]


def rejections(draft: Draft, conv: Conversation) -> list[str]:
    """Why `draft` may not be delivered (empty: it may), one line per broken guard."""
    text = draft.message
    found = [
        *_role_swap(text),
        *_leak(text, conv),
        *_restart(text, conv),
        *_invented(text, conv),
        *_early_disclosure(draft, conv),
        *_rescue(text, conv),
        *_early_stop(draft, conv),
    ]
    if not text.strip() and not draft.stop:
        found.append("empty: an empty message without stopping")
    return found


def _role_swap(text: str) -> Iterable[str]:
    found = _ROLE_SWAP.search(text)
    if found:
        yield f"role_swap: speaks as the assistant ({found.group(0)!r})"


def _leak(text: str, conv: Conversation) -> Iterable[str]:
    found = _REASONING.search(text)
    if found:
        yield f"leak: reasoning or scenario talk ({found.group(0)!r})"
    if " ".join(_words(PLACEHOLDER)) in " ".join(_words(text)):
        yield f"leak: repeats the answer format's placeholder ({PLACEHOLDER!r})"
    copied = _shared_words(text, conv.rules)
    heading = next((h for h in conv.rules.splitlines() if h and h.lower() in text.lower()), None)
    if copied or heading:
        yield f"leak: repeats its instructions ({copied or heading!r})"


def _restart(text: str, conv: Conversation) -> Iterable[str]:
    if not conv.user and not conv.agent:
        return
    found = _RESTART.search(text)
    if found:
        yield f"restart: starts the conversation over ({found.group(0)!r})"
    elif _words(text) == _words(conv.opening) or _repeated_share(conv.opening, text) >= 0.5:
        yield "restart: says its opening again"


def _invented(text: str, conv: Conversation) -> Iterable[str]:
    spec = conv.spec
    known = {
        i.casefold()
        for source in (
            conv.opening,
            spec.persona or "",
            *(g.goal for g in spec.goals),
            *(f.value for f in spec.facts),
            *conv.agent,
            *conv.user,
        )
        for i in identifiers(source)
    }
    new = sorted(
        i for i in identifiers(text) if i.casefold() not in known and not _NOT_AN_ID.fullmatch(i)
    )
    if new:
        yield f"invented_id: {', '.join(new)} is in none of its facts or the conversation"


def _early_disclosure(draft: Draft, conv: Conversation) -> Iterable[str]:
    said = (conv.opening, *conv.user)
    for fact in conv.spec.facts:
        if fact.disclose == "upfront" or any(mentions(s, fact.value) for s in said):
            continue
        asked = any(mentions(a, term, True) for a in conv.agent for term in _asks(fact))
        if asked:
            continue
        if mentions(draft.message, fact.value) or fact.name in draft.disclosed:
            yield f"early_disclosure: says {fact.name!r} before the agent asked for it"


def _asks(fact: UserFact) -> Sequence[str]:
    """The words that count as the agent asking for `fact`."""
    return fact.asked_by or [fact.name]


def _rescue(text: str, conv: Conversation) -> Iterable[str]:
    if conv.spec.helpful:
        return
    found = _RESCUE.search(text)
    tool = next((t for t in conv.tools if _NAMED.search(t) and mentions(text, t)), None)
    if found or tool:
        yield f"rescue: corrects or directs the agent ({(found and found.group(0)) or tool!r})"


def _early_stop(draft: Draft, conv: Conversation) -> Iterable[str]:
    if not draft.stop:
        return
    if draft.stop_reason not in STOP_REASONS:
        yield f"early_stop: stop_reason {draft.stop_reason!r} (expected done or declined)"
        return
    if draft.stop_reason == "declined":
        return
    goals = conv.spec.goals
    unmet = [
        g.goal
        for g in goals
        if g.done_when is not None and not any(re.search(g.done_when, a, re.I) for a in conv.agent)
    ]
    if unmet:
        yield f"early_stop: done before the agent said {unmet[0]!r} was done"
    elif len(conv.agent) < len(goals):
        yield f"early_stop: done after {len(conv.agent)} agent turns for {len(goals)} goals"


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = _words(text)
    return {tuple(words[i : i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}


def _repeated_share(source: str, text: str) -> float:
    """The share of `source`'s runs of SHINGLE words that `text` repeats (0 when short)."""
    mine = _shingles(source)
    return len(mine & _shingles(text)) / len(mine) if mine else 0.0


def _shared_words(text: str, source: str) -> str | None:
    """The first run of SHINGLE words of `source` that `text` repeats, if any."""
    words = _words(text)
    runs = {tuple(words[i : i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}
    mine = _words(source)
    for i in range(len(mine) - SHINGLE + 1):
        if tuple(mine[i : i + SHINGLE]) in runs:
            return " ".join(mine[i : i + SHINGLE])
    return None


@functools.cache
def guard_version() -> str:
    """The guards' version for the manifest (this module's source: a changed guard is a
    different simulator), read when a model user is first used, not at import."""
    return digest(inspect.getsource(sys.modules[__name__]), 12)
