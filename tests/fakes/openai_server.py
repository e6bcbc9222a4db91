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


def response_reply(
    *output: dict[str, Any],
    usage: dict[str, int] | None = None,
    model: str = "agent-model-2024",
    status: str = "completed",
    incomplete: str | None = None,
    error: dict[str, str] | None = None,
) -> Reply:
    """A Responses API response (``POST /responses``) whose ``output`` is these items; usage
    as ``{"input_tokens", "output_tokens"}``, filled out as the API sends it."""
    body: dict[str, Any] = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1_700_000_000,
        "status": status,
        "model": model,
        "output": list(output),
        "error": error,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "instructions": None,
        "metadata": {},
        "parallel_tool_calls": True,
        "temperature": 1.0,
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
    }
    if usage is not None:
        body["usage"] = {
            **usage,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage["input_tokens"] + usage["output_tokens"],
        }
    return Reply(body=json.dumps(body))


def output_message(text: str) -> dict[str, Any]:
    """An assistant ``message`` output item holding ``text``."""
    return {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def response_text(text: str, usage: dict[str, int] | None = None, **options: Any) -> Reply:
    """A response whose output is one message: the model's answer."""
    return response_reply(output_message(text), usage=usage, **options)


def response_calls(
    *calls: tuple[str, Any],
    text: str | None = None,
    usage: dict[str, int] | None = None,
    model: str = "agent-model-2024",
) -> Reply:
    """A response asking for ``(function, arguments)`` calls (``call_0``, ``call_1``…);
    arguments that are not a string are sent as their JSON text, as the API does. A
    ``reasoning`` item comes first, as a reasoning model's does."""
    items: list[dict[str, Any]] = [{"type": "reasoning", "id": "rs_1", "summary": []}]
    if text is not None:
        items.append(output_message(text))
    items += [
        {
            "type": "function_call",
            "id": f"fc_{i}",
            "call_id": f"call_{i}",
            "name": name,
            "arguments": args if isinstance(args, str) else json.dumps(args),
            "status": "completed",
        }
        for i, (name, args) in enumerate(calls)
    ]
    return response_reply(*items, usage=usage, model=model)
