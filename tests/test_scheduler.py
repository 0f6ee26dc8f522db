"""The rate-limit-aware scheduler: Retry-After, AIMD concurrency, budgets, a real quota."""

from __future__ import annotations

import asyncio
import email.utils
import time
from typing import Any

import pytest

from openai_server import QuotaChatServer, judge_reply
from proctor.agents.scheduler import Limits, Scheduler, retry_after_s, scheduler_for


class _Response:
    def __init__(self, headers: dict[str, str]) -> None:
        self.headers = headers
        self.status_code = 429


class RateLimited(Exception):
    def __init__(self, **headers: str) -> None:
        super().__init__("429")
        self.response = _Response({k.replace("_", "-"): v for k, v in headers.items()})
        self.status_code = 429


def test_retry_after_is_read_in_every_form() -> None:
    assert retry_after_s(RateLimited(retry_after_ms="250")) == 0.25
    assert retry_after_s(RateLimited(retry_after="3")) == 3.0
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= (retry_after_s(RateLimited(retry_after=date)) or 0) <= 31
    assert retry_after_s(RateLimited()) is None
    assert retry_after_s(ValueError("no response")) is None


def test_a_storm_halves_the_window_once_and_successes_grow_it_back() -> None:
    async def scenario() -> list[float]:
        scheduler = Scheduler("e", Limits(max_concurrency=8))

        def first_attempt_limited() -> Any:
            attempts = iter([True])  # this request's first attempt meets the storm

            async def send() -> str:
                await asyncio.sleep(0.001)  # on the wire: the others go out meanwhile
                if next(attempts, False):
                    raise RateLimited(retry_after_ms="1")
                return "ok"

            return send

        async def fine() -> str:
            return "ok"

        windows = [scheduler.window]
        # four requests in flight together meet one storm: one decrease, not four
        sends = [first_attempt_limited() for _ in range(4)]
        assert await asyncio.gather(*(scheduler.submit(s) for s in sends)) == ["ok"] * 4
        windows.append(scheduler.window)
        for _ in range(40):
            await scheduler.submit(fine)
        windows.append(scheduler.window)
        assert scheduler.stats["rate_limited"] == 4 and scheduler.stats["succeeded"] == 44
        return windows

    before, after_storm, recovered = asyncio.run(scenario())
    assert before == 8 and 4 <= after_storm < 5  # halved once (plus a few increases)
    assert recovered == 8  # additive increase, capped at max_concurrency


def test_a_429_beyond_max_wait_goes_back_to_the_caller() -> None:
    async def scenario() -> None:
        scheduler = Scheduler("e", Limits(max_wait_s=1.0))

        async def send() -> str:
            raise RateLimited(retry_after="60")

        with pytest.raises(RateLimited):
            await scheduler.submit(send)

    asyncio.run(scenario())


def test_the_request_budget_holds_requests_until_the_bucket_refills() -> None:
    now = [100.0]
    scheduler = Scheduler("e", Limits(rpm=60), clock=lambda: now[0])  # one per second
    assert scheduler._delay(0) == 0.0
    scheduler._requests.level = 0.0  # type: ignore[union-attr]
    assert scheduler._delay(0) == pytest.approx(1.0)
    now[0] += 0.25
    assert scheduler._delay(0) == pytest.approx(0.75)
    scheduler.paused_until = now[0] + 5  # a Retry-After outranks the bucket
    assert scheduler._delay(0) == pytest.approx(5.0)


def test_one_scheduler_per_endpoint_takes_the_stricter_limits() -> None:
    async def scenario() -> Scheduler:
        a = scheduler_for("http://x/v1", Limits(rpm=600, max_concurrency=8))
        b = scheduler_for("http://x/v1", Limits(rpm=100, tpm=50_000))
        assert a is b and scheduler_for("http://y/v1") is not a
        return a

    merged = asyncio.run(scenario()).limits
    assert (merged.rpm, merged.tpm, merged.max_concurrency) == (100, 50_000, 8)


def test_no_judgment_is_lost_against_a_quota() -> None:
    """Forty judgments at once against 20 requests/s: every one comes back."""
    pytest.importorskip("openai")
    from judge_runs import RUBRIC
    from proctor.judge.chat_judge import ChatJudge
    from proctor.judge.judgment import JudgeView
    from proctor.judge.panel import JudgePanel
    from proctor.tasks.rubrics import load_rubric

    rubric = load_rubric(RUBRIC)

    def answer(request: dict[str, Any]) -> dict[str, Any]:
        return judge_reply(3)

    with QuotaChatServer(20, answer) as server:
        judge = ChatJudge("gpt-4.1-mini", base_url=server.url, api_key="k", max_concurrency=16)
        views = [JudgeView("p", (f"message {i}",)) for i in range(40)]

        async def run() -> list[Any]:
            panel = JudgePanel([judge])
            return await asyncio.gather(*(panel.score(rubric, v) for v in views))

        verdicts = asyncio.run(run())
    assert [v.members[0].score for v in verdicts] == [3] * 40
    assert server.served == 40  # each judgment once; the 429s were waited out


def test_the_token_budget_spends_estimates_and_returns_what_was_not_used() -> None:
    now = [0.0]
    scheduler = Scheduler("e", Limits(tpm=6000), clock=lambda: now[0])  # 100 tokens a second
    bucket = scheduler._tokens
    assert bucket is not None and bucket.level == 100
    assert scheduler._delay(80) == 0.0
    bucket.level -= 80  # what _acquire debits for an 80-token estimate
    assert scheduler._delay(80) == pytest.approx(0.6)  # 20 left: 60 more at 100/s
    scheduler._succeeded(80, 30)  # the request used 30: 50 come back
    assert bucket.level == pytest.approx(70)
