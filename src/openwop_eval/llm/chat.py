"""One request to an OpenAI-compatible ``/chat/completions`` (or ``/responses``) endpoint,
classified for a retry loop, and the backoff between attempts: shared by the ``openai:`` judge
and agent.

The endpoint is untrusted: a reply is read up to :data:`MAX_RESPONSE_BYTES`, must be a JSON
chat completion (or Responses API response), and every text taken from it for an error
message is an excerpt with the API key redacted.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # imported where a request is made: it is slow to import
    import httpx


DEFAULT_BASE_URL = "https://api.openai.com/v1"
MAX_RESPONSE_BYTES = 8 * 1024 * 1024
"""Bytes read from one response (8 MiB); a longer one is an error, never read whole."""

Kind = Literal["ok", "transient", "refused"]
"""``ok`` a chat completion; ``transient`` worth retrying (408, 429, 5xx, transport errors,
a body that is not a completion); ``refused`` another status, which retrying would not help."""

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Api:
    """Where an endpoint's API is (under the base URL) and what a usable 2xx body of it is."""

    path: str
    noun: str
    """What one reply is called in messages ("completion")."""
    what: str
    accept: Callable[[bytes], dict[str, Any] | None]
    """The body as a JSON object of the API's shape, or None."""


@dataclass(frozen=True, slots=True)
class ChatResult:
    """What one POST gave: a completion (``kind`` ok), or why not."""

    kind: Kind
    status: int | None = None
    body: dict[str, Any] | None = None
    """The completion; on ``ok`` its ``choices[0].message`` is an object."""
    excerpt: str = ""
    """The body, whitespace-collapsed, cut short and redacted, for messages."""
    error: str | None = None
    wait: float = 0.0
    """Seconds the server asked us to wait (``Retry-After``) before trying again."""

    @property
    def message(self) -> dict[str, Any]:
        """``choices[0].message`` of a completion (empty when there is none)."""
        if self.body is None:
            return {}
        message: dict[str, Any] = self.body["choices"][0]["message"]
        return message

    @property
    def model(self) -> str | None:
        """The model the endpoint says answered (it may differ from the one asked for)."""
        value = (self.body or {}).get("model")
        return value if isinstance(value, str) else None

    @property
    def usage(self) -> dict[str, Any] | None:
        value = (self.body or {}).get("usage")
        return value if isinstance(value, dict) else None


class ChatEndpoint:
    """POSTs chat completions to ``{base_url}/chat/completions`` (or another :class:`Api`'s
    requests to its path); never shows the key."""

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        client: httpx.AsyncClient | None = None,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        api: Api | None = None,
    ) -> None:
        self.api = api or CHAT
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.max_response_bytes = max_response_bytes
        self._api_key = api_key or None
        self._client = client
        self._owns_client = client is None

    @property
    def url(self) -> str:
        return f"{self.base_url}/{self.api.path}"

    async def post(self, payload: Mapping[str, Any]) -> ChatResult:
        """One attempt, classified; never raises for what the endpoint or network does."""
        import httpx

        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        try:
            async with self._http().stream(
                "POST", self.url, json=dict(payload), headers=headers, timeout=self.timeout
            ) as response:
                data, complete = await self._read(response)
        except httpx.HTTPError as exc:
            error = self.redact(f"transport error: {type(exc).__name__}: {exc}")
            return ChatResult("transient", error=error)
        status = response.status_code
        excerpt = self.excerpt(data.decode("utf-8", "replace"))
        if not complete:
            error = f"the response is larger than {self.max_response_bytes} bytes"
            return ChatResult("transient", status, excerpt=excerpt, error=error)
        if status in (408, 429) or status >= 500:
            error = f"HTTP {status}: {excerpt}"
            return ChatResult("transient", status, None, excerpt, error, _retry_after(response))
        if not 200 <= status < 300:
            return ChatResult("refused", status, excerpt=excerpt, error=f"HTTP {status}")
        body = self.api.accept(data)
        if body is None:
            error = f"the response is not {self.api.what}: {excerpt}"
            return ChatResult("transient", status, excerpt=excerpt, error=error)
        return ChatResult("ok", status, body, excerpt)

    async def _read(self, response: httpx.Response) -> tuple[bytes, bool]:
        """The body up to the limit, and whether it was complete."""
        data = bytearray()
        async for chunk in response.aiter_bytes():
            data.extend(chunk)
            if len(data) > self.max_response_bytes:
                return bytes(data[: self.max_response_bytes]), False
        return bytes(data), True

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            import httpx

            self._client = httpx.AsyncClient(timeout=httpx.Timeout(self.timeout))
            self._owns_client = True
        return self._client

    def redact(self, text: str) -> str:
        return text.replace(self._api_key, "[redacted]") if self._api_key else text

    def excerpt(self, text: str, limit: int = 300) -> str:
        text = " ".join(text.split())
        return self.redact(text if len(text) <= limit else text[:limit] + "…")

    async def aclose(self) -> None:
        """Close the HTTP client if this endpoint created it (an injected one is left open)."""
        if self._client is not None and self._owns_client:
            await self._client.aclose()
            self._client = None


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential backoff between retries: ``base · 2^(n-1)``, at least what the server
    asked for (``Retry-After``), at most ``ceiling`` seconds."""

    base: float = 1.0
    ceiling: float = 30.0
    sleep: Sleep = asyncio.sleep

    def delay(self, retry: int, wait: float = 0.0) -> float:
        """Seconds before retry number ``retry`` (1 for the first retry)."""
        return min(self.ceiling, max(self.base * 2.0 ** (retry - 1), wait))

    async def pause(self, retry: int, wait: float = 0.0) -> None:
        await self.sleep(self.delay(retry, wait))


def env_value(environ: Mapping[str, str], *names: str) -> str | None:
    """The first of ``names`` set to something other than blanks."""
    for name in names:
        value = environ.get(name, "").strip()
        if value:
            return value
    return None


def _completion(data: bytes) -> dict[str, Any] | None:
    """The body as a chat completion whose ``choices[0].message`` is an object, or None."""
    try:
        body = json.loads(data)
        message = body["choices"][0]["message"]
    except (ValueError, LookupError, TypeError):
        return None
    return body if isinstance(body, dict) and isinstance(message, dict) else None


def _response(data: bytes) -> dict[str, Any] | None:
    """The body as a Responses API response, whose ``output`` is an array, or None."""
    try:
        body = json.loads(data)
    except ValueError:
        return None
    ok = isinstance(body, dict) and isinstance(body.get("output"), list)
    return body if ok else None


CHAT = Api("chat/completions", "completion", "a chat completion", _completion)
RESPONSES = Api("responses", "response", "a Responses API response", _response)


def _retry_after(response: httpx.Response) -> float:
    """The server's requested wait in seconds, when it gave one as a number."""
    try:
        wait = float(response.headers.get("retry-after", "0"))
    except ValueError:
        return 0.0
    return wait if 0 <= wait < float("inf") else 0.0
