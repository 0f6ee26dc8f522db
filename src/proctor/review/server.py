"""The review desk: a local web application on the store (`proctor review serve`).

Starlette routes, server-rendered Jinja pages, one small script for keyboard shortcuts,
served by uvicorn. It binds to 127.0.0.1; another address needs an explicit flag and gets
a warning, since anyone who can reach the port can try sign-in links. This module wires
the pages (`items.py`, `dashboard.py`) behind the guard (`web.py`) and signs reviewers
in and out (`auth.py`). Starlette and uvicorn come with the `review` extra and are
imported by the desk only.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp

from proctor.labels.desk_settings import DeskSettings
from proctor.review import auth, dashboard
from proctor.review import item_pages as items
from proctor.review.trialview import TaskFiles
from proctor.review.web import Desk, Guard, posted, see_other, static
from proctor.store import desk

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def signin_page(d: Desk, request: Request) -> Response:
    """The page a sign-in link opens: a button, so the token travels in a POST body."""
    token = request.query_params.get("token", "")
    known = bool(token) and desk.reviewer_by_token(d.store(), auth.token_hash(token))
    status = 200 if known or not token else 403
    return d.render(request, "signin.html.j2", None, status, token=token, known=known)


def same_site(request: Request) -> bool:
    """Whether a POST comes from the desk's own page: by `Sec-Fetch-Site` when the browser
    sends it, and by `Origin` (whose host must be the one asked for) whenever it is sent,
    so an older browser's cross-site form is refused too (login CSRF)."""
    if request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        return False
    origin = request.headers.get("origin")
    if origin is None:
        return True
    parts = urlsplit(origin)
    host = request.headers.get("host", "").lower()
    return parts.scheme in ("http", "https") and parts.netloc.lower() == host


def signin(d: Desk, request: Request, form: dict[str, str]) -> Response:
    """Trade a reviewer token for a session cookie (HttpOnly, SameSite=Strict, and Secure
    when the desk is reached over TLS: directly, or behind a proxy uvicorn trusts to say so
    in X-Forwarded-Proto), so a cookie set over https never travels over plain http."""
    if not same_site(request):
        raise HTTPException(403, "forbidden: sign in from the desk's own page")
    token = form.get("token", "")
    reviewer = desk.reviewer_by_token(d.store(), auth.token_hash(token)) if token else None
    if reviewer is None:
        raise HTTPException(403, "forbidden: unknown, expired or replaced sign-in link")
    session = auth.new_token()
    desk.open_session(d.store(), auth.token_hash(session), reviewer.id, auth.SESSION_TTL_S)
    response = see_other("/")
    response.set_cookie(
        auth.COOKIE,
        session,
        max_age=auth.SESSION_TTL_S,
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


def signout(d: Desk, request: Request, form: dict[str, str]) -> Response:
    d.poster(request, form)
    desk.close_session(d.store(), auth.token_hash(request.cookies.get(auth.COOKIE, "")))
    response = see_other("/signin")
    response.delete_cookie(auth.COOKIE, path="/", httponly=True, samesite="strict")
    return response


def _error_page(d: Desk, request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 303 and exc.headers:
        return see_other(exc.headers["location"])
    return d.render(
        request,
        "error.html.j2",
        None,
        exc.status_code,
        status=exc.status_code,
        message=exc.detail,
    )


def create_app(
    store_path: str | Path,
    settings: DeskSettings | None = None,
    task_paths: Sequence[str | Path] = (),
    hosts: Sequence[str] = LOOPBACK_NAMES,
) -> ASGIApp:
    """The desk on the store at `store_path`; `hosts`: the host names it answers to."""
    d = Desk(str(store_path), settings or DeskSettings(), TaskFiles(task_paths))

    def get(path: str, page: Callable[[Desk, Request], Response]) -> Route:
        return Route(path, partial(page, d), methods=["GET"])

    def post(path: str, handler: Callable[[Desk, Request, dict[str, str]], Response]) -> Route:
        return Route(path, posted(partial(handler, d)), methods=["POST"])

    routes = [
        get("/", dashboard.home),
        get("/signin", signin_page),
        post("/signin", signin),
        post("/signout", signout),
        get("/runs/{run}/queue", items.queue_page),
        post("/runs/{run}/next", items.next_from_queue),
        get("/runs/{run}/trials", items.trials_page),
        get("/runs/{run}/trials/{task:path}/{trial}", items.trial_page),
        get("/runs/{run}/agreement", dashboard.agreement_page),
        get("/runs/{run}/adjudicate", dashboard.adjudication_list),
        get("/runs/{run}/adjudicate/{task:path}/{trial}", dashboard.adjudication_page),
        post("/runs/{run}/adjudicate/{task:path}/{trial}", dashboard.post_adjudication),
        get("/items/{item}", items.item_page),
        post("/items/{item}/claim", items.claim_item),
        post("/items/{item}/next", items.next_from_item),
        post("/assignments/{assignment}/label", items.post_label),
        post("/assignments/{assignment}/release", items.release),
        Route("/static/{name}", static, methods=["GET"]),
        Route("/favicon.ico", lambda request: Response(status_code=204), methods=["GET"]),
    ]
    handlers: dict[Any, Any] = {HTTPException: partial(_error_page, d)}
    # the guard wraps the whole app, so even a server error's answer has the headers
    return Guard(Starlette(routes=routes, exception_handlers=handlers), hosts)


def serve(app: ASGIApp, host: str, port: int) -> None:
    """Run the desk until interrupted (uvicorn, one process, requests on a thread pool,
    with the connection limits of `connections.py`)."""
    import uvicorn

    from proctor.review.connections import server_config

    uvicorn.Server(server_config(app, host, port)).run()
