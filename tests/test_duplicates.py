"""Duplicate and near-duplicate tasks: the same test under another id is found, two tests
that differ in a fact (an identifier, a number, a date, a time) never are, and the search
stays sub-quadratic (benchmarks/validate_scale.py measures it)."""

from __future__ import annotations

import random
import string
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from proctor.tasks.duplicates import PAIRWISE, duplicate_tasks, facts
from proctor.tasks.loader import LoadedTask
from proctor.tasks.models import Task

TEMPLATES = [
    "Cancel order {} because I changed my mind.",
    "Please book the large meeting room for {} with a screen.",
    "Refund the charge made on {} to the card on file.",
    "Move the standup that starts at {} to the afternoon slot.",
]


def loaded(task_id: str, prompt: str, **fields: Any) -> LoadedTask:
    data = {"id": task_id, "domain": "support", "prompt": prompt, **fields}
    return LoadedTask(Task.model_validate(data), Path(f"{task_id}.yaml"), (), {("prompt",): 3})


def flagged(prompts: list[str], near: float | None = 0.9) -> list[str]:
    """The ids of the tasks reported as repeating an earlier one."""
    tasks = [loaded(f"t{i}", p) for i, p in enumerate(prompts)]
    return [problem[3].split("'")[1] for problem in duplicate_tasks(tasks, near=near)]


def test_facts_are_identifiers_numbers_dates_and_times() -> None:
    assert facts("Cancel order A-1, please.") == ("a-1",)
    assert facts("Book a room for six on Thursday at 10:00 with a screen") == (
        "six",
        "thursday",
        "10:00",
    )
    assert facts("Mail bob@example.com about INC-4217 and orderId x") == (
        "bob@example.com",
        "inc-4217",
        "orderid",
    )
    assert facts("Refund it on 2024-05-03.") == ("2024-05-03",)
    assert facts("Cancel my order because I changed my mind") == ()


def test_an_exact_duplicate_is_found_with_and_without_strict() -> None:
    prompts = ["Cancel order A-100 please.", "cancel  order A-100 PLEASE."]
    assert flagged(prompts, near=None) == ["t1"]
    assert flagged(prompts) == ["t1"]


def test_a_near_duplicate_is_looked_for_only_when_asked() -> None:
    prompts = [
        "Cancel order A-100 because I changed my mind.",
        "Cancel order A-100, because I changed my mind!",
    ]
    assert flagged(prompts, near=None) == []
    assert flagged(prompts) == ["t1"]


def test_a_different_starting_state_is_a_different_test() -> None:
    a = loaded("a", "Cancel order A-100 please.")
    b = loaded("b", "Cancel order A-100 please.", initial_state={"orders": {}})
    assert duplicate_tasks([a, b]) == []


@given(
    template=st.sampled_from(TEMPLATES),
    pair=st.one_of(
        st.tuples(
            st.from_regex(r"[A-Z]{1,3}-[0-9]{1,5}", fullmatch=True),
            st.from_regex(r"[A-Z]{1,3}-[0-9]{1,5}", fullmatch=True),
        ),
        st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)).map(
            lambda p: (str(p[0]), str(p[1]))
        ),
        st.tuples(st.dates(), st.dates()).map(lambda p: (p[0].isoformat(), p[1].isoformat())),
        st.tuples(st.times(), st.times()).map(
            lambda p: (p[0].strftime("%H:%M"), p[1].strftime("%H:%M"))
        ),
        st.tuples(
            st.sampled_from(["Monday", "Friday", "six", "ten", "noon", "tomorrow"]),
            st.sampled_from(["Tuesday", "Sunday", "eight", "two", "midnight", "today"]),
        ),
    ),
)
@settings(max_examples=200, deadline=None)
def test_prompts_differing_in_a_fact_are_never_near_duplicates(
    template: str, pair: tuple[str, str]
) -> None:
    first, second = pair
    if first.casefold() == second.casefold():
        return
    assert flagged([template.format(first), template.format(second)]) == []


@given(template=st.sampled_from(TEMPLATES), fact=st.from_regex(r"[A-Z]-[0-9]{1,4}", fullmatch=True))
@settings(max_examples=50, deadline=None)
def test_the_same_facts_reworded_slightly_are_near_duplicates(template: str, fact: str) -> None:
    prompt = template.format(fact)
    assert flagged([prompt, prompt[:-1] + ", thanks."]) == ["t1"]


def test_large_groups_go_through_minhash_and_still_find_the_near_duplicate() -> None:
    """More than PAIRWISE prompts with one starting state: the pairs are not all compared,
    yet the planted near-duplicate (first and last task) is found, and nothing else is."""
    rng = random.Random(7)
    vocabulary = [
        "".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 9))) for _ in range(4000)
    ]
    prompts = [" ".join(rng.choices(vocabulary, k=14)) for _ in range(PAIRWISE * 3)]
    planted = prompts[0] + " please"
    prompts.append(planted)
    assert flagged(prompts) == [f"t{len(prompts) - 1}"]
