"""Who is at the desk: reviewer tokens, sessions and CSRF tokens.

`proctor review add-reviewer NAME` makes a random token and prints it inside a personal
sign-in link; the store keeps only its SHA-256 (a token is 256 random bits, so a plain
hash is enough: there is nothing to guess). Signing in trades the token for a session: a
second random token in an HttpOnly, SameSite=Strict cookie, also stored only as a hash.

Every form carries a CSRF token derived from the session token (an HMAC of it), checked
on every POST: a page on another site can neither read the cookie nor compute the token.
A re-added reviewer gets a new token and loses their open sessions. A link works for a
limited time (`add-reviewer --link-hours`, 72 by default) and a session for 12 hours;
`remove-reviewer` ends both at once and gives the reviewer's unlabelled items back.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from urllib.parse import quote

from proctor.store import desk
from proctor.store.sqlite import Store

COOKIE = "proctor_desk"
SESSION_TTL_S = 12 * 3600
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")
_CSRF_CONTEXT = b"proctor review desk: csrf"


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def csrf_token(session_token: str) -> str:
    return hmac.new(session_token.encode("utf-8"), _CSRF_CONTEXT, hashlib.sha256).hexdigest()


def csrf_ok(session_token: str, sent: str) -> bool:
    return hmac.compare_digest(csrf_token(session_token), sent)


def check_name(name: str) -> str:
    """A reviewer name: 1-40 letters, digits, `_ . -`, starting with a letter or digit."""
    if not _NAME.fullmatch(name):
        raise ValueError(
            f"reviewer name {name[:60]!r}: use 1-40 letters, digits, '_', '.' or '-' "
            "(starting with a letter or digit)"
        )
    return name


def add_reviewer(
    store: Store,
    name: str,
    base_url: str,
    *,
    adjudicator: bool,
    link_hours: int = desk.DEFAULT_LINK_HOURS,
) -> tuple[str, bool]:
    """Register `name` (or give them a new token); returns (their sign-in link, new?).
    The link works for `link_hours`."""
    desk.migrate(store)
    token = new_token()
    added = desk.add_reviewer(
        store, check_name(name), token_hash(token), adjudicator, link_hours * 3600
    )
    return f"{base_url.rstrip('/')}/signin?token={quote(token)}", added
