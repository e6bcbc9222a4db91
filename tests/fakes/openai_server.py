"""A fake OpenAI-compatible chat-completions endpoint on loopback, for the judge and agent.

It answers each POST with the next scripted reply (or, when none is left, what ``respond``
makes of the request) and keeps every request it was sent, so a test asserts what was sent
as well as what came of it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False
    """Close the connection without answering."""
    hang: bool = False
    """Answer nothing until the test ends (the client must time out)."""


def completion(
    content: Any, usage: dict[str, int] | None = None, *, model: str = "judge-model-2024"
) -> Reply:
    """A chat completion whose message is ``content`` (JSON text unless a string)."""
    text = content if isinstance(content, str) or content is None else json.dumps(content)
    return message_reply({"role": "assistant", "content": text}, usage, model=model)


def tool_calls(
    *calls: tuple[str, Any],
    content: str | None = None,
    usage: dict[str, int] | None = None,
    model: str = "agent-model-2024",
) -> Reply:
    """A completion asking for ``(function, arguments)`` calls; arguments that are not a
    string are sent as their JSON text, as the API does."""
    message = {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
            for i, (name, args) in enumerate(calls)
        ],
    }
    return message_reply(message, usage, model=model, finish="tool_calls")


def message_reply(
    message: Any,
    usage: dict[str, int] | None = None,
    *,
    model: str = "agent-model-2024",
    finish: str = "stop",
) -> Reply:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
    if usage is not None:
        body["usage"] = usage
    return Reply(body=json.dumps(body))


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class FakeEndpoint:
    """Answers each POST with the next scripted reply and keeps what it was sent."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[Seen] = []
        self.respond: Callable[[Seen], Reply] | None = None
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.url = ""

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def take(self, seen: Seen) -> Reply:
        with self.lock:
            self.requests.append(seen)
            if self.replies:
                return self.replies.pop(0)
            if self.respond is not None:
                return self.respond(seen)
            return Reply(418, "no scripted reply left")


class _Handler(BaseHTTPRequestHandler):
    endpoint: FakeEndpoint

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length))
        seen = Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        reply = self.endpoint.take(seen)
        if reply.hang:
            self.endpoint.release.wait(10)
        if reply.drop or reply.hang:
            self.close_connection = True
            return
        data = reply.body.encode()
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean


@contextmanager
def serve() -> Iterator[FakeEndpoint]:
    """A fake endpoint on a free loopback port (``fake.url`` ends in ``/v1``), in a thread."""
    fake = FakeEndpoint()
    handler = type("Handler", (_Handler,), {"endpoint": fake})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield fake
    finally:
        fake.release.set()
        server.shutdown()
        server.server_close()
        thread.join()


@dataclass
class Sleeps:
    """An injected sleep: records each backoff delay and returns at once."""

    delays: list[float] = field(default_factory=list)

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def endpoint_fixture() -> Iterator[FakeEndpoint]:
    """The body of an ``endpoint`` pytest fixture: a fake endpoint for one test."""
    with serve() as fake:
        yield fake
