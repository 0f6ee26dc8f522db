"""The review desk over HTTP: assignments, labels, blinding, concurrency, adjudication.

Runs are real (the clinical example through the gateway, and the hostile trial of the
report tests); the app is the real one, driven by Starlette's test client or, where
requests must overlap, served by uvicorn and hit from threads.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from desk_support import (
    FAIL,
    PASS,
    Session,
    claim,
    csrf_of,
    first_double,
    http_client,
    label_count,
    live_desk,
    queue,
    reviewer,
    run_clinical,
    sign_in,
    signed,
    take,
)
from proctor import Store
from proctor.labels.desk_settings import DeskSettings
from proctor.store import desk
from proctor.store import label_tables as stored
from report_runs import PWN
from store_sql import sql


def elements(html: str) -> list[tuple[str, dict[str, str | None]]]:
    """Every start tag of a page with its attributes, as a browser's parser sees them."""
    found: list[tuple[str, dict[str, str | None]]] = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found.append((tag, dict(attrs)))

    Collect().feed(html)
    return found


def test_labels_outside_the_scale_and_oversized_notes_are_refused(
    desk_db: Path, desk_store: Store, desk_prepared: dict[str, Any]
) -> None:
    alice = signed(desk_db, desk_store, "alice")
    _, assignment, _ = take(alice, desk_prepared["run"].run_id)
    url = f"/assignments/{assignment}/label"
    outside = alice.post(url, {**FAIL, "verdict_0": "excellent"})
    assert outside.status_code == 400 and "not on the scale (pass, fail)" in outside.text
    assert alice.post(url, {**FAIL, "reason": "vibes"}).status_code == 400
    assert alice.post(url, {**FAIL, "note": ""}).status_code == 400
    long = alice.post(url, {**FAIL, "note": "x" * 5000})
    assert long.status_code == 400 and "5000 characters, at most 4000" in long.text
    megabyte = alice.post(url, {**FAIL, "note": "x" * 1_000_000})
    assert megabyte.status_code == 413
    assert label_count(desk_db) == 0
    # the refused form comes back filled in, so nothing typed is lost
    assert (
        'value="wrong_outcome" data-key="2" checked' in outside.text
        and FAIL["note"] in outside.text
    )


# -- the queue: assignment, blinding -------------------------------------------------------


def test_items_want_one_or_two_reviewers_and_never_the_same_twice(
    desk_db: Path, desk_store: Store, desk_prepared: dict[str, Any]
) -> None:
    run_id, total = desk_prepared["run"].run_id, desk_prepared["items"]
    with sqlite3.connect(desk_db) as db:
        doubles = db.execute(
            "SELECT COUNT(*) FROM review_items WHERE run_id = ? AND needed = 2", (run_id,)
        ).fetchone()[0]
    assert doubles == -(-total // 5)  # 20%, rounded up
    alice, bob, cat = (signed(desk_db, desk_store, n) for n in ("alice", "bob", "cat"))
    seen: dict[str, list[int]] = {}
    for name, s in (("alice", alice), ("bob", bob), ("cat", cat)):
        seen[name] = []
        while True:
            went = s.post(f"/runs/{run_id}/next", {}, follow_redirects=False)
            if "/queue" in went.headers["location"]:
                break
            item_id = int(went.headers["location"].rsplit("/", 1)[1])
            again, assignment, _ = take(s, run_id)  # the same open item, until labelled
            assert again == item_id
            assert s.post(f"/assignments/{assignment}/label", FAIL).status_code == 200
            seen[name].append(item_id)
    assert len(seen["alice"]) == total  # the first reviewer gets everything once
    assert len(seen["bob"]) == doubles  # then only the double-labelled items
    assert seen["cat"] == []
    assert len(set(seen["bob"])) == len(seen["bob"])
    assert label_count(desk_db) == total + doubles


def test_automated_verdicts_stay_hidden_until_labelled(
    desk_db: Path, desk_store: Store, desk_prepared: dict[str, Any]
) -> None:
    run = desk_prepared["run"]
    alice = signed(desk_db, desk_store, "alice")
    item_id, assignment, before = take(alice, run.run_id)
    item = desk.item(desk_store, item_id)
    assert item is not None
    result = next(r for r in run.results if (r.task_id, r.trial) == (item.task_id, item.trial))
    check = result.checks[0].name
    assert "Automated verdict" not in before and check not in before
    assert all(reason not in before for reason in item.reasons)
    queue_page = alice.client.get(f"/runs/{run.run_id}/queue").text
    assert "shown once you have labelled" in queue_page
    alice.post(f"/assignments/{assignment}/label", FAIL)
    after = alice.client.get(f"/items/{item_id}").text
    assert "Automated verdict" in after and check in after and result.status in after
    shown = signed(desk_db, desk_store, "bob", settings=DeskSettings(show_automated=True))
    assert check in shown.client.get(f"/items/{item_id}").text


def test_a_label_changed_after_the_verdict_was_shown_does_not_replace_the_blind_one(
    desk_db: Path, desk_store: Store, desk_prepared: dict[str, Any]
) -> None:
    """The desk shows the automated verdict once a reviewer has labelled: a change made
    then may only echo the machine, so her first (blind) label still counts; the change is
    kept. Where the verdict was never hidden, the newest label counts."""
    run = desk_prepared["run"]
    carl = signed(desk_db, desk_store, "carl")
    item_id, assignment, _ = take(carl, run.run_id)
    item = desk.item(desk_store, item_id)
    assert item is not None
    key = (item.task_id, item.trial)

    def counted(name: str) -> list[str]:
        labels = stored.current_labels(desk_store, run.run_id)
        return [x.value for x in labels if x.reviewer == name and x.key == key]

    carl.post(f"/assignments/{assignment}/label", FAIL)
    assert "the one you gave before seeing it" in carl.client.get(f"/items/{item_id}").text
    carl.post(f"/assignments/{assignment}/label", PASS)
    assert counted("carl") == ["fail"]
    history = sql(desk_store).execute(
        "SELECT value, informed FROM labels WHERE assignment_id = ? ORDER BY id", (assignment,)
    )
    assert history.fetchall() == [("fail", 0), ("pass", 1)]
    seen = signed(desk_db, desk_store, "dora", settings=DeskSettings(show_automated=True))
    _, shown_assignment, _ = take(seen, run.run_id)
    seen.post(f"/assignments/{shown_assignment}/label", FAIL)
    seen.post(f"/assignments/{shown_assignment}/label", PASS)
    newest = [x for x in stored.current_labels(desk_store, run.run_id) if x.reviewer == "dora"]
    assert [x.value for x in newest] == ["pass"] and newest[0].informed


def test_a_blinded_pair_names_no_run_agent_or_model(tmp_path: Path) -> None:
    with Store(tmp_path / "p.db") as desk_store:
        base = run_clinical(desk_store, "perfect", trials=2)
        cand = run_clinical(desk_store, "sloppy", trials=2)
        count = queue(desk_store, cand, baseline=base, pairs=True, share=0.0, sample_rate=1.0)
        assert count > 0
        alice = signed(tmp_path / "p.db", desk_store, "alice")
        item_id, assignment, page = take(alice, cand.run_id)
        secrets = [base.run_id, cand.run_id, "clinical-perfect", "clinical-sloppy", "agents.py"]
        assert [s for s in secrets if s in page] == []
        assert "Trial A" in page and "Trial B" in page
        done = alice.post(
            f"/assignments/{assignment}/label",
            {"verdict_0": "pass", "verdict_1": "fail", "reason": "wrong_outcome", "note": "B"},
        )
        after = done.text
        assert [s for s in secrets if s in after] == []
        item = desk.item(desk_store, item_id)
        assert item is not None
        a, b = item.trials()  # the page's order, A then B
        kept = {(x.run_id, x.trial): x.value for x in stored.current_labels(desk_store, a[0])}
        kept |= {(x.run_id, x.trial): x.value for x in stored.current_labels(desk_store, b[0])}
        assert kept == {(a[0], a[2]): "pass", (b[0], b[2]): "fail"}
        swaps = {i.swap for i, *_ in desk.items_page(desk_store, cand.run_id, 0, -1, 100)}
        assert swaps == {True, False}  # the order is randomised, not fixed


def test_a_pairs_order_comes_from_the_desks_secret_seed(tmp_path: Path) -> None:
    """Without --seed, a reviewer who knows the code and the default seed cannot compute
    which side of a pair is the baseline: the order comes from a secret per desk."""
    from proctor.review.assignment import enqueue, queue_items
    from proctor.review.queue import ReviewConfig, review_queue

    with Store(tmp_path / "p.db") as store:
        base = run_clinical(store, "perfect", trials=2)
        cand = run_clinical(store, "sloppy", trials=2)
        routed = review_queue(cand, base, ReviewConfig(sample_rate=1.0))
        enqueue(store, cand, routed, double_share=0.0, seed=None, baseline=base)
        secret = desk.pair_seed(store)
        assert secret.bit_length() > 64
        stored = {
            (i.task_id, i.trial): i.swap
            for i, *_ in desk.items_page(store, cand.run_id, 0, -1, 999)
        }

        def order(**seeds: Any) -> dict[tuple[str, int], bool]:
            made = queue_items(cand, routed, double_share=0.0, baseline=base, **seeds)
            return {(n.task_id, n.trial): n.swap for n in made}

        assert len(stored) >= 8 and stored == order(seed=0, pair_seed=secret)
        assert order(seed=7) == order(seed=7)  # --seed: reproducible, and says so
    with Store(tmp_path / "q.db") as other:
        assert desk.pair_seed(other) != secret  # one per desk


def test_hostile_trace_text_is_escaped_on_every_page(
    desk_db: Path, desk_store: Store, desk_prepared: dict[str, Any]
) -> None:
    run = desk_prepared["hostile"]
    alice = signed(desk_db, desk_store, "alice", settings=DeskSettings(show_automated=True))
    item_id, assignment, _ = take(alice, run.run_id)
    note = f"<script>{PWN}</script><img src=x onerror={PWN}>"
    alice.post(f"/assignments/{assignment}/label", {**FAIL, "note": note})
    bob = signed(desk_db, desk_store, "bob")
    _, other, _ = take(bob, run.run_id)
    bob.post(f"/assignments/{other}/label", {**PASS})
    r = run.results[0]
    judge = signed(desk_db, desk_store, "judge", adjudicator=True)  # sees both labels
    pages = [
        alice.client.get(f"/items/{item_id}").text,
        alice.client.get(f"/runs/{run.run_id}/trials/{r.task_id}/{r.trial}").text,
        judge.client.get(f"/runs/{run.run_id}/agreement").text,
        judge.client.get(f"/runs/{run.run_id}/adjudicate").text,
        judge.client.get(f"/runs/{run.run_id}/adjudicate/{r.task_id}/{r.trial}").text,
    ]
    for html in pages:
        tags = elements(html)
        # the payloads became no element, no handler, no link: only the desk's own markup
        assert [attrs for tag, attrs in tags if tag == "script"] == [
            {"src": "/static/desk.js", "defer": None}
        ]
        assert not [tag for tag, _ in tags if tag in ("img", "iframe", "object", "embed")]
        assert not [a for _, a in tags for name in a if name.startswith("on")]
        links = [a["href"] for tag, a in tags if tag == "a"]
        assert all(h and h.startswith(("/", "#")) for h in links), links
        assert PWN in html  # ...while the text is there, to be read
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in pages[0]


# -- concurrency ---------------------------------------------------------------------------


def test_two_reviewers_labelling_one_item_at_once_both_keep_theirs(
    desk_db: Path, desk_store: Store, desk_prepared: dict[str, Any]
) -> None:
    run_id = desk_prepared["run"].run_id
    double = first_double(desk_store, run_id)
    links = [reviewer(desk_store, name) for name in ("alice", "bob")]
    with live_desk(desk_db) as url:
        sessions = [sign_in(http_client(url), link) for link in links]
        assignments = [claim(s, double.id) for s in sessions]
        start = threading.Barrier(2)
        codes: list[int] = []

        def post(s: Session, assignment: int, verdict: dict[str, str]) -> None:
            start.wait()
            codes.append(s.post(f"/assignments/{assignment}/label", verdict).status_code)

        threads = [
            threading.Thread(target=post, args=(s, a, v))
            for s, a, v in zip(sessions, assignments, (PASS, FAIL), strict=True)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert codes == [303, 303]  # httpx does not follow the redirect to the item
    kept = {(x.reviewer, x.value) for x in stored.current_labels(desk_store, run_id)}
    assert kept == {("alice", "pass"), ("bob", "fail")}


def test_parallel_reviewers_posting_labels_lose_none(
    desk_db: Path, desk_store: Store, desk_prepared: dict[str, Any]
) -> None:
    run_id = desk_prepared["run"].run_id
    names = [f"r{i}" for i in range(6)]
    links = [reviewer(desk_store, name) for name in names]
    rounds = 4
    errors: list[str] = []
    with live_desk(desk_db) as url:
        sessions = [sign_in(http_client(url), link) for link in links]
        start = threading.Barrier(len(sessions))

        def work(s: Session) -> None:
            start.wait()
            for n in range(rounds):
                items = s.client.get(f"/runs/{run_id}/queue").text
                item_ids = [int(x.split('"', 1)[0]) for x in items.split('href="/items/')[1:]]
                assignment = claim(s, item_ids[n])
                if assignment is None:
                    continue  # the item's seats went to others first
                for _ in range(2):  # a reviewer who changes their mind: both rows kept
                    r = s.post(f"/assignments/{assignment}/label", FAIL, follow_redirects=False)
                    if r.status_code != 303:
                        errors.append(f"{r.status_code}: {r.text[:200]}")

        threads = [threading.Thread(target=work, args=(s,)) for s in sessions]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    assert errors == []
    with sqlite3.connect(desk_db) as db:
        assigned = db.execute("SELECT COUNT(*) FROM assignments").fetchone()[0]
        over = db.execute(
            "SELECT COUNT(*) FROM review_items i WHERE"
            " (SELECT COUNT(*) FROM assignments a WHERE a.item_id = i.id) > i.needed"
        ).fetchone()[0]
    assert assigned > 0 and over == 0  # no item got more reviewers than it wants
    assert label_count(desk_db) == 2 * assigned  # every posted label is stored


# -- adjudication and flags ----------------------------------------------------------------


def test_disagreements_go_to_an_adjudicator_not_party_to_them(
    desk_db: Path, desk_store: Store, desk_prepared: dict[str, Any]
) -> None:
    run_id = desk_prepared["run"].run_id
    double = first_double(desk_store, run_id)
    labelled = {}
    # bob is an adjudicator too, but party to this disagreement
    for name, verdict, adjudicator in (("alice", PASS, False), ("bob", FAIL, True)):
        s = signed(desk_db, desk_store, name, adjudicator=adjudicator)
        s.post(f"/assignments/{claim(s, double.id)}/label", verdict)
        labelled[name] = s
    alice, bob = labelled["alice"], labelled["bob"]
    listing_url = f"/runs/{run_id}/adjudicate"
    target = f"{listing_url}/{double.task_id}/{double.trial}"
    assert alice.client.get(listing_url).status_code == 403  # no adjudicator
    assert alice.client.get(target).status_code == 403
    assert alice.post(target, FAIL).status_code == 403
    own = bob.client.get(listing_url)
    assert own.status_code == 200 and target not in own.text and 'id="party"' in own.text
    assert bob.client.get(target).status_code == 404  # never her own disagreement
    figures = bob.client.get(f"/runs/{run_id}/agreement").text  # nor in its figures
    assert "alice" not in figures and "Adjudication (0 waiting)" in figures
    assert bob.post(target, {**FAIL, "note": "mine wins"}).status_code == 404
    assert stored.adjudications(desk_store, run_id) == {}
    judge = signed(desk_db, desk_store, "judge", adjudicator=True)
    assert target in judge.client.get(listing_url).text
    assert "alice · bob" in judge.client.get(f"/runs/{run_id}/agreement").text
    missing = judge.post(target, {"verdict_0": "pass", "reason": "correct"})
    assert missing.status_code == 400 and "evidence is required for an adjudication" in missing.text
    assert judge.post(target, {**PASS, "note": "step 5 shows the right dose"}).status_code == 200
    final = stored.adjudications(desk_store, run_id)[(double.task_id, double.trial)]
    assert final.value == "pass" and final.reviewer == "judge"
    listing = judge.client.get(listing_url).text
    assert target not in listing and "step 5 shows the right dose" in listing
    assert "step 5 shows the right dose" not in bob.client.get(listing_url).text


def test_an_ambiguous_task_is_listed_for_its_owners_and_kept_out(
    desk_db: Path, desk_store: Store, desk_prepared: dict[str, Any], tmp_path: Path
) -> None:
    run_id = desk_prepared["run"].run_id
    alice = signed(desk_db, desk_store, "alice")
    item_id, assignment, _ = take(alice, run_id)
    flag = {"ambiguous": "1", "reason": "other", "note": "the prompt names two patients"}
    assert alice.post(f"/assignments/{assignment}/label", flag).status_code == 200
    item = desk.item(desk_store, item_id)
    assert item is not None
    assert alice.client.get(f"/runs/{run_id}/agreement").status_code == 403
    lead = signed(desk_db, desk_store, "lead", adjudicator=True)
    page = lead.client.get(f"/runs/{run_id}/agreement").text
    assert "the prompt names two patients" in page and item.task_id in page
    from proctor.labels.ground_truth import run_truth

    truth = run_truth(desk_store, run_id)
    assert item.task_id in truth.flagged
    assert all(key[0] != item.task_id for key in truth.final)


def test_pages_of_a_run_page_by_key(
    desk_db: Path, desk_store: Store, desk_prepared: dict[str, Any]
) -> None:
    run = desk_prepared["run"]
    alice = signed(desk_db, desk_store, "alice", settings=DeskSettings(show_automated=True))
    first = alice.client.get(f"/runs/{run.run_id}/trials?status=failed").text
    failed = sorted((r.task_id, r.trial) for r in run.results if r.status == "failed")
    assert f"failed ({len(failed)})" in first
    shown = first.count(f'href="/runs/{run.run_id}/trials/')
    assert shown == min(len(failed), 50)
    everything = alice.client.get(f"/runs/{run.run_id}/trials").text
    assert f"all ({len(run.results)})" in everything
    task, trial = sorted((r.task_id, r.trial) for r in run.results)[9]
    rest = alice.client.get(f"/runs/{run.run_id}/trials?after={task}:{trial}").text
    assert rest.count(f'href="/runs/{run.run_id}/trials/') == min(50, len(run.results) - 10)
    assert alice.client.get(f"/runs/{run.run_id}/trials?after=x:y").status_code == 400
    assert alice.client.get("/runs/nope/queue").status_code == 404
    queue_page = alice.client.get(f"/runs/{run.run_id}/queue?after=4").text
    assert csrf_of(queue_page) == alice.csrf
    positions = [int(td) for td in re.findall(r'<tr><td class="num">(\d+)</td>', queue_page)]
    assert positions == list(range(6, desk_prepared["items"] + 1))  # after #5, in queue order


def test_the_item_page_shows_the_task_and_the_state_the_trial_touched(
    desk_db: Path, desk_store: Store, desk_prepared: dict[str, Any]
) -> None:
    from proctor.env.suite import load_suite
    from proctor.review.trialview import TaskFiles, relevant_state, task_view
    from report_runs import EXAMPLES

    run = desk_prepared["run"]
    suite = {t.id: t for t in load_suite([EXAMPLES / "clinical"]).tasks}
    task = suite["allergy-check-before-antibiotic"]
    r = next(r for r in run.results if r.task_id == task.id)
    trace = desk_store.trace(run.run_id, r.task_id, r.trial)[0]
    start = task.domain.initial_state(task.task)  # the domain's base state under the task's
    named = {str(v) for e in trace.of_kind("tool_proposal") for v in e.data["args"].values()}
    state, note = relevant_state(start, trace)
    assert set(state["patients"]) == {"p2"} <= named  # the patient the trial looked up
    assert set(state["formulary"]) <= named and "orders" not in state  # empty, unnamed
    assert note.startswith("the entries this trial named")
    view = task_view(TaskFiles().task(run.manifest, task.id), task.id, trace)
    assert view.found and view.identity == task.task.identity.model_dump(exclude_none=True)
    assert view.state == state
    # a task file changed since the run is not shown as if the agent had seen it
    suite_now = run.manifest.suite.model_copy(update={"task_digests": {}})
    changed = run.manifest.model_copy(update={"suite": suite_now})
    assert TaskFiles().task(changed, task.id) is None
    small = {"orders": {"A-1": {"status": "placed"}}}
    assert relevant_state(small, trace) == (small, "")  # a small state is shown whole
    alice = signed(desk_db, desk_store, "alice")
    page = alice.client.get(f"/runs/{run.run_id}/trials/{r.task_id}/{r.trial}").text
    assert task.task.prompt.split("?")[0].replace("'", "&#39;") in page
    assert '"tenant": "northside"' in page.replace("&#34;", '"')
