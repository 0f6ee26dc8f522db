"""Health reports kept in the store, for `proctor gate --require-health` and the HTML report.

`proctor health` stores its report under the suite's name and content digest; a gate or a
report finds the newest one for a run's suite: the same digest first, else the same
suite name (its tasks whose digest changed since are then not covered by it).

A report is evidence only if `proctor health` wrote it: each is signed with an HMAC-SHA256
over its canonical JSON, keyed by a random secret kept in the store (`meta.health_key`,
made on the first report). A gate given a report (`--health FILE`, or the store's own)
checks the signature with its store's key and the report's internal consistency
(health.verdicts.inconsistencies) before reading a verdict: a hand-written, edited or
foreign report is refused with the reason.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import TYPE_CHECKING, Any

from proctor.core.jsonvalues import canonical
from proctor.health.verdicts import inconsistencies
from proctor.store.health_reports import add_health, health_key, new_health_key

if TYPE_CHECKING:
    from proctor.store.sqlite import Store

#: The report's field holding its signature (left out of what is signed).
SIGNATURE = "signature"


def _mac(key: bytes, report: dict[str, Any]) -> str:
    body = json.loads(json.dumps(report, default=str))  # as it reads back from a file
    body.pop(SIGNATURE, None)
    return hmac.new(key, canonical(body).encode(), hashlib.sha256).hexdigest()


def sign_health(store: Store, report: dict[str, Any]) -> dict[str, Any]:
    """The report with its signature by this store's key (made if the store has none)."""
    key = health_key(store)
    if key is None:
        key = new_health_key(store)
    return {**report, SIGNATURE: {"alg": "hmac-sha256", "mac": _mac(key, report)}}


def health_problems(report: dict[str, Any], key: bytes | None) -> list[str]:
    """Why `report` is not evidence a gate may read: unsigned, signed by another key or
    edited since, or contradicting itself. Empty for a report this store's `proctor
    health` wrote."""
    signature = report.get(SIGNATURE)
    mac = signature.get("mac") if isinstance(signature, dict) else None
    if not isinstance(mac, str):
        return ["the health report is not signed: only what `proctor health` wrote counts"]
    if key is None:
        return ["the store holds no health key: run `proctor health` with this --store"]
    if not hmac.compare_digest(mac, _mac(key, report)):
        return [
            "the health report's signature does not match: edited since `proctor health` "
            "wrote it, or written with another store"
        ]
    return [f"the health report contradicts itself: {why}" for why in inconsistencies(report)]


def save_health(store: Store, report: dict[str, Any]) -> int:
    """Store a health report (`HealthReport.to_dict()`), signed by this store's key;
    returns its id."""
    return add_health(store, sign_health(store, report))
