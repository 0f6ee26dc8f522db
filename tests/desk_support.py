"""The review desk for tests: stores with real runs queued, reviewers, signed-in clients,
and the app served by a real uvicorn on a free loopback port."""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from proctor import Runner, Store
from proctor.agents import load_agent
from proctor.env.suite import load_suite
from proctor.labels.desk_settings import DeskSettings
from proctor.review.assignment import enqueue
from proctor.review.auth import add_reviewer
from proctor.review.connections import HEADER_TIMEOUT_S, server_config
from proctor.review.queue import ReviewConfig, review_queue
from proctor.review.server import create_app
from proctor.store.export import RunData, store_run
from report_runs import EXAMPLES

_CSRF = re.compile(r'name="csrf" value="([0-9a-f]+)"')
ORIGIN = "http://127.0.0.1:8765"


def run_clinical(store: Store, agent: str, trials: int = 3) -> RunData:
    suite = load_suite([EXAMPLES / "clinical"])
    ref = f"{EXAMPLES / 'clinical'}/agents.py:{agent}"
    report = Runner(suite, load_agent(ref), trials=trials, store=store, agent_ref=ref).run()
    return store_run(store, report.run_id)


def queue(
    store: Store,
    run: RunData,
    *,
    share: float = 0.2,
    baseline: RunData | None = None,
    pairs: bool = False,
    sample_rate: float = 0.05,
) -> int:
    """Queue `run` at the desk; returns the number of items."""
    routed = review_queue(run, baseline, ReviewConfig(sample_rate=sample_rate))
    pair_with = baseline if pairs else None
    _, items = enqueue(store, run, routed, double_share=share, seed=0, baseline=pair_with)
    return len(items)


def reviewer(store: Store, name: str, *, adjudicator: bool = False, url: str = ORIGIN) -> str:
    """A reviewer's sign-in link."""
    return add_reviewer(store, name, url, adjudicator=adjudicator)[0]


def csrf_of(html: str) -> str:
    found = _CSRF.search(html)
    assert found, "the page has a form with a CSRF token"
    return found.group(1)


@dataclass
class Session:
    """A signed-in reviewer's HTTP client and CSRF token."""

    client: Any  # starlette TestClient or httpx.Client
    csrf: str

    def post(self, url: str, data: dict[str, str], **kw: Any) -> Any:
        return self.client.post(url, data={"csrf": self.csrf, **data}, **kw)


def sign_in(client: Any, link: str) -> Session:
    token = link.split("token=", 1)[1]
    page = client.get(f"/signin?token={token}")
    assert page.status_code == 200
    done = client.post("/signin", data={"token": token}, follow_redirects=False)
    assert done.status_code == 303, done.text
    return Session(client, csrf_of(client.get("/").text))


def desk_client(store_path: Path, settings: DeskSettings | None = None, **kw: Any) -> Any:
    from starlette.testclient import TestClient

    app = create_app(store_path, settings, **kw)
    return TestClient(app, base_url=ORIGIN)


@contextmanager
def live_desk(
    store_path: Path,
    settings: DeskSettings | None = None,
    header_timeout_s: float = HEADER_TIMEOUT_S,
    **kw: Any,
) -> Iterator[str]:
    """The desk served by uvicorn in a thread, as `proctor review serve` serves it; yields
    its base URL."""
    import uvicorn

    app = create_app(store_path, settings, **kw)
    server = uvicorn.Server(server_config(app, "127.0.0.1", 0, header_timeout_s))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "the desk did not start"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(20)


def http_client(base_url: str) -> httpx.Client:
    return httpx.Client(base_url=base_url, timeout=60)


def signed(db_path: Path, store: Store, name: str, **kw: Any) -> Session:
    """A new reviewer `name`, signed in to a desk on `db_path`."""
    adjudicator = kw.pop("adjudicator", False)
    return sign_in(desk_client(db_path, **kw), reviewer(store, name, adjudicator=adjudicator))


def label_count(db_path: Path) -> int:
    with sqlite3.connect(db_path) as db:
        return int(db.execute("SELECT COUNT(*) FROM labels").fetchone()[0])


def assignment_on(page: str) -> int | None:
    """The assignment whose label form an item page shows (None: it shows none)."""
    found = re.search(r"/assignments/(\d+)/", page)
    return int(found.group(1)) if found else None


def take(s: Session, run_id: str) -> tuple[int, int, str]:
    """Next item for a reviewer: (item id, assignment id, the item page)."""
    went = s.post(f"/runs/{run_id}/next", {}, follow_redirects=False)
    assert went.status_code == 303 and went.headers["location"].startswith("/items/")
    page = s.client.get(went.headers["location"])
    assignment = assignment_on(page.text)
    assert assignment is not None
    return int(went.headers["location"].rsplit("/", 1)[1]), assignment, page.text


def claim(s: Session, item_id: int) -> int | None:
    """Ask for an item; the assignment when the reviewer got it."""
    s.post(f"/items/{item_id}/claim", {})
    return assignment_on(s.client.get(f"/items/{item_id}").text)


def first_double(store: Store, run_id: str) -> Any:
    """The first queued item of a run that wants two reviewers."""
    from proctor.store import desk

    return next(i for i, *_ in desk.items_page(store, run_id, 0, -1, 10**6) if i.needed == 2)


FAIL = {"verdict_0": "fail", "reason": "wrong_outcome", "note": "step 4 writes the wrong value"}
PASS = {"verdict_0": "pass", "reason": "correct", "note": ""}
