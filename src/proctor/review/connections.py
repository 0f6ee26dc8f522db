"""Connection limits for the desk's server, which uvicorn does not set by itself.

uvicorn has no deadline for a request's headers: a client that sends them a byte at a
time (slowloris) holds its connection for ever, and a few hundred such clients starve the
desk. Here each request's headers must arrive within `HEADER_TIMEOUT_S` of the connection
opening or of the previous answer, and at most `MAX_CONNECTIONS` are served at once (more
get 503). Imported only when the desk is served (uvicorn is in the `review` extra).
"""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_TIMEOUT_S = 10.0
MAX_CONNECTIONS = 64


class HeaderDeadline(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, closing a connection whose headers come too slowly."""

    header_timeout_s = HEADER_TIMEOUT_S

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._deadline: asyncio.TimerHandle | None = None
        self._arm()

    def handle_events(self) -> None:
        before = self.cycle
        super().handle_events()
        if self.cycle is not before:  # a request's headers have all arrived
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request on this connection gets its own deadline

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.header_timeout_s, self._expire)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            self.transport.close()


def server_config(
    app: Any, host: str, port: int, header_timeout_s: float = HEADER_TIMEOUT_S
) -> uvicorn.Config:
    """The desk's uvicorn settings: the header deadline, the connection cap, no banner."""
    protocol = type("DeskProtocol", (HeaderDeadline,), {"header_timeout_s": header_timeout_s})
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=protocol,
        limit_concurrency=MAX_CONNECTIONS,
        log_level="warning",
        server_header=False,
        lifespan="off",
    )
