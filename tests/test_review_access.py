"""Who may do what at the review desk: sign-in links, sessions, CSRF tokens, assignments
that belong to one reviewer, host names. Runs and app are real (see test_review_desk.py).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from desk_support import FAIL, ORIGIN, desk_client, label_count, reviewer, signed, take
from proctor import Store
from store_sql import sql

SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
}


# -- sign-in, sessions, headers ------------------------------------------------------------


def test_sign_in_keeps_only_hashes_and_sets_a_strict_cookie(
    desk_db: Path, desk_store: Store, desk_prepared: dict[str, Any]
) -> None:
    link = reviewer(desk_store, "alice")
    token = link.split("token=")[1]
    client = desk_client(desk_db)
    assert client.get("/", follow_redirects=False).headers["location"] == "/signin"
    done = client.post("/signin", data={"token": token}, follow_redirects=False)
    cookie = done.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    assert "Secure" not in cookie  # plain http on loopback: a Secure cookie would be dropped
    session = cookie.split(";")[0].split("=", 1)[1]
    raw = desk_db.read_bytes() + Path(f"{desk_db}-wal").read_bytes()
    assert token.encode() not in raw and session.encode() not in raw
    home = client.get("/")
    assert home.status_code == 200 and desk_prepared["run"].run_id in home.text
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
    reviewer(desk_store, "alice")
    assert client.get("/", follow_redirects=False).status_code == 303
    assert client.post("/signin", data={"token": token}).status_code == 403


def test_a_desk_reached_over_tls_sets_a_secure_cookie(desk_db: Path, desk_store: Store) -> None:
    from starlette.testclient import TestClient

    from proctor.review.server import create_app

    token = reviewer(desk_store, "alice").split("token=")[1]
    client = TestClient(create_app(desk_db), base_url="https://127.0.0.1:8765")
    done = client.post("/signin", data={"token": token}, follow_redirects=False)
    assert done.status_code == 303 and "Secure" in done.headers["set-cookie"]


def test_bad_sign_ins_are_refused(desk_db: Path, desk_store: Store) -> None:
    token = reviewer(desk_store, "alice").split("token=")[1]
    client = desk_client(desk_db)
    assert client.get("/signin?token=not-a-token").status_code == 403
    assert client.post("/signin", data={"token": "not-a-token"}).status_code == 403
    cross = client.post("/signin", data={"token": token}, headers={"sec-fetch-site": "cross-site"})
    assert cross.status_code == 403 and "set-cookie" not in cross.headers
    # an older browser sends no Sec-Fetch-Site: its Origin says where the form came from
    for origin in ("http://evil.example", "null", "http://127.0.0.1:9999", "file://"):
        other = client.post("/signin", data={"token": token}, headers={"origin": origin})
        assert other.status_code == 403 and "set-cookie" not in other.headers, origin
    own = client.post(
        "/signin", data={"token": token}, headers={"origin": ORIGIN}, follow_redirects=False
    )
    assert own.status_code == 303 and "set-cookie" in own.headers
    # DNS rebinding: a name that is not the desk's
    assert client.get("/signin", headers={"host": "evil.example"}).status_code == 400


# -- CSRF, ownership, bad labels -----------------------------------------------------------


def test_posts_without_or_with_a_forged_csrf_token_are_403(
    desk_db: Path, desk_store: Store, desk_prepared: dict[str, Any]
) -> None:
    alice = signed(desk_db, desk_store, "alice")
    run_id = desk_prepared["run"].run_id
    _, assignment, _ = take(alice, run_id)
    url = f"/assignments/{assignment}/label"
    missing = alice.client.post(url, data=FAIL)
    forged = alice.client.post(url, data={**FAIL, "csrf": "0" * 64})
    other = signed(desk_db, desk_store, "bob")
    borrowed = alice.client.post(url, data={**FAIL, "csrf": other.csrf})  # bob's token
    assert [r.status_code for r in (missing, forged, borrowed)] == [403, 403, 403]
    assert label_count(desk_db) == 0
    assert alice.post(url, FAIL, follow_redirects=False).status_code == 303
    assert label_count(desk_db) == 1


def test_a_session_cannot_label_another_reviewers_assignment(
    desk_db: Path, desk_store: Store, desk_prepared: dict[str, Any]
) -> None:
    alice, bob = signed(desk_db, desk_store, "alice"), signed(desk_db, desk_store, "bob")
    _, assignment, _ = take(alice, desk_prepared["run"].run_id)
    stolen = bob.post(f"/assignments/{assignment}/label", FAIL)
    assert stolen.status_code == 403 and "another reviewer" in stolen.text
    assert bob.post(f"/assignments/{assignment}/release", {}).status_code == 403
    assert label_count(desk_db) == 0


def test_odd_task_ids_and_host_names(desk_db: Path, desk_store: Store) -> None:
    from proctor.core.results import TrialResult
    from proctor.core.trace import Trace, TraceEvent
    from proctor.review.server import create_app

    odd = "imported/session?x=1#2"  # imported sessions keep their own ids
    manifest = {
        "trials": 1,
        "agent": {"name": "a", "version": "1"},
        "suite": {"name": "s", "paths": [], "digest": "d"},
    }
    desk_store.create_run("odd-run", manifest)
    answer = TraceEvent(1, 0.0, "answer", {"text": "done"})
    result = TrialResult("odd-run", odd, 0, 1, "failed")
    desk_store.write_trial(result, Trace(f"{odd}#0", "t", [answer]), "done", None)
    desk_store.finish_run("odd-run", "completed", {})
    alice = signed(desk_db, desk_store, "alice")
    listing = alice.client.get("/runs/odd-run/trials").text
    link = re.search(r'href="(/runs/odd-run/trials/[^"]+)"', listing)
    assert link is not None and "%2F" in link.group(1) and "%3F" in link.group(1)
    page = alice.client.get(link.group(1))
    assert page.status_code == 200 and "imported/session?x=1#2" in page.text
    ipv6 = alice.client.get("/", headers={"host": "[::1]:8765"})
    assert ipv6.status_code == 200
    anywhere = desk_client(desk_db, hosts=["*"])
    assert anywhere.get("/signin", headers={"host": "desk.example"}).status_code == 200
    from starlette.testclient import TestClient

    named = TestClient(create_app(desk_db, hosts=["desk.internal"]), base_url="http://x")
    assert named.get("/signin", headers={"host": "desk.internal:8765"}).status_code == 200
    assert named.get("/signin", headers={"host": "127.0.0.1"}).status_code == 400


def test_an_expired_session_signs_the_reviewer_out(desk_db: Path, desk_store: Store) -> None:
    alice = signed(desk_db, desk_store, "alice")
    assert alice.client.get("/", follow_redirects=False).status_code == 200
    sql(desk_store).execute("UPDATE review_sessions SET expires_at = 0")
    assert alice.client.get("/", follow_redirects=False).headers["location"] == "/signin"
    signed(desk_db, desk_store, "bob")  # a new session forgets the expired ones
    (left,) = sql(desk_store).execute("SELECT COUNT(*) FROM review_sessions").fetchone()
    assert left == 1


def test_links_expire_and_removed_reviewers_are_out(
    desk_db: Path, desk_store: Store, desk_prepared: dict[str, Any]
) -> None:
    from desk_support import sign_in
    from proctor.store import desk

    run_id = desk_prepared["run"].run_id
    link = reviewer(desk_store, "alice")
    token = link.split("token=")[1]
    sql(desk_store).execute("UPDATE reviewers SET link_expires_at = 1 WHERE name = 'alice'")
    client = desk_client(desk_db)
    page = client.get(f"/signin?token={token}")
    assert page.status_code == 403 and "expired" in page.text
    assert client.post("/signin", data={"token": token}).status_code == 403
    bob = sign_in(desk_client(desk_db), reviewer(desk_store, "bob"))
    _, assignment, _ = take(bob, run_id)
    bob.post(f"/assignments/{assignment}/label", FAIL)
    _, open_one, _ = take(bob, run_id)  # taken, not labelled
    assert desk.remove_reviewer(desk_store, "bob")
    assert bob.client.get("/", follow_redirects=False).status_code == 303  # session over
    assert desk.assignment(desk_store, open_one) is None  # back in the queue
    assert label_count(desk_db) == 1  # the label stays
    assert not desk.remove_reviewer(desk_store, "bob")
    again = sign_in(desk_client(desk_db), reviewer(desk_store, "bob"))  # re-added: a new link
    assert again.client.get("/").status_code == 200
