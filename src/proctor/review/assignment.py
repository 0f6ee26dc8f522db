"""From a run's review queue to the desk's items, and who reads each.

Every routed trial becomes an item in queue order (most urgent first). A seeded share of
the items (`double_share`, 20% by default, rounded up) wants two reviewers instead of one:
those give the agreement figures. Reviewers pull work: "next" gives a reviewer their own
unlabelled item if they have one, else the first item that still wants a reviewer and
that they have not had (`proctor.store.desk.claim`), so two people never label an item
that wants one, and never the same person twice.

In blinded pairwise mode an item is a candidate trial with a baseline trial of the same
task (the same trial number when the baseline has it, else a seeded pick), shown in a
random order without saying which is which. That order must not be computable by a
reviewer: it comes from a secret random seed kept in the store, one per desk
(`proctor.store.desk.pair_seed`), unless `--seed` asks for a reproducible one.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from typing import Any

from proctor.core.runs import RunData
from proctor.store import desk
from proctor.store.desk import NewItem
from proctor.store.sqlite import Store


def double_labelled(count: int, share: float, seed: int) -> set[int]:
    """Which of `count` items want two reviewers: a seeded `share`, rounded up."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"the double-labelled share must be between 0 and 1 ({share})")
    picks = min(count, math.ceil(share * count))
    return set(random.Random(f"double:{seed}").sample(range(count), picks))


def queue_items(
    run: RunData,
    queue: dict[str, Any],
    *,
    double_share: float,
    seed: int,
    baseline: RunData | None = None,
    pair_seed: int | None = None,
) -> list[NewItem]:
    """The desk items of `run`'s review queue (`proctor.review.queue.review_queue`); with
    `baseline`, blinded pairs (in an order from `pair_seed`, else from `seed`): a routed
    trial whose task the baseline lacks, or had with other content, or without a valid
    trial, is left out."""
    items = queue["items"]
    partners: dict[str, list[int]] = defaultdict(list)
    if baseline is not None:
        ours = run.manifest.suite.task_digests
        theirs = baseline.manifest.suite.task_digests
        for r in sorted(baseline.results, key=lambda r: (r.task_id, r.trial)):
            if r.valid and theirs.get(r.task_id) == ours.get(r.task_id):
                partners[r.task_id].append(r.trial)
        items = [i for i in items if partners.get(i["task_id"])]
    doubles = double_labelled(len(items), double_share, seed)
    rng = random.Random(f"pairs:{seed if pair_seed is None else pair_seed}")
    out = []
    for n, item in enumerate(items):
        needed = 2 if n in doubles else 1
        if baseline is None:
            out.append(NewItem(item["task_id"], item["trial"], item["details"], needed))
            continue
        trials = partners[item["task_id"]]
        other = item["trial"] if item["trial"] in trials else rng.choice(trials)
        out.append(
            NewItem(
                item["task_id"],
                item["trial"],
                item["details"],
                needed,
                other_run_id=baseline.run_id,
                other_trial=other,
                swap=rng.random() < 0.5,
            )
        )
    return out


def enqueue(
    store: Store,
    run: RunData,
    queue: dict[str, Any],
    *,
    double_share: float,
    seed: int | None,
    baseline: RunData | None = None,
) -> tuple[int, list[NewItem]]:
    """Queue a run's routed trials at the desk: (items added, items routed). Items queued
    before are kept with their labels; only new ones are added, after them. `seed` None:
    pairs are ordered by the desk's secret seed (and the doubles picked by seed 0)."""
    desk.migrate(store)
    items = queue_items(
        run,
        queue,
        double_share=double_share,
        seed=seed or 0,
        baseline=baseline,
        pair_seed=desk.pair_seed(store) if seed is None else seed,
    )
    return desk.add_items(store, run.run_id, items), items
