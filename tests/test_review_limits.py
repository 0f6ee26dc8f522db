"""The desk's limits against hostile requests: bodies counted as they arrive (chunked or
not, before sign-in), numbers in addresses, the settings file, the store's desk schema.

Body tests speak raw HTTP/1.1 over a socket to the desk served by uvicorn on 127.0.0.1,
since a client library would frame the body itself.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from desk_support import FAIL, live_desk, signed
from proctor import Store
from proctor.review.web import MAX_BODY
from store_sql import sql

FORM = "application/x-www-form-urlencoded"
CHUNKED = f"Host: 127.0.0.1\nContent-Type: {FORM}\nTransfer-Encoding: chunked\n"


def exchange(url: str, head: str, body: Iterable[bytes]) -> tuple[int, bool]:
    """Send a request's head and body pieces, then read the answer: (status, whether the
    desk closes the connection after it: says so and does)."""
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        s.sendall(head.replace("\n", "\r\n").encode() + b"\r\n")
        try:
            for piece in body:
                s.sendall(piece)
        except OSError:
            pass  # the desk closed the connection: the rest is not read
        answer, closed, says = b"", False, False
        try:
            while not closed:
                data = s.recv(65536)
                answer += data
                closed = not data
                head, _, rest = answer.partition(b"\r\n\r\n")
                lines = head.lower().split(b"\r\n")[1:]
                fields = dict(line.split(b": ", 1) for line in lines if b": " in line)
                says = fields.get(b"connection") == b"close"
                if _ and not says and len(rest) >= int(fields.get(b"content-length", b"0")):
                    break  # the whole answer, on a connection kept open
        except TimeoutError:
            pass  # still open: the desk waits for more
        except ConnectionResetError:
            closed = True
    assert answer.startswith(b"HTTP/1.1 "), answer[:80]
    assert closed or not says
    return int(answer.split(b" ", 2)[1]), says


def chunks(total: int, size: int = 8192) -> list[bytes]:
    """`total` bytes of form body as chunks, with no last chunk: the body goes on."""
    return [b"%x\r\n%s\r\n" % (size, b"a" * size) for _ in range(total // size)]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterable[str]:
    path = tmp_path_factory.mktemp("limits") / "p.db"
    Store(path).close()
    with live_desk(path) as url:
        yield url


@pytest.mark.parametrize(
    "head",
    [
        f"POST /signin HTTP/1.1\n{CHUNKED}",
        # a false, small Content-Length beside the chunks: the chunks are what is read
        f"POST /signin HTTP/1.1\nContent-Length: 10\n{CHUNKED}",
        f"POST /signout HTTP/1.1\n{CHUNKED}",
    ],
)
def test_a_chunked_body_is_cut_at_the_limit_before_sign_in(served: str, head: str) -> None:
    status, closed = exchange(served, head, chunks(MAX_BODY + 16 * 1024))
    assert (status, closed) == (413, True)  # answered without waiting for the rest


def test_bodies_within_the_limit_still_reach_the_desk(served: str) -> None:
    head = f"POST /signin HTTP/1.1\n{CHUNKED}"
    status, closed = exchange(served, head, [b"7\r\ntoken=x\r\n0\r\n\r\n"])
    assert (status, closed) == (403, False)  # an unknown token: the form was read, kept alive
    length = f"POST /signin HTTP/1.1\nHost: 127.0.0.1\nContent-Type: {FORM}\nContent-Length: 7\n"
    assert exchange(served, length, [b"token=x"]) == (403, False)


@pytest.mark.parametrize("method", ["POST", "GET"])
def test_a_declared_length_over_the_limit_is_refused_unread(served: str, method: str) -> None:
    head = f"{method} /signin HTTP/1.1\nHost: 127.0.0.1\nContent-Length: {48 * 2**20}\n"
    status, closed = exchange(served, head, [b"a" * 1024])
    assert (status, closed) == (413, True)


def test_a_body_nobody_reads_closes_the_connection(served: str) -> None:
    """A GET (or a POST to no page) with a body: answered, then the connection closes so
    the rest of the body is not read."""
    head = "GET /signin HTTP/1.1\nHost: 127.0.0.1\nTransfer-Encoding: chunked\n"
    status, closed = exchange(served, head, chunks(16 * 1024))
    assert (status, closed) == (200, True)
    head = "POST /nowhere HTTP/1.1\nHost: 127.0.0.1\nTransfer-Encoding: chunked\n"
    assert exchange(served, head, chunks(16 * 1024)) == (404, True)


def test_a_post_without_a_length_is_411(served: str) -> None:
    head = f"POST /signin HTTP/1.1\nHost: 127.0.0.1\nContent-Type: {FORM}\n"
    assert exchange(served, head, [])[0] == 411


def test_a_content_length_of_thousands_of_digits_is_refused(served: str) -> None:
    head = f"POST /signin HTTP/1.1\nHost: 127.0.0.1\nContent-Length: {'9' * 5000}\n"
    assert exchange(served, head, [b"token=x"])[0] in (400, 413)


# -- numbers in addresses ------------------------------------------------------------------

HUGE = str(2**63)  # one past SQLite's largest integer


def test_numbers_past_sqlites_range_are_400_or_404(
    desk_db: Path, desk_store: Store, desk_prepared: dict[str, Any]
) -> None:
    run_id = desk_prepared["run"].run_id
    alice = signed(desk_db, desk_store, "alice", adjudicator=True)
    task = desk_prepared["run"].results[0].task_id
    for number in (HUGE, f"-{HUGE}1", "9" * 40, "1_0", "١٢"):
        for path in (
            f"/items/{number}",
            f"/runs/{run_id}/trials/{task}/{number}",
            f"/runs/{run_id}/adjudicate/{task}/{number}",
            f"/runs/{run_id}/queue?after={number}",
            f"/runs/{run_id}/trials?after={task}:{number}",
        ):
            assert alice.client.get(path).status_code in (400, 404), path
        for path in (
            f"/items/{number}/claim",
            f"/items/{number}/next",
            f"/assignments/{number}/label",
            f"/assignments/{number}/release",
            f"/runs/{run_id}/adjudicate/{task}/{number}",
        ):
            assert alice.post(path, FAIL).status_code in (400, 403, 404), path
    assert alice.client.get(f"/items/{2**63 - 1}").status_code == 404  # in range: no such item


# -- the store's desk schema ----------------------------------------------------------------


def test_a_newer_desk_schema_is_refused_never_rewritten(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from proctor.cli import main
    from proctor.labels.ground_truth import run_truth
    from proctor.review.server import create_app
    from proctor.store import StoreError, desk

    path = tmp_path / "p.db"
    with Store(path) as store:
        desk.migrate(store)
        sql(store).execute("UPDATE meta SET value = '99' WHERE key = 'desk_schema_version'")
        for opening in (
            lambda: desk.migrate(store),
            lambda: run_truth(store, "any-run"),
            lambda: create_app(path),
        ):
            with pytest.raises(StoreError, match="desk schema 99; this proctor reads up to"):
                opening()
    for command in (["list-reviewers"], ["add-reviewer", "x"], ["remove-reviewer", "x"]):
        result = CliRunner().invoke(main, ["review", *command, "--store", str(path)])
        assert result.exit_code == 2 and "newer proctor" in result.output, result.output
    with Store(path) as store:
        kept = sql(store).execute("SELECT value FROM meta WHERE key = 'desk_schema_version'")
        assert kept.fetchone()[0] == "99"
        assert "link_expires_at" not in sql(store).execute("SELECT * FROM reviewers").description


def test_a_version_1_desk_gains_the_new_columns_and_keeps_its_reviewers(tmp_path: Path) -> None:
    from proctor.review.auth import token_hash
    from proctor.store import desk

    old = desk._SCHEMA.replace(",\n    removed_at REAL,\n    link_expires_at REAL\n", "\n")
    assert old != desk._SCHEMA
    with Store(tmp_path / "p.db") as store:
        sql(store).executescript(old)
        sql(store).execute("INSERT INTO meta VALUES ('desk_schema_version', '1')")
        sql(store).execute(
            "INSERT INTO reviewers(name, token_hash, adjudicator, created_at)"
            " VALUES ('ann', ?, 0, 0)",
            (token_hash("t"),),
        )
        desk.migrate(store)
        assert desk.desk_version(store) == desk.DESK_SCHEMA_VERSION
        found = desk.reviewer_by_token(store, token_hash("t"))
        assert found is not None and found.name == "ann"  # the old link works, for a while


def test_a_version_2_desk_keeps_its_labels_as_given_blind(tmp_path: Path) -> None:
    from proctor.store import desk
    from proctor.store import label_tables as stored

    old = desk._SCHEMA.replace(",\n    informed INTEGER NOT NULL DEFAULT 0\n", "\n")
    assert old != desk._SCHEMA
    with Store(tmp_path / "p.db") as store:
        sql(store).executescript(old)
        sql(store).executescript(
            "PRAGMA foreign_keys = OFF;"  # labels alone, without their items
            "INSERT INTO meta VALUES ('desk_schema_version', '2');"
            "INSERT INTO reviewers(name, token_hash, adjudicator, created_at)"
            " VALUES ('ann', 'h', 0, 0);"
            "INSERT INTO labels(assignment_id, reviewer_id, run_id, task_id, trial, value,"
            " passed, reason, note, ambiguous, rubric_version, created_at)"
            " VALUES (1, 1, 'r', 't', 0, 'fail', 0, 'x', '', 0, 'v', 0),"
            " (1, 1, 'r', 't', 0, 'pass', 1, 'x', '', 0, 'v', 1);"
        )
        desk.migrate(store)
        assert desk.desk_version(store) == desk.DESK_SCHEMA_VERSION
        [label] = stored.current_labels(store, "r")
        assert (label.value, label.informed) == ("pass", False)  # counted as it was before


# -- desk.yaml ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("scale: {kind: score, min: 0, max: 100000000, pass_at: 50}\n", 1, "100,000,001 points"),
        (
            "scale:\n  kind: score\n  min: -99999999999999999999\n  max: 5\n  pass_at: 4\n",
            1,
            "points",
        ),
        ("guidance: " + "x" * 20_000 + "\n", 1, "guidance"),
        ("reasons:\n" + "".join(f"  - {{code: c{i}, text: t}}\n" for i in range(60)), 1, "reasons"),
    ],
)
def test_the_settings_file_is_bounded(tmp_path: Path, text: str, line: int, message: str) -> None:
    from proctor.core.documents import SpecError
    from proctor.labels.desk_settings import load_settings

    path = tmp_path / "desk.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as caught:
        load_settings(path)
    first = caught.value.lines()[0]
    assert first.startswith(f"{path}:{line}: ") and message in first, first


def closed_by_desk(s: socket.socket) -> bool:
    """Whether the desk closes `s` before the socket's own (generous) timeout."""
    try:
        while s.recv(1024):
            pass
    except TimeoutError:
        return False
    except ConnectionResetError:
        pass
    return True


def test_headers_sent_a_byte_at_a_time_lose_their_connection(tmp_path: Path) -> None:
    """Slowloris: headers that never finish are cut at the deadline, on a new connection
    and on a kept-alive one after its first answer; a prompt request is still answered."""
    path = tmp_path / "p.db"
    Store(path).close()
    with live_desk(path, header_timeout_s=0.5) as url:
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(b"GET /signin HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            assert closed_by_desk(s)
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(b"GET /favicon.ico HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert s.recv(1024).startswith(b"HTTP/1.1 204")
            s.sendall(b"GET /signin HTTP/1.1\r\nHost: 127.0.")
            assert closed_by_desk(s)
        status, _ = exchange(url, "GET /signin HTTP/1.1\nHost: 127.0.0.1\n", [])
        assert status == 200
