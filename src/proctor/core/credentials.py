"""Credentials never stored: a URL's `user:password@`, a key in a URL's query, a value
under a key-like name (`api_key`, `authorization`, a header) are removed from whatever
proctor records about an endpoint (manifest, exports, `show --json`, reports), whatever
the redaction settings say: redaction is about people's data; a credential is never
data (docs/architecture.md, Judges).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

_NAMES = (
    r"(?:x-)?(?:api[-_]?key|apikey|token|access[-_]?token|authorization|password|passwd|"
    r"secret|client[-_]?secret|cookie|proxy-authorization|bearer)"
)
#: Names whose values are credentials in a settings dict or a header.
SECRET_NAME = re.compile(rf"(?i)^{_NAMES}$")
#: ... and in a URL's query, where `key`, `sig` and the like are credentials too.
QUERY_SECRET_NAME = re.compile(rf"(?i)^(?:{_NAMES}|key|sig|signature|auth|pwd|code)$")
REMOVED = "REMOVED"
_USERINFO = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*(?:://|%3A%2F%2F))[^/\s?#@]*(?:@|%40)")
_QUERY_SECRET = re.compile(
    rf"(?i)((?:[?&]|%3F|%26)(?:{_NAMES}|key|sig|signature|auth|pwd|code)(?:=|%3D))"
    r"[^&#\s\"']*"
)


def public_url(url: str) -> str:
    """The URL without its user information and with every credential-like query
    parameter's value removed; scheme, host, port and path kept (they say which
    deployment it is)."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    query = urlencode(
        [(k, REMOVED if QUERY_SECRET_NAME.match(k) else v) for k, v in parse_qsl(parts.query)]
    )
    return urlunsplit((parts.scheme, host, parts.path, query, ""))


def scrub_text(text: str) -> str:
    """`text` with URL credentials removed wherever a URL occurs in it (an agent or
    judge reference `chat:M?base_url=http://u:p@host/v1&key=...` included)."""
    return _QUERY_SECRET.sub(rf"\g<1>{REMOVED}", _USERINFO.sub(r"\g<1>", text))


def scrub(value: Any) -> Any:
    """A JSON-like value with every credential removed: texts scrubbed, values under
    credential names (and every header value) replaced."""
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            name = str(key)
            if SECRET_NAME.match(name) and item not in (None, ""):
                out[key] = REMOVED
            elif name.lower() == "headers" and isinstance(item, dict):
                out[key] = {k: REMOVED for k in item}
            else:
                out[key] = scrub(item)
        return out
    if isinstance(value, list | tuple):
        return type(value)(scrub(v) for v in value)
    return value
