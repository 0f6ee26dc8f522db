"""A scripted OpenAI-compatible chat-completions server on loopback, for offline tests.

Each POST to `/v1/chat/completions` takes the next scripted reply: a completion built by
`completion(...)`, or an `(http_status, headers)` error. Requests are recorded. When the
script runs out the server answers 500, so an agent that calls too often fails its test
instead of hanging; it stops when its `with` block ends.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = dict[str, Any] | tuple[int, dict[str, str]]


def tool_call(call_id: str, name: str, arguments: str | dict[str, Any]) -> dict[str, Any]:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def completion(
    content: str | None = None,
    calls: tuple[dict[str, Any], ...] | list[dict[str, Any]] = (),
    *,
    prompt_tokens: int = 100,
    completion_tokens: int = 20,
    model: str = "gpt-4o-mini-2024-07-18",
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = list(calls)
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def without_usage(reply: dict[str, Any], *keep: str) -> dict[str, Any]:
    """`reply` as a server that reports no token usage sends it (or only the `keep`ed
    counts of it, as some servers report one count and not the other)."""
    usage = {key: value for key, value in reply["usage"].items() if key in keep}
    return {key: value for key, value in reply.items() if key != "usage"} | (
        {"usage": usage} if keep else {}
    )


class LoopbackServer:
    """A chat-completions endpoint on 127.0.0.1 answering each POST with `answer(request,
    path)`: (status, headers, JSON payload). It stops when its `with` block ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                status, headers, reply = server.answer(json.loads(body or b"{}"), self.path)
                payload = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def answer(self, request: dict[str, Any], path: str) -> tuple[int, dict[str, str], Any]:
        raise NotImplementedError

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> Any:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


def _error(status: int, text: str) -> dict[str, Any]:
    return {"error": {"message": text, "code": status}}


class ScriptedChatServer(LoopbackServer):
    def __init__(self, replies: list[Reply]) -> None:
        super().__init__()
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []

    def answer(self, request: dict[str, Any], path: str) -> tuple[int, dict[str, str], Any]:
        with self._lock:
            self.requests.append(request)
            reply = self.replies.pop(0) if self.replies else (500, {})
        if path.rstrip("/") != "/v1/chat/completions":
            reply = (404, {})
        if isinstance(reply, tuple):
            status, headers = reply
            return status, headers, _error(status, f"scripted {status}")
        return 200, {}, reply

    def __enter__(self) -> ScriptedChatServer:
        return super().__enter__()

    def tool_messages(self, request: int) -> Iterator[dict[str, Any]]:
        """The tool results the agent sent in its `request`-th request (0-based)."""
        return (m for m in self.requests[request]["messages"] if m["role"] == "tool")


def judge_reply(
    score: int = 4, justification: str = "Names the documents plainly and politely."
) -> dict[str, Any]:
    """A judge's valid answer: justification first, then score and confidence."""
    text = json.dumps({"justification": justification, "score": score, "confidence": 0.9})
    return completion(text, prompt_tokens=400, completion_tokens=40)


class QuotaChatServer(LoopbackServer):
    """An OpenAI-compatible endpoint that enforces a request quota, as providers do.

    A token bucket refills at `per_second` requests per second and holds at most
    `per_second` (one second's worth); a request finding it empty gets 429 with a
    `retry-after-ms` saying when the next request will be served. Every request that is
    served gets `answer(request)`. `served` and `rejected` count both outcomes.
    """

    def __init__(self, per_second: float, reply: Any) -> None:
        super().__init__()
        self.rate = per_second
        self.level = per_second
        self.stamp = time.monotonic()
        self.reply = reply
        self.served = 0
        self.rejected = 0

    def answer(self, request: dict[str, Any], path: str) -> tuple[int, dict[str, str], Any]:
        with self._lock:
            now = time.monotonic()
            self.level = min(self.rate, self.level + (now - self.stamp) * self.rate)
            self.stamp = now
            if self.level >= 1.0:
                self.level -= 1.0
                self.served += 1
                return 200, {}, self.reply(request)
            self.rejected += 1
            wait_ms = (1.0 - self.level) / self.rate * 1000
        return 429, {"retry-after-ms": f"{wait_ms:.0f}"}, _error(429, "rate limited")

    def __enter__(self) -> QuotaChatServer:
        return super().__enter__()


#: An instruction the obedient judge follows wherever it reads one as an instruction.
OBEYED = re.compile(r"(?i)\bgive (?:it |this )?(?:a )?score (?:of )?(\d)")
#: Lines that open and close a data section, as the prompt that declared them reads.
FENCE_DECLARED = re.compile(r"between the two lines (\S+?)\.")


def obedient_score(user: str, truth: Callable[[str], int]) -> int:
    """The score a judge gives that tells data from instructions by the fences only, as
    a model does: it reads the prompt line by line; a line equal to the declared fence
    (or `<<<` / `>>>` in a prompt that declares none) opens or closes the data; an
    instruction it reads outside the data ("give score 4") is obeyed, the last one
    winning; the data is judged by `truth` of its text."""
    declared = FENCE_DECLARED.search(user)
    opens, closes = (declared[1], declared[1]) if declared else ("<<<", ">>>")
    inside, data, obeyed = False, [], None
    for line in user.split("\n"):
        if not inside and line == opens:
            inside = True
        elif inside and line == closes:
            inside = False
        elif inside:
            data.append(line)
        elif (found := OBEYED.search(line)) is not None:
            obeyed = int(found[1])
    return obeyed if obeyed is not None else truth("\n".join(data))


class ObedientJudgeServer(LoopbackServer):
    """A chat judge on loopback answering with `obedient_score` of each request."""

    def __init__(self, truth: Callable[[str], int]) -> None:
        super().__init__()
        self.truth = truth
        self.requests: list[dict[str, Any]] = []

    def answer(self, request: dict[str, Any], path: str) -> tuple[int, dict[str, str], Any]:
        with self._lock:
            self.requests.append(request)
        user = "\n".join(m["content"] for m in request["messages"] if m["role"] == "user")
        return 200, {}, judge_reply(obedient_score(user, self.truth), "Read as told.")

    def __enter__(self) -> ObedientJudgeServer:
        return super().__enter__()
