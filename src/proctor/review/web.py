"""What every page of the desk shares: the guard in front of it, sessions, forms, markup.

The guard answers before any page runs: a request for another host name is refused (a
page elsewhere cannot reach the desk by DNS rebinding), and every request body, of any
method and before sign-in too, is bounded by `MAX_BODY`: a declared Content-Length over
it is refused unread (413); a chunked body (whatever Content-Length it claims beside) is
counted as it arrives and cut at the limit (413); an answer given before the body has
all arrived closes the connection, so what the desk did not read is never read. Every
response gets
the Content-Security-Policy (scripts and styles only from the desk's own two files, no
inline code, no frames, forms only to the desk), `X-Content-Type-Options: nosniff`,
`Referrer-Policy: same-origin` (no address leaves the desk; its own forms keep their
`Origin`, which `no-referrer` would make `null`, so sign-in can check it) and
`Cache-Control: no-store`.

Pages are Jinja templates with autoescaping: trace text is always text. No template marks
trace data safe, and the JSON shown in `<pre>` blocks is escaped like any other string.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterable
from importlib.resources import files
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FunctionLoader, StrictUndefined
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from proctor.core.manifest import Manifest
from proctor.labels.desk_settings import DeskSettings
from proctor.review import auth
from proctor.review.trialview import TaskFiles, TaskView, TrialView, task_view, trial_view
from proctor.store import desk
from proctor.store.desk import Reviewer
from proctor.store.sqlite import RunNotFound, Store

MAX_BODY = 64 * 1024
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
]
_TEMPLATES = files("proctor.review") / "templates"
STATIC = {"desk.css": "text/css; charset=utf-8", "desk.js": "text/javascript; charset=utf-8"}


class BodyTooLarge(Exception):
    """Raised inside the app when a request's body passes `MAX_BODY`: the guard answers."""


class Guard:
    """ASGI middleware: allowed hosts, bounded bodies, security headers on every answer."""

    def __init__(self, app: ASGIApp, hosts: Iterable[str]) -> None:
        """`hosts`: the names the desk answers to; `*` any (a desk bound to every address)."""
        self.app = app
        self.hosts = {h.lower() for h in hosts}

    def _refusal(self, method: str, headers: dict[str, str]) -> tuple[int, str] | None:
        raw = headers.get("host", "").lower()
        host = raw[1 : raw.find("]")] if raw.startswith("[") else raw.rsplit(":", 1)[0]
        if host not in self.hosts and "*" not in self.hosts:
            return 400, "unknown host"
        length = headers.get("content-length")
        chunked = "transfer-encoding" in headers
        if length is not None and not chunked:
            if not (length.isascii() and length.isdigit()):
                return 400, "a bad Content-Length"
            if len(length) > 9 or int(length) > MAX_BODY:  # no 5,000-digit int() either
                return 413, f"request larger than {MAX_BODY // 1024} KiB"
        elif method == "POST" and not chunked:
            return 411, "a POST must give its length"
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        # a body is whatever the server's parser frames (chunks when Transfer-Encoding is
        # given, whatever Content-Length says): counted as it arrives, never trusted
        body_done = "transfer-encoding" not in headers and headers.get("content-length") in (
            None,
            "0",
        )
        received, over, started = 0, False, False

        async def counted() -> Message:
            nonlocal received, over, body_done
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                body_done = not message.get("more_body", False)
                if received > MAX_BODY:
                    over = True
                    raise BodyTooLarge
            return message

        async def secured(message: Message) -> None:
            nonlocal started
            if over:
                return  # the app's own answer to a cut body: the guard gives the 413
            if message["type"] == "http.response.start":
                started = True
                extra = [] if body_done else [(b"connection", b"close")]  # the rest unread
                message["headers"] = [*message.get("headers", []), *HEADERS, *extra]
            await send(message)

        refusal = self._refusal(scope["method"], headers)
        if refusal is None:
            try:
                await self.app(scope, counted, secured)
                return
            except BodyTooLarge:
                if started:
                    return
                refusal = (413, f"request larger than {MAX_BODY // 1024} KiB")
        over = False
        status, text = refusal
        await Response(text, status, media_type="text/plain")(scope, receive, secured)


def _pretty(value: Any) -> str:
    """JSON as indented text (the template escapes it like any other string)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


class Desk:
    """The desk's shared state: the store (a connection per thread), the rubric, the task
    files, the templates; and how a request finds its reviewer."""

    def __init__(self, store_path: str, settings: DeskSettings, tasks: TaskFiles) -> None:
        self.connections = desk.Connections(store_path)
        self.settings = settings
        self.tasks = tasks
        self.env = Environment(
            loader=FunctionLoader(lambda name: (_TEMPLATES / name).read_text(encoding="utf-8")),
            autoescape=True,
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters["pretty"] = _pretty
        self.env.filters["segment"] = lambda text: quote(str(text), safe="")
        self._counts: dict[str, dict[str, int]] = {}
        desk.migrate(self.store())

    def store(self) -> Store:
        return self.connections.get()

    def render(
        self, request: Request, name: str, me: Reviewer | None, code: int = 200, **context: Any
    ) -> HTMLResponse:
        """A page for `me` (None before sign-in); its forms get the session's CSRF token."""
        token = request.cookies.get(auth.COOKIE, "")
        body = self.env.get_template(name).render(
            me=me, csrf=auth.csrf_token(token) if me else "", settings=self.settings, **context
        )
        return HTMLResponse(body, code)

    def run_id(self, request: Request) -> str:
        """The run the address names, or 404."""
        run_id = str(request.path_params["run"])
        if desk.run_status(self.store(), run_id) is None:
            raise HTTPException(404, "no such run")
        return run_id

    def status_counts(self, run_id: str) -> dict[str, int]:
        """Trials by status: an SQL aggregate, kept once the run has finished (its trials
        no longer change) so that paging a big run does not count it again."""
        if run_id in self._counts:
            return self._counts[run_id]
        counts = desk.status_counts(self.store(), run_id)
        if desk.run_status(self.store(), run_id) != "running":
            self._counts[run_id] = counts
        return counts

    def unblinded(self, run_id: str, task_id: str, trial: int) -> tuple[TrialView, TaskView]:
        """A trial shown unblinded, with its task (404 when the run has no such trial)."""
        store = self.store()
        try:
            view = trial_view(store, run_id, task_id, trial, blind=False)
        except RunNotFound:
            raise HTTPException(404, "no such trial") from None
        manifest = Manifest.from_json(desk.run_manifest(store, run_id))
        return view, task_view(self.tasks.task(manifest, task_id), task_id, view.trace)

    def standing(self, me: Reviewer, run_id: str, task_id: str, trial: int) -> desk.Standing:
        """Where a trial stands for `me` (what `proctor.review.access` decides on)."""
        return desk.standing(self.store(), me.id, run_id, task_id, trial)

    def session_reviewer(self, request: Request) -> Reviewer | None:
        token = request.cookies.get(auth.COOKIE)
        if not token:
            return None
        return desk.session_reviewer(self.store(), auth.token_hash(token))

    def reviewer(self, request: Request) -> Reviewer:
        """The signed-in reviewer; a page without one sends the browser to sign in."""
        me = self.session_reviewer(request)
        if me is None:
            raise HTTPException(303, headers={"location": "/signin"})
        return me

    def poster(self, request: Request, form: dict[str, str]) -> Reviewer:
        """The reviewer a POST comes from: a live session and that session's CSRF token,
        else 403 (a form from another site, or an old one, changes nothing)."""
        me = self.session_reviewer(request)
        token = request.cookies.get(auth.COOKIE, "")
        if me is None or not auth.csrf_ok(token, form.get("csrf", "")):
            raise HTTPException(403, "forbidden: missing or wrong CSRF token, or not signed in")
        return me


def posted(
    handler: Callable[[Request, dict[str, str]], Response],
) -> Callable[[Request], Awaitable[Response]]:
    """A POST endpoint: the form read (text fields only) on the event loop, the handler
    run on a worker thread with its own store connection."""

    async def endpoint(request: Request) -> Response:
        data = await request.form(max_files=0, max_fields=50)
        form = {k: v for k, v in data.multi_items() if not isinstance(v, UploadFile)}
        return await run_in_threadpool(handler, request, form)

    return endpoint


#: The integers SQLite stores: a number past them in an address names nothing there.
SQL_INT = (-(2**63), 2**63 - 1)
_NUMBER = re.compile(r"-?[0-9]{1,19}")


def number(text: str | None, default: int) -> int:
    """An integer from the address: ASCII digits within SQLite's range; 400 otherwise."""
    if text is None:
        return default
    if not _NUMBER.fullmatch(text) or not SQL_INT[0] <= int(text) <= SQL_INT[1]:
        raise HTTPException(400, "bad number in the address")
    return int(text)


def see_other(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


def static(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in STATIC:
        raise HTTPException(404, "not found")
    return Response((_TEMPLATES / name).read_text(encoding="utf-8"), media_type=STATIC[name])
