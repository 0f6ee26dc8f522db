"""Independent labels: what a reviewer who has not labelled a trial can learn of it, by any
page of the desk. Every GET route of the app is visited (so a page added later is audited
too) with the trial's own run, task, trial and item in its address.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from starlette.routing import Route

from desk_support import FAIL, Session, claim, first_double, queue, run_clinical, signed, take
from proctor import Store
from proctor.review.server import create_app
from proctor.store import desk

NOTE = "NOTE-7f3a: step 4 prescribes despite the allergy"


def every_page(s: Session, db_path: Path, values: dict[str, str]) -> dict[str, str]:
    """Each GET route of the desk, its parameters filled from `values`: path -> page."""
    app = create_app(db_path).app  # type: ignore[attr-defined]
    pages = {}
    for route in app.routes:
        if isinstance(route, Route) and "GET" in (route.methods or ()):
            path = re.sub(r"\{(\w+)(:\w+)?\}", lambda m: values[m.group(1)], route.path)
            pages[path] = s.client.get(path).text
    return pages


def test_no_page_shows_another_reviewers_label_or_the_verdict_before_ones_own(
    desk_db: Path, desk_store: Store, desk_prepared: dict[str, Any]
) -> None:
    run = desk_prepared["run"]
    double = first_double(desk_store, run.run_id)
    result = next(r for r in run.results if (r.task_id, r.trial) == (double.task_id, double.trial))
    alice = signed(desk_db, desk_store, "alice")
    alice.post(f"/assignments/{claim(alice, double.id)}/label", {**FAIL, "note": NOTE})
    bob = signed(desk_db, desk_store, "bob")
    bob_seat = claim(bob, double.id)  # bob holds the item's second seat, not yet labelled
    dave = signed(desk_db, desk_store, "dave")  # has nothing to do with it
    values = {
        "run": run.run_id,
        "task": double.task_id,
        "trial": str(double.trial),
        "item": str(double.id),
        "name": "desk.js",
    }
    secrets = [NOTE[:9], "alice", "Automated verdict", *(c.name for c in result.checks)]
    for s in (bob, dave):
        pages = every_page(s, desk_db, values)
        assert len(pages) >= 10
        leaks = {path: [x for x in secrets if x in html] for path, html in pages.items()}
        assert {path: found for path, found in leaks.items() if found} == {}
    # once bob has labelled, the verdict shows him, the other reviewer's label still does not
    bob.post(f"/assignments/{bob_seat}/label", FAIL)
    pages = every_page(bob, desk_db, values)
    assert "Automated verdict" in pages[f"/items/{double.id}"]
    assert [path for path, html in pages.items() if NOTE[:9] in html or "alice" in html] == []


def test_trial_pages_hold_the_verdict_back_until_labelled(
    desk_db: Path, desk_store: Store, desk_prepared: dict[str, Any]
) -> None:
    run = desk_prepared["run"]
    alice = signed(desk_db, desk_store, "alice")
    item_id, assignment, _ = take(alice, run.run_id)
    item = desk.item(desk_store, item_id)
    assert item is not None
    page = f"/runs/{run.run_id}/trials/{item.task_id}/{item.trial}"
    listing = f"/runs/{run.run_id}/trials"
    row = re.compile(rf'trials/{re.escape(item.task_id)}/{item.trial}">.*?</tr>', re.S)

    def shown(html: str) -> bool:
        found = row.search(html)
        assert found is not None
        return "once you have labelled it" not in found.group(0)

    assert "Automated verdict" not in alice.client.get(page).text
    assert not shown(alice.client.get(listing).text)
    assert alice.client.get(f"{listing}?status=failed").status_code == 400  # would name them
    alice.post(f"/assignments/{assignment}/label", FAIL)
    assert "Automated verdict" in alice.client.get(page).text
    assert shown(alice.client.get(listing).text)
    # a trial no item shows has nothing to label: its page keeps the verdict, as a report
    queued = {(i.task_id, i.trial) for i, *_ in desk.items_page(desk_store, run.run_id, 0, -1, 999)}
    free = next(r for r in run.results if (r.task_id, r.trial) not in queued)
    free_page = alice.client.get(f"/runs/{run.run_id}/trials/{free.task_id}/{free.trial}").text
    assert "Automated verdict" in free_page


def test_a_pairs_trials_open_unblinded_only_after_labelling(tmp_path: Path) -> None:
    with Store(tmp_path / "p.db") as store:
        base = run_clinical(store, "perfect", trials=2)
        cand = run_clinical(store, "sloppy", trials=2)
        queue(store, cand, baseline=base, pairs=True, share=0.0, sample_rate=1.0)
        alice = signed(tmp_path / "p.db", store, "alice")
        item_id, assignment, _ = take(alice, cand.run_id)
        item = desk.item(store, item_id)
        assert item is not None
        pages = [f"/runs/{run}/trials/{task}/{trial}" for run, task, trial in item.trials()]
        assert [alice.client.get(p).status_code for p in pages] == [403, 403]
        listing = alice.client.get(f"/runs/{base.run_id}/trials").text
        assert f'href="/runs/{base.run_id}/trials/{item.task_id}/{item.other_trial}"' not in listing
        bob = signed(tmp_path / "p.db", store, "bob")  # not even one with no seat on it
        assert [bob.client.get(p).status_code for p in pages] == [403, 403]
        verdicts = {"verdict_0": "pass", "verdict_1": "fail", "reason": "wrong_outcome"}
        alice.post(f"/assignments/{assignment}/label", {**verdicts, "note": "B"})
        opened = [alice.client.get(p) for p in pages]
        assert [p.status_code for p in opened] == [200, 200]
        assert base.run_id in opened[0].text + opened[1].text
