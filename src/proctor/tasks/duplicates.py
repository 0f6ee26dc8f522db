"""Duplicate and near-duplicate tasks: the same test under another id.

A copied task counts twice in every rate and, split across dev and holdout, leaks the
holdout. Two tasks are compared when everything the agent starts from is equal (domain,
identity, initial state, offered tools, faults, simulated user). Prompts equal after case
and whitespace folding are duplicates (found through one dictionary: linear). Prompts at
least `NEAR` similar (difflib ratio) are near-duplicates when they also state the same
facts: the same identifiers, numbers (in digits or words), dates and times, in the same
order (`facts`). "Cancel order A-1" and "Cancel order A-2" are two tests, however alike
the words.

Near-duplicates are looked for only on request (`validate --strict`). Within a group of
up to `PAIRWISE` distinct prompts every pair is compared; a larger group is first cut
down by MinHash locality-sensitive hashing over the prompts' words (`HASHES` hashes in
`BANDS` bands of 4: two prompts sharing three quarters of their words become candidates
with probability 0.998, two thirds 0.97, one tenth 0.0016), and only the candidates are
compared. benchmarks/validate_scale.py measures both.
"""

from __future__ import annotations

import hashlib
import re
import struct
from collections import defaultdict
from collections.abc import Mapping, Sequence
from difflib import SequenceMatcher
from typing import Any

from proctor.core.documents import Problem
from proctor.core.jsonvalues import digest
from proctor.tasks.loader import LoadedTask

NEAR = 0.9
PAIRWISE = 200
HASHES, BANDS = 64, 16
_ROWS = HASHES // BANDS

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_EDGE = "\"'`.,;:!?()[]{}<>«»“”‘’"
_NUMBER_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy "
    "eighty ninety hundred thousand million billion half quarter dozen first second third "
    "fourth fifth sixth seventh eighth ninth tenth eleventh twelfth once twice"
)
_TIME_WORDS = (
    "monday tuesday wednesday thursday friday saturday sunday january february march april "
    "june july august september october november december today tomorrow yesterday tonight "
    "noon midnight morning afternoon evening weekend"
)
_FACT_WORDS = frozenset((_NUMBER_WORDS + " " + _TIME_WORDS).split())


#: A digit, a character identifiers are written with, or a capital inside a word.
_FACT_MARK = re.compile(r"[\d\-_./@:#\\]|\w[A-Z]")


def _is_fact(token: str) -> bool:
    """An identifier, a number, a date or a time: what makes two alike prompts two tests.
    `A-1`, `10:30`, `2025-05-03`, `snake_case`, `a@b.c`, `INC`, `orderId`, `six`, `Friday`."""
    return _FACT_MARK.search(token) is not None or token.casefold() in _FACT_WORDS


def facts(prompt: str) -> tuple[str, ...]:
    """The prompt's identifiers, numbers, dates and times, in order, case-folded."""
    tokens = (raw.strip(_EDGE) for raw in prompt.split())
    return tuple(t.casefold() for t in tokens if t and _is_fact(t))


def _setting(t: LoadedTask, starts: Mapping[str, Any]) -> str:
    task = t.task
    return digest(
        {
            "domain": task.domain,
            "identity": task.identity.model_dump(),
            "initial_state": starts.get(task.id, task.initial_state),
            "tools": task.tools,
            "faults": [f.model_dump() for f in task.faults],
            "user": task.user.model_dump(),
        }
    )


def _prompt(t: LoadedTask) -> str:
    return re.sub(r"\s+", " ", t.task.prompt).strip().casefold()


def _similarity(a: str, b: str, near: float) -> float:
    """difflib's ratio, skipped (0.0) when its cheap upper bounds are already below `near`."""
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    if matcher.real_quick_ratio() < near or matcher.quick_ratio() < near:
        return 0.0
    return matcher.ratio()


def duplicate_tasks(
    tasks: Sequence[LoadedTask],
    near: float | None = NEAR,
    starts: Mapping[str, Any] | None = None,
) -> list[Problem]:
    """One problem (file, line, field, message) per task that repeats an earlier one:
    the same prompt always, a prompt at least `near` similar unless `near` is None.
    `starts` gives, by task id, what a task starts from when its domain builds that
    rather than taking the task's `initial_state` (env/domain.py: `starting_point`)."""
    firsts: dict[tuple[str, str], LoadedTask] = {}
    groups: dict[tuple[str, tuple[str, ...]], list[tuple[str, LoadedTask]]] = defaultdict(list)
    problems = []
    for t in tasks:
        setting, prompt = _setting(t, starts or {}), _prompt(t)
        first = firsts.setdefault((setting, prompt), t)
        if first is not t:
            problems.append(_problem(t, first, "duplicate"))
        else:
            groups[(setting, facts(t.task.prompt))].append((prompt, t))
    if near is not None:
        for items in groups.values():
            problems.extend(_near_duplicates(items, near))
    return problems


def _problem(later: LoadedTask, first: LoadedTask, kind: str) -> Problem:
    return (
        later.path,
        later.line_at(("prompt",)),
        later.field_name(("prompt",)),
        f"task {later.task.id!r} is a {kind} of {first.task.id!r} "
        f"({first.path}:{first.line}) with the same starting state",
    )


def _near_duplicates(items: list[tuple[str, LoadedTask]], near: float) -> list[Problem]:
    """Each prompt compared with the earlier ones it may be near; the first match counts."""
    prompts = [prompt for prompt, _ in items]
    problems = []
    for j, earlier in _candidates(prompts).items():
        for i in earlier:
            ratio = _similarity(prompts[i], prompts[j], near)
            if ratio >= near:
                kind = f"near-duplicate ({ratio:.0%} similar prompt)"
                problems.append(_problem(items[j][1], items[i][1], kind))
                break
    return problems


def _candidates(prompts: list[str]) -> dict[int, list[int]]:
    """For each prompt, the earlier ones worth comparing with it."""
    if len(prompts) <= PAIRWISE:
        return {j: list(range(j)) for j in range(1, len(prompts))}
    buckets: dict[tuple[int, tuple[int, ...]], list[int]] = defaultdict(list)
    hashed: dict[str, tuple[int, ...]] = {}
    for j, prompt in enumerate(prompts):
        signature = _minhash(prompt, hashed)
        for band in range(BANDS):
            buckets[(band, signature[band * _ROWS : (band + 1) * _ROWS])].append(j)
    partners: dict[int, set[int]] = defaultdict(set)
    for members in buckets.values():
        for x, j in enumerate(members):
            partners[j].update(members[:x])
    return {j: sorted(partners[j]) for j in sorted(partners)}


def _minhash(prompt: str, hashed: dict[str, tuple[int, ...]]) -> tuple[int, ...]:
    """MinHash of the prompt's words: for each of HASHES hash functions, the least value
    over the words. One SHAKE-128 digest per distinct word gives all of its values."""
    rows = []
    for word in set(_WORD.findall(prompt)):
        values = hashed.get(word)
        if values is None:
            digest_bytes = hashlib.shake_128(word.encode()).digest(4 * HASHES)
            values = hashed[word] = struct.unpack(f"<{HASHES}I", digest_bytes)
        rows.append(values)
    return tuple(map(min, zip(*rows, strict=True))) if rows else ()
