"""A rate-limit-aware scheduler for model requests, shared by agents and judges.

Providers meter each endpoint in requests and tokens per minute, and answer 429 (with a
`Retry-After`) past the quota. A run of eight lanes of agents plus their judges meets that
quota quickly; a 429 that escapes after the client's two retries turns a good trial into a
harness `error`. So every request to one endpoint goes through one Scheduler (per event
loop): it spends request and token budgets from token buckets that refill at the
configured rates (a 429 empties the request bucket), and without a request budget keeps a
concurrency window that halves on a 429 and grows back by one per window of successes
(AIMD, as TCP does); it holds every request until the `Retry-After` has passed, and
retries a 429 until `max_wait_s`, so a storm costs time, not trials.
Server errors and dropped connections get `max_retries` retries with backoff; anything
else goes back to the caller at once (docs/architecture.md, Judges).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import math
import random
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from proctor.agents.outages import as_outage, http_status

T = TypeVar("T")

#: Statuses worth retrying besides 429: the provider broke, not the request.
_TRANSIENT = frozenset({408, 409, 500, 502, 503, 504})


@dataclass(frozen=True)
class Limits:
    """An endpoint's budgets: requests and tokens per minute (None: not metered here),
    the most requests in flight, and how long one request may wait out 429s."""

    rpm: float | None = None
    tpm: float | None = None
    max_concurrency: int = 16
    max_wait_s: float = 600.0
    max_retries: int = 2

    def __post_init__(self) -> None:
        for name in ("rpm", "tpm"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive ({value})")
        if self.max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1 ({self.max_concurrency})")

    def tighter(self, other: Limits) -> Limits:
        """The stricter of two configurations of one endpoint."""

        def low(a: float | None, b: float | None) -> float | None:
            return b if a is None else a if b is None else min(a, b)

        return Limits(
            low(self.rpm, other.rpm),
            low(self.tpm, other.tpm),
            min(self.max_concurrency, other.max_concurrency),
            min(self.max_wait_s, other.max_wait_s),
            min(self.max_retries, other.max_retries),
        )


class _Bucket:
    """A token bucket refilling at `per_minute`/60 per second, holding at most one
    second of refill (at least `floor`), so a burst never runs ahead of the quota."""

    def __init__(self, per_minute: float, floor: float, now: float) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(self.rate, floor)
        self.level = self.capacity
        self.stamp = now

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    def wait_for(self, amount: float) -> float:
        """Seconds until `amount` is available (0: now)."""
        amount = min(amount, self.capacity)
        return 0.0 if self.level >= amount else (amount - self.level) / self.rate


def retry_after_s(exc: BaseException) -> float | None:
    """The wait a 429 asks for: `retry-after-ms`, or `retry-after` in seconds or as a date."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(float(raw_ms) / 1000.0, 0.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(float(raw), 0.0)
    except ValueError:
        when = email.utils.parsedate_to_datetime(raw) if raw.strip() else None
        return None if when is None else max(when.timestamp() - time.time(), 0.0)


class Scheduler:
    """One endpoint's gate. `submit(send, tokens=...)` runs `send()` when the budgets allow,
    retries 429s and transient failures, and returns its result."""

    def __init__(
        self,
        endpoint: str,
        limits: Limits | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        seed: int = 0,
    ) -> None:
        self.endpoint = endpoint
        self.limits = limits or Limits()
        self.clock = clock
        self._requests, self._tokens = self._buckets()
        self.window = float(self.limits.max_concurrency)
        self.in_flight = 0
        self.paused_until = 0.0
        self._epoch = 0  # bumped by each decrease: one 429 storm halves the window once
        self._wake = asyncio.Event()
        self._queue = asyncio.Lock()
        self._rng = random.Random(seed)
        self.stats = {"requests": 0, "succeeded": 0, "rate_limited": 0, "retried": 0}

    def _buckets(self) -> tuple[_Bucket | None, _Bucket | None]:
        """Full request and token buckets for the limits."""
        now, lim = self.clock(), self.limits
        return (
            _Bucket(lim.rpm, 1.0, now) if lim.rpm else None,
            _Bucket(lim.tpm, 1.0, now) if lim.tpm else None,
        )

    def configure(self, limits: Limits) -> None:
        """Apply another user's limits for this endpoint: the stricter of both."""
        merged = self.limits.tighter(limits)
        if merged != self.limits:
            self.limits = merged
            self._requests, self._tokens = self._buckets()
            self.window = min(self.window, float(merged.max_concurrency))

    def _delay(self, tokens: float) -> float:
        """Seconds before a request of `tokens` may start (0: now)."""
        now = self.clock()
        waits = [self.paused_until - now]
        if self.in_flight >= max(1, math.floor(self.window)):
            waits.append(math.inf)  # woken by a release
        for bucket, amount in ((self._requests, 1.0), (self._tokens, tokens)):
            if bucket is not None:
                bucket.refill(now)
                waits.append(bucket.wait_for(amount))
        return max(waits)

    async def _acquire(self, tokens: float) -> int:
        """Wait for a slot and the budgets. Requests queue in order behind one lock, and
        only the head waits on the clock or a release: a release wakes one request, not
        every request queued (thousands, when a run's judgments arrive at once)."""
        async with self._queue:
            while True:
                delay = self._delay(tokens)
                if delay <= 0:
                    break
                self._wake.clear()
                timeout = None if math.isinf(delay) else delay
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout)
            for bucket, amount in ((self._requests, 1.0), (self._tokens, tokens)):
                if bucket is not None:
                    bucket.level -= min(amount, bucket.capacity)
            self.in_flight += 1
        self.stats["requests"] += 1
        return self._epoch

    def _release(self) -> None:
        self.in_flight -= 1
        self._wake.set()

    def _rate_limited(self, epoch: int, wait_s: float) -> None:
        self.stats["rate_limited"] += 1
        self.paused_until = max(self.paused_until, self.clock() + wait_s)
        if self._requests is not None:
            # With a request budget the 429 says our count ran ahead of the provider's
            # (clocks, arrival jitter): start counting again from empty, and keep the
            # window, which is not what limits the rate.
            self._requests.level = 0.0
            return
        if epoch == self._epoch:  # the first 429 of a storm decreases, once
            self._epoch += 1
            self.window = max(1.0, self.window / 2.0)

    def _succeeded(self, estimated: float, used: int | None) -> None:
        self.stats["succeeded"] += 1
        self.window = min(float(self.limits.max_concurrency), self.window + 1.0 / self.window)
        if self._tokens is not None and used is not None:
            self._tokens.level = min(self._tokens.capacity, self._tokens.level + estimated - used)

    async def submit(
        self,
        send: Callable[[], Awaitable[T]],
        *,
        tokens: int = 0,
        used_tokens: Callable[[T], int | None] | None = None,
    ) -> T:
        """`send()` under the budgets; `tokens` is the request's estimate for the token
        budget, corrected afterwards by `used_tokens(result)`."""
        started = self.clock()
        backoff, retries = 0.5, 0
        while True:
            epoch = await self._acquire(tokens)
            try:
                result = await send()
            except Exception as exc:
                self._release()
                status = http_status(exc)
                now = self.clock()
                if status == 429:
                    wait_s = retry_after_s(exc)
                    if wait_s is None:
                        wait_s, backoff = backoff * (1 + self._rng.random()), min(backoff * 2, 30.0)
                    if now + wait_s - started > self.limits.max_wait_s:
                        raise
                    self._rate_limited(epoch, wait_s)
                    continue
                transient = status in _TRANSIENT or (status is None and as_outage(exc))
                if not transient or retries >= self.limits.max_retries:
                    raise
                retries += 1
                self.stats["retried"] += 1
                await asyncio.sleep(backoff * (1 + self._rng.random()))
                backoff = min(backoff * 2, 30.0)
                continue
            self._release()
            self._succeeded(tokens, used_tokens(result) if used_tokens else None)
            return result


_SCHEDULERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, Scheduler]] = (
    weakref.WeakKeyDictionary()
)


def scheduler_for(endpoint: str, limits: Limits | None = None) -> Scheduler:
    """The scheduler of `endpoint` on the running event loop: every agent and judge of a
    run that calls one endpoint shares its budgets. Limits given by several users of one
    endpoint combine to the stricter of each."""
    loop = asyncio.get_running_loop()
    schedulers = _SCHEDULERS.setdefault(loop, {})
    found = schedulers.get(endpoint)
    if found is None:
        found = schedulers[endpoint] = Scheduler(endpoint, limits)
    elif limits is not None:
        found.configure(limits)
    return found


def endpoint_key(base_url: str | None) -> str:
    """The endpoint a base URL names (the provider's default when None)."""
    return (base_url or "https://api.openai.com/v1").rstrip("/")


def estimate_tokens(payload: Any) -> int:
    """A request's size in tokens, roughly: four characters a token."""
    return max(1, len(str(payload)) // 4)
