"""The review desk over HTTP: sign-in, CSRF, assignments, labels, blinding, adjudication.

Runs are real (the clinical example through the gateway, and the hostile trial of the
report tests); the app is the real one, driven by Starlette's test client or, where
requests must overlap, served by uvicorn and hit from threads.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import threading
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from desk_support import (
    Session,
    csrf_of,
    desk_client,
    http_client,
    live_desk,
    queue,
    reviewer,
    run_clinical,
    sign_in,
)
from proctor import Store
from proctor.review.settings import DeskSettings
from proctor.store import desk
from proctor.store import labels as stored
from report_runs import PWN, run_hostile


def elements(html: str) -> list[tuple[str, dict[str, str | None]]]:
    """Every start tag of a page with its attributes, as a browser's parser sees them."""
    found: list[tuple[str, dict[str, str | None]]] = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found.append((tag, dict(attrs)))

    Collect().feed(html)
    return found


SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A store with a sloppy clinical run queued (20% for two reviewers) and a hostile run."""
    folder = tmp_path_factory.mktemp("desk")
    store = Store(folder / "p.db")
    run = run_clinical(store, "sloppy")
    hostile = run_hostile(store).run
    items = queue(store, run)
    queue(store, hostile, share=1.0)
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    return {"path": folder / "p.db", "run": run, "hostile": hostile, "items": items}


@pytest.fixture
def db_path(prepared: dict[str, Any], tmp_path: Path) -> Path:
    path = tmp_path / "p.db"
    shutil.copy(prepared["path"], path)
    return path


@pytest.fixture
def store(db_path: Path) -> Iterator[Store]:
    with Store(db_path) as opened:
        yield opened


def signed(db_path: Path, store: Store, name: str, **kw: Any) -> Session:
    adjudicator = kw.pop("adjudicator", False)
    return sign_in(desk_client(db_path, **kw), reviewer(store, name, adjudicator=adjudicator))


def label_count(db_path: Path) -> int:
    with sqlite3.connect(db_path) as db:
        return int(db.execute("SELECT COUNT(*) FROM labels").fetchone()[0])


def take(s: Session, run_id: str) -> tuple[int, int, str]:
    """Next item for a reviewer: (item id, assignment id, the item page)."""
    went = s.post(f"/runs/{run_id}/next", {}, follow_redirects=False)
    assert went.status_code == 303 and went.headers["location"].startswith("/items/")
    page = s.client.get(went.headers["location"])
    item_id = int(went.headers["location"].rsplit("/", 1)[1])
    assignment = int(page.text.split("/assignments/", 1)[1].split("/", 1)[0])
    return item_id, assignment, page.text


FAIL = {"verdict_0": "fail", "reason": "wrong_outcome", "note": "step 4 writes the wrong value"}
PASS = {"verdict_0": "pass", "reason": "correct", "note": ""}


# -- sign-in, sessions, headers ------------------------------------------------------------


def test_sign_in_keeps_only_hashes_and_sets_a_strict_cookie(
    db_path: Path, store: Store, prepared: dict[str, Any]
) -> None:
    link = reviewer(store, "alice")
    token = link.split("token=")[1]
    client = desk_client(db_path)
    assert client.get("/", follow_redirects=False).headers["location"] == "/signin"
    done = client.post("/signin", data={"token": token}, follow_redirects=False)
    cookie = done.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    session = cookie.split(";")[0].split("=", 1)[1]
    raw = db_path.read_bytes() + Path(f"{db_path}-wal").read_bytes()
    assert token.encode() not in raw and session.encode() not in raw
    home = client.get("/")
    assert home.status_code == 200 and prepared["run"].run_id in home.text
    # every answer carries the headers, errors and static files too
    for response in (
        home,
        done,
        client.get("/static/desk.js"),
        client.get("/items/999999"),
        client.post("/signout", data={"csrf": "forged"}),
    ):
        for name, value in SECURITY_HEADERS.items():
            assert response.headers[name] == value, (response.status_code, name)
    # a replaced link and the sessions it opened stop working
    reviewer(store, "alice")
    assert client.get("/", follow_redirects=False).status_code == 303
    assert client.post("/signin", data={"token": token}).status_code == 403


def test_bad_sign_ins_are_refused(db_path: Path, store: Store) -> None:
    token = reviewer(store, "alice").split("token=")[1]
    client = desk_client(db_path)
    assert client.get("/signin?token=not-a-token").status_code == 403
    assert client.post("/signin", data={"token": "not-a-token"}).status_code == 403
    cross = client.post("/signin", data={"token": token}, headers={"sec-fetch-site": "cross-site"})
    assert cross.status_code == 403 and "set-cookie" not in cross.headers
    # DNS rebinding: a name that is not the desk's
    assert client.get("/signin", headers={"host": "evil.example"}).status_code == 400


# -- CSRF, ownership, bad labels -----------------------------------------------------------


def test_posts_without_or_with_a_forged_csrf_token_are_403(
    db_path: Path, store: Store, prepared: dict[str, Any]
) -> None:
    alice = signed(db_path, store, "alice")
    run_id = prepared["run"].run_id
    _, assignment, _ = take(alice, run_id)
    url = f"/assignments/{assignment}/label"
    missing = alice.client.post(url, data=FAIL)
    forged = alice.client.post(url, data={**FAIL, "csrf": "0" * 64})
    other = signed(db_path, store, "bob")
    borrowed = alice.client.post(url, data={**FAIL, "csrf": other.csrf})  # bob's token
    assert [r.status_code for r in (missing, forged, borrowed)] == [403, 403, 403]
    assert label_count(db_path) == 0
    assert alice.post(url, FAIL, follow_redirects=False).status_code == 303
    assert label_count(db_path) == 1


def test_a_session_cannot_label_another_reviewers_assignment(
    db_path: Path, store: Store, prepared: dict[str, Any]
) -> None:
    alice, bob = signed(db_path, store, "alice"), signed(db_path, store, "bob")
    _, assignment, _ = take(alice, prepared["run"].run_id)
    stolen = bob.post(f"/assignments/{assignment}/label", FAIL)
    assert stolen.status_code == 403 and "another reviewer" in stolen.text
    assert bob.post(f"/assignments/{assignment}/release", {}).status_code == 403
    assert label_count(db_path) == 0


def test_labels_outside_the_scale_and_oversized_notes_are_refused(
    db_path: Path, store: Store, prepared: dict[str, Any]
) -> None:
    alice = signed(db_path, store, "alice")
    _, assignment, _ = take(alice, prepared["run"].run_id)
    url = f"/assignments/{assignment}/label"
    outside = alice.post(url, {**FAIL, "verdict_0": "excellent"})
    assert outside.status_code == 400 and "not on the scale (pass, fail)" in outside.text
    assert alice.post(url, {**FAIL, "reason": "vibes"}).status_code == 400
    assert alice.post(url, {**FAIL, "note": ""}).status_code == 400
    long = alice.post(url, {**FAIL, "note": "x" * 5000})
    assert long.status_code == 400 and "5000 characters, at most 4000" in long.text
    megabyte = alice.post(url, {**FAIL, "note": "x" * 1_000_000})
    assert megabyte.status_code == 413
    assert label_count(db_path) == 0
    # the refused form comes back filled in, so nothing typed is lost
    assert (
        'value="wrong_outcome" data-key="2" checked' in outside.text
        and FAIL["note"] in outside.text
    )


# -- the queue: assignment, blinding -------------------------------------------------------


def test_items_want_one_or_two_reviewers_and_never_the_same_twice(
    db_path: Path, store: Store, prepared: dict[str, Any]
) -> None:
    run_id, total = prepared["run"].run_id, prepared["items"]
    with sqlite3.connect(db_path) as db:
        doubles = db.execute(
            "SELECT COUNT(*) FROM review_items WHERE run_id = ? AND needed = 2", (run_id,)
        ).fetchone()[0]
    assert doubles == -(-total // 5)  # 20%, rounded up
    alice, bob, cat = (signed(db_path, store, n) for n in ("alice", "bob", "cat"))
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
    assert label_count(db_path) == total + doubles


def test_automated_verdicts_stay_hidden_until_labelled(
    db_path: Path, store: Store, prepared: dict[str, Any]
) -> None:
    run = prepared["run"]
    alice = signed(db_path, store, "alice")
    item_id, assignment, before = take(alice, run.run_id)
    item = desk.item(store.db, item_id)
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
    shown = signed(db_path, store, "bob", settings=DeskSettings(show_automated=True))
    assert check in shown.client.get(f"/items/{item_id}").text


def test_a_blinded_pair_names_no_run_agent_or_model(tmp_path: Path) -> None:
    with Store(tmp_path / "p.db") as store:
        base = run_clinical(store, "perfect", trials=2)
        cand = run_clinical(store, "sloppy", trials=2)
        count = queue(store, cand, baseline=base, pairs=True, share=0.0, sample_rate=1.0)
        assert count > 0
        alice = signed(tmp_path / "p.db", store, "alice")
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
        item = desk.item(store.db, item_id)
        assert item is not None
        a, b = item.trials()  # the page's order, A then B
        kept = {(x.run_id, x.trial): x.value for x in stored.current_labels(store.db, a[0])}
        kept |= {(x.run_id, x.trial): x.value for x in stored.current_labels(store.db, b[0])}
        assert kept == {(a[0], a[2]): "pass", (b[0], b[2]): "fail"}
        swaps = {i.swap for i, *_ in desk.items_page(store.db, cand.run_id, 0, -1, 100)}
        assert swaps == {True, False}  # the order is randomised, not fixed


def test_hostile_trace_text_is_escaped_on_every_page(
    db_path: Path, store: Store, prepared: dict[str, Any]
) -> None:
    run = prepared["hostile"]
    alice = signed(db_path, store, "alice", settings=DeskSettings(show_automated=True))
    item_id, assignment, _ = take(alice, run.run_id)
    note = f"<script>{PWN}</script><img src=x onerror={PWN}>"
    alice.post(f"/assignments/{assignment}/label", {**FAIL, "note": note})
    bob = signed(db_path, store, "bob")
    _, other, _ = take(bob, run.run_id)
    bob.post(f"/assignments/{other}/label", {**PASS})
    r = run.results[0]
    pages = [
        alice.client.get(f"/items/{item_id}").text,
        alice.client.get(f"/runs/{run.run_id}/trials/{r.task_id}/{r.trial}").text,
        alice.client.get(f"/runs/{run.run_id}/agreement").text,
        alice.client.get(f"/runs/{run.run_id}/adjudicate").text,
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
    db_path: Path, store: Store, prepared: dict[str, Any]
) -> None:
    run_id = prepared["run"].run_id
    double = next(i for i, *_ in desk.items_page(store.db, run_id, 0, -1, 1000) if i.needed == 2)
    links = [reviewer(store, name) for name in ("alice", "bob")]
    with live_desk(db_path) as url:
        sessions = [sign_in(http_client(url), link) for link in links]
        assignments = []
        for s in sessions:
            s.post(f"/items/{double.id}/claim", {})
            page = s.client.get(f"/items/{double.id}").text
            assignments.append(int(page.split("/assignments/", 1)[1].split("/", 1)[0]))
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
    kept = {(x.reviewer, x.value) for x in stored.current_labels(store.db, run_id)}
    assert kept == {("alice", "pass"), ("bob", "fail")}


def test_parallel_reviewers_posting_labels_lose_none(
    db_path: Path, store: Store, prepared: dict[str, Any]
) -> None:
    run_id = prepared["run"].run_id
    names = [f"r{i}" for i in range(6)]
    links = [reviewer(store, name) for name in names]
    rounds = 4
    errors: list[str] = []
    with live_desk(db_path) as url:
        sessions = [sign_in(http_client(url), link) for link in links]
        start = threading.Barrier(len(sessions))

        def work(s: Session) -> None:
            start.wait()
            for n in range(rounds):
                items = s.client.get(f"/runs/{run_id}/queue").text
                item_ids = [int(x.split('"', 1)[0]) for x in items.split('href="/items/')[1:]]
                item_id = item_ids[n]
                s.post(f"/items/{item_id}/claim", {})
                page = s.client.get(f"/items/{item_id}").text
                if "/assignments/" not in page:
                    continue  # the item's seats went to others first
                assignment = int(page.split("/assignments/", 1)[1].split("/", 1)[0])
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
    with sqlite3.connect(db_path) as db:
        assigned = db.execute("SELECT COUNT(*) FROM assignments").fetchone()[0]
        over = db.execute(
            "SELECT COUNT(*) FROM review_items i WHERE"
            " (SELECT COUNT(*) FROM assignments a WHERE a.item_id = i.id) > i.needed"
        ).fetchone()[0]
    assert assigned > 0 and over == 0  # no item got more reviewers than it wants
    assert label_count(db_path) == 2 * assigned  # every posted label is stored


# -- adjudication and flags ----------------------------------------------------------------


def test_disagreements_go_to_an_adjudicator_whose_label_is_final(
    db_path: Path, store: Store, prepared: dict[str, Any]
) -> None:
    run_id = prepared["run"].run_id
    double = next(i for i, *_ in desk.items_page(store.db, run_id, 0, -1, 1000) if i.needed == 2)
    for name, verdict in (("alice", PASS), ("bob", FAIL)):
        s = signed(db_path, store, name)
        s.post(f"/items/{double.id}/claim", {})
        page = s.client.get(f"/items/{double.id}").text
        assignment = int(page.split("/assignments/", 1)[1].split("/", 1)[0])
        s.post(f"/assignments/{assignment}/label", verdict)
    listing = s.client.get(f"/runs/{run_id}/adjudicate").text
    target = f"/runs/{run_id}/adjudicate/{double.task_id}/{double.trial}"
    assert target in listing
    assert s.post(target, FAIL).status_code == 403  # bob is no adjudicator
    judge = signed(db_path, store, "judge", adjudicator=True)
    missing = judge.post(target, {"verdict_0": "pass", "reason": "correct"})
    assert missing.status_code == 400 and "evidence is required for an adjudication" in missing.text
    assert judge.post(target, {**PASS, "note": "step 5 shows the right dose"}).status_code == 200
    final = stored.adjudications(store.db, run_id)[(double.task_id, double.trial)]
    assert final.value == "pass" and final.reviewer == "judge"
    listing = judge.client.get(f"/runs/{run_id}/adjudicate").text
    assert target not in listing and "step 5 shows the right dose" in listing


def test_an_ambiguous_task_is_listed_for_its_owners_and_kept_out(
    db_path: Path, store: Store, prepared: dict[str, Any], tmp_path: Path
) -> None:
    run_id = prepared["run"].run_id
    alice = signed(db_path, store, "alice")
    item_id, assignment, _ = take(alice, run_id)
    flag = {"ambiguous": "1", "reason": "other", "note": "the prompt names two patients"}
    assert alice.post(f"/assignments/{assignment}/label", flag).status_code == 200
    item = desk.item(store.db, item_id)
    assert item is not None
    page = alice.client.get(f"/runs/{run_id}/agreement").text
    assert "the prompt names two patients" in page and item.task_id in page
    from proctor.review.labels import run_truth

    truth = run_truth(store.db, run_id)
    assert item.task_id in truth.flagged
    assert all(key[0] != item.task_id for key in truth.final)


def test_pages_of_a_run_page_by_key(db_path: Path, store: Store, prepared: dict[str, Any]) -> None:
    run = prepared["run"]
    alice = signed(db_path, store, "alice")
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
    assert positions == list(range(6, prepared["items"] + 1))  # after #5, in queue order


def test_the_item_page_shows_the_task_and_the_state_the_trial_touched(
    db_path: Path, store: Store, prepared: dict[str, Any]
) -> None:
    from proctor.env.suite import load_suite
    from proctor.review.trialview import TaskFiles, relevant_state, task_view
    from report_runs import EXAMPLES

    run = prepared["run"]
    suite = {t.id: t for t in load_suite([EXAMPLES / "clinical"]).tasks}
    task = suite["allergy-check-before-antibiotic"]
    r = next(r for r in run.results if r.task_id == task.id)
    trace = store.trace(run.run_id, r.task_id, r.trial)[0]
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
    changed = {**run.manifest, "suite": {**run.manifest["suite"], "task_digests": {}}}
    assert TaskFiles().task(changed, task.id) is None
    small = {"orders": {"A-1": {"status": "placed"}}}
    assert relevant_state(small, trace) == (small, "")  # a small state is shown whole
    alice = signed(db_path, store, "alice")
    page = alice.client.get(f"/runs/{run.run_id}/trials/{r.task_id}/{r.trial}").text
    assert task.task.prompt.split("?")[0].replace("'", "&#39;") in page
    assert '"tenant": "northside"' in page.replace("&#34;", '"')


def test_odd_task_ids_and_host_names(db_path: Path, store: Store) -> None:
    from proctor.core.results import TrialResult
    from proctor.core.trace import Trace, TraceEvent
    from proctor.review.app import create_app

    odd = "imported/session?x=1#2"  # imported sessions keep their own ids
    manifest = {"agent": {"name": "a", "version": "1"}, "suite": {"name": "s", "paths": []}}
    store.create_run("odd-run", manifest)
    answer = TraceEvent(1, 0.0, "answer", {"text": "done"})
    result = TrialResult("odd-run", odd, 0, 1, "failed")
    store.write_trial(result, Trace(f"{odd}#0", "t", [answer]), "done", None)
    store.finish_run("odd-run", "completed", {})
    alice = signed(db_path, store, "alice")
    listing = alice.client.get("/runs/odd-run/trials").text
    link = re.search(r'href="(/runs/odd-run/trials/[^"]+)"', listing)
    assert link is not None and "%2F" in link.group(1) and "%3F" in link.group(1)
    page = alice.client.get(link.group(1))
    assert page.status_code == 200 and "imported/session?x=1#2" in page.text
    ipv6 = alice.client.get("/", headers={"host": "[::1]:8765"})
    assert ipv6.status_code == 200
    anywhere = desk_client(db_path, hosts=["*"])
    assert anywhere.get("/signin", headers={"host": "desk.example"}).status_code == 200
    from starlette.testclient import TestClient

    named = TestClient(create_app(db_path, hosts=["desk.internal"]), base_url="http://x")
    assert named.get("/signin", headers={"host": "desk.internal:8765"}).status_code == 200
    assert named.get("/signin", headers={"host": "127.0.0.1"}).status_code == 400


def test_an_expired_session_signs_the_reviewer_out(db_path: Path, store: Store) -> None:
    alice = signed(db_path, store, "alice")
    assert alice.client.get("/", follow_redirects=False).status_code == 200
    store.db.execute("UPDATE review_sessions SET expires_at = 0")
    assert alice.client.get("/", follow_redirects=False).headers["location"] == "/signin"
    signed(db_path, store, "bob")  # a new session forgets the expired ones
    (left,) = store.db.execute("SELECT COUNT(*) FROM review_sessions").fetchone()
    assert left == 1
