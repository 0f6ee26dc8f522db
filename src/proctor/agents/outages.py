"""Who broke: a model provider's failure is infrastructure, not the agent's failure.

Frameworks surface provider failures as their own exception types, often wrapping the
HTTP client's. Counting a 503 or a dropped connection against the agent would deflate
its success rate (docs/architecture.md, Verdicts), so adapters turn these, wherever they
sit in the exception's cause chain, into InfrastructureError (the trial is an `error`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from proctor.agents.agent import InfrastructureError

#: HTTP statuses that say the provider or its configuration failed, not the agent.
INFRASTRUCTURE_STATUSES = frozenset({401, 403, 404, 408, 429})
#: Exception class names (openai, httpx, pydantic-ai, ...) meaning the provider failed.
_OUTAGE_TYPES = frozenset(
    {
        "APIConnectionError",
        "APITimeoutError",
        "ConnectError",
        "ConnectTimeout",
        "ReadTimeout",
        "RemoteProtocolError",
        "ModelConnectionError",
        "ModelRateLimitError",
        "ModelQuotaExceededError",
        "ModelUnavailableError",
        "ModelServerError",
        "ModelAuthenticationError",
        "ModelNotFoundError",
    }
)


def http_status(exc: BaseException) -> int | None:
    """The HTTP status an exception carries (or its `response`), if any."""
    for owner in (exc, getattr(exc, "response", None)):
        status = getattr(owner, "status_code", None)
        if isinstance(status, int):
            return status
    return None


def as_outage(exc: BaseException) -> InfrastructureError | None:
    """The InfrastructureError `exc` amounts to, or None when it is the agent's own."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, InfrastructureError):
            return current
        status = http_status(current)
        if status is not None and (status in INFRASTRUCTURE_STATUSES or status >= 500):
            return InfrastructureError(f"model provider answered HTTP {status}")
        names = {c.__name__ for c in type(current).__mro__}
        if names & _OUTAGE_TYPES or isinstance(current, ConnectionError):
            return InfrastructureError(
                f"model provider unreachable: {type(current).__name__}: {current}"
            )
        current = current.__cause__ or current.__context__
    return None


@contextmanager
def outages_as_infrastructure() -> Iterator[None]:
    """Re-raise provider failures as InfrastructureError; anything else unchanged."""
    try:
        yield
    except Exception as exc:
        outage = as_outage(exc)
        if outage is None or outage is exc:
            raise
        raise outage from exc
