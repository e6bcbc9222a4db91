"""Open-loop HTTP/1.1 load for ``host_bench.py``: raw asyncio sockets, no client library.

Why not httpx: at 1,000 req/s its per-request cost made the load generator the bottleneck.
Here a request is one prebuilt ``bytes`` written to a keep-alive connection and an answer is
a status line and ``Content-Length`` read from a buffer — tens of microseconds of CPU each,
so one process offers over 2,000 req/s and leaves the other core to the host. uvloop is used
when it imports (the project installs it with the host); plain asyncio works too.

Open loop, no coordinated omission: request i is due at ``start + due[i]``, however slow
earlier answers are, and its latency counts from that due time — a request that waits for a
free connection, or for the clock tick that sends it, waits inside its latency. The clock
wakes at most once per millisecond (libuv's timer resolution) and sends every request due
by then, so up to ~1 ms of that latency is the generator's, reported as ``lag``.

Each process (``generate``) holds ``conns`` connections; a due request takes an idle one or
queues for the next to free up. Answers must be ``HTTP/1.1 200`` with ``Content-Length``;
anything else counts as an error and the connection is opened again. Whatever is still
unanswered ``grace`` seconds after the last due time counts as ``timeout``.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import math
import re
import time
import zlib
from collections.abc import Coroutine
from typing import Any, TypeVar, cast

TIMER_S = 0.001
T = TypeVar("T")


def generate(
    port: int,
    headers: dict[str, str],
    paths: list[str],
    due: list[float],
    at: float,
    conns: int,
    grace: float = 10.0,
) -> dict[str, Any]:
    """One generator process: GET ``paths[i]`` when wall-clock time ``at + due[i]`` comes."""
    return run(_generate(port, headers, paths, due, at, conns, grace))


def percentile(ordered: list[float], p: float) -> float:
    """Nearest-rank percentile of a sorted list."""
    return ordered[max(0, min(len(ordered), math.ceil(len(ordered) * p / 100)) - 1)]


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run``, on uvloop when it imports."""
    with contextlib.suppress(ImportError):
        import uvloop

        return uvloop.run(main)
    return asyncio.run(main)


class _Conn(asyncio.Protocol):
    """One keep-alive connection: at most one request in flight (no pipelining)."""

    def __init__(self, load: _Load) -> None:
        self.load, self.buffer = load, bytearray()
        self.transport: asyncio.Transport | None = None
        self.due: float | None = None  # the in-flight request's due time
        self.need = -1  # the full answer's length, once its head is read
        self.status = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's are not subclasses

    def send(self, request: bytes, due: float) -> None:
        assert self.transport is not None
        self.due, self.need = due, -1
        self.transport.write(request)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if self.need < 0:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self.buffer[:end]).lower()
            length = head.find(b"\r\ncontent-length:")
            if not head.startswith(b"http/1.1 ") or length < 0:
                self._fail("no content-length" if length < 0 else "bad status line")
                return
            value = head[length + 17 :].split(b"\r\n", 1)[0]
            self.need = end + 4 + int(value)
            self.status = head[9:12]
        if len(self.buffer) >= self.need:
            del self.buffer[: self.need]
            due, self.due = self.due, None
            assert due is not None
            self.load.answered(self, due, self.status)

    def _fail(self, reason: str) -> None:
        self.load.errors[reason] += 1
        self.due = None
        self.load.settle()
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.load.lost(self)


class _Load:
    def __init__(self, port: int, requests: dict[str, bytes]) -> None:
        self.port, self.requests = port, requests
        self.idle: list[_Conn] = []
        self.waiting: collections.deque[tuple[bytes, float]] = collections.deque()
        self.latencies: list[float] = []
        self.errors: collections.Counter[str] = collections.Counter()
        self.outstanding = 0
        self.done = 0.0
        self.closing = False
        self.drained = asyncio.Event()

    async def connect(self) -> None:
        loop = asyncio.get_running_loop()
        _, conn = await loop.create_connection(lambda: _Conn(self), "127.0.0.1", self.port)
        self._free(conn)

    def submit(self, request: bytes, due: float) -> None:
        self.outstanding += 1
        if self.idle:
            self.idle.pop().send(request, due)
        else:
            self.waiting.append((request, due))

    def answered(self, conn: _Conn, due: float, status: bytes) -> None:
        now = time.perf_counter()
        self.done = now
        if status == b"200":
            self.latencies.append((now - due) * 1000)
        else:
            self.errors[f"HTTP {status.decode()}"] += 1
        self.settle()
        self._free(conn)

    def lost(self, conn: _Conn) -> None:
        with contextlib.suppress(ValueError):
            self.idle.remove(conn)
        if conn.due is not None:
            self.errors["connection lost"] += 1
            self.settle()
        if not self.closing:
            task = asyncio.get_running_loop().create_task(self._reconnect())
            task.add_done_callback(lambda _: None)

    async def _reconnect(self) -> None:
        try:
            await self.connect()
        except OSError:
            self.errors["connect failed"] += 1

    def _free(self, conn: _Conn) -> None:
        if self.waiting:
            conn.send(*self.waiting.popleft())
        else:
            self.idle.append(conn)

    def settle(self) -> None:
        self.outstanding -= 1
        if self.outstanding == 0:
            self.drained.set()


async def _generate(
    port: int,
    headers: dict[str, str],
    paths: list[str],
    due: list[float],
    at: float,
    conns: int,
    grace: float,
) -> dict[str, Any]:
    head = "".join(f"{k}: {v}\r\n" for k, v in {"Host": f"127.0.0.1:{port}", **headers}.items())
    requests = {p: f"GET {p} HTTP/1.1\r\n{head}\r\n".encode() for p in set(paths)}
    load = _Load(port, requests)
    await asyncio.gather(*(load.connect() for _ in range(conns)))  # before the clock starts
    start = time.perf_counter() + (at - time.time())
    await asyncio.sleep(max(0.0, start - time.perf_counter()))
    cpu, lag, i, n = time.process_time(), 0.0, 0, len(paths)
    while i < n:
        now = time.perf_counter()
        if start + due[i] <= now:
            lag = max(lag, now - (start + due[i]))  # the batch's oldest
        while i < n and start + due[i] <= now:
            load.submit(requests[paths[i]], start + due[i])
            i += 1
        if i < n:
            await asyncio.sleep(max(TIMER_S, start + due[i] - time.perf_counter()))
    sent = time.perf_counter() - start
    if load.outstanding:
        load.drained.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(load.drained.wait(), grace)
    if load.outstanding:
        load.errors["timeout"] += load.outstanding
    load.closing = True
    cpu = time.process_time() - cpu
    for conn in load.idle:
        if conn.transport is not None:
            conn.transport.close()
    return {
        "latencies": load.latencies,
        "errors": load.errors,
        "lag": lag,
        "sent": sent,
        "done": max(load.done - start, sent),
        "cpu": cpu,
    }


class _Events(asyncio.Protocol):
    """One Server-Sent Events stream over chunked HTTP/1.1, in gzip when the host sends it
    so: the ``id:`` of every frame, and whether the last frame was a terminal event.

    While the stream lasts it only reads the chunks; :meth:`decode` inflates and parses them
    afterwards. On a 2-core machine the subscribers' decoding (20 streams of 4.8 MB: about
    half a core while a run plays) would otherwise take the cores the host and its run need;
    real subscribers decode on their own machines."""

    def __init__(self, done: asyncio.Future[None]) -> None:
        self.gunzip: Any = None  # zlib's decompressor, for a gzip stream
        self.pieces: list[bytes] = []  # the chunks' data, as read
        # ``text`` is the event stream decoded so far; it always starts with a newline, so
        # every field line follows one (what _ID looks for)
        self.done, self.raw, self.text = done, bytearray(), bytearray(b"\n")
        self.head, self.left, self.skip = False, 0, 0  # the rest of the chunk, of its CRLF
        self.sequences: list[int] = []
        self.last_event = b""
        self.error: str | None = None
        self.chunks = 0  # the host's writes: one chunk each
        self.wire = 0  # bytes read off the socket

    def data_received(self, data: bytes) -> None:
        self.wire += len(data)
        if self.raw:  # a piece of a head or a chunk-size line was left over
            self.raw += data
            data = bytes(self.raw)
            self.raw.clear()
        at = 0
        if not self.head:
            end = data.find(b"\r\n\r\n")
            if end < 0:
                self.raw += data
                return
            head = data[:end].lower()
            if not head.startswith(b"http/1.1 200") or b"transfer-encoding: chunked" not in head:
                self._end(f"answer: {head[:12].decode(errors='replace')}")
                return
            if b"\r\ncontent-encoding: gzip" in head:
                self.gunzip = zlib.decompressobj(wbits=31)
            self.head, at = True, end + 4
        view = memoryview(data)  # chunk data is copied once, into text
        while at < len(data):
            if self.skip:  # the CRLF after a chunk's data
                take = min(self.skip, len(data) - at)
                at, self.skip = at + take, self.skip - take
                continue
            if self.left == 0:  # a chunk-size line
                end = data.find(b"\r\n", at)
                if end < 0:
                    self.raw += view[at:]
                    break
                size = int(data[at:end].split(b";")[0], 16)
                at = end + 2
                if size == 0:
                    self._end(None)
                    return
                self.left, self.chunks = size, self.chunks + 1
            take = min(self.left, len(data) - at)
            self.pieces.append(bytes(view[at : at + take]))
            at, self.left = at + take, self.left - take
            if self.left == 0:
                self.skip = 2
        view.release()

    def decode(self) -> None:
        """The sequences and the last event of what was read (once the stream has ended)."""
        for piece in self.pieces:
            self.text += self.gunzip.decompress(piece) if self.gunzip else piece
            if len(self.text) > 1 << 20:
                self._frames(final=False)
        self.pieces.clear()
        self._frames(final=True)

    def _frames(self, final: bool) -> None:
        """Take the ids of the complete frames in ``text``; keep the rest."""
        end = len(self.text) if final else self.text.rfind(b"\n\n") + 2
        if end <= 1:
            return
        with memoryview(self.text) as whole, whole[:end] as block:
            self.sequences += map(int, _ID.findall(block))
        last = self.text.rfind(b"\nevent: ", 0, end)
        if last >= 0:
            self.last_event = bytes(self.text[last + 8 : self.text.index(b"\n", last + 1)])
        del self.text[: end - 1]  # keeps the frame's last newline: text starts with one

    def _end(self, error: str | None) -> None:
        if not self.done.done():  # the first end counts: closing after the last chunk is none
            self.error = self.error or error
            self.done.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        self._end("connection closed before the last chunk")


_ID = re.compile(rb"\nid: (\d+)\n")  # a literal prefix: re searches for it quickly


async def subscribe(
    port: int, headers: dict[str, str], path: str, n: int, timeout: float
) -> list[dict[str, Any]]:
    """``n`` concurrent SSE streams of ``path``, each read to its end: per stream the
    sequences received, the last event type, the error if any, the seconds it took and the
    bytes it read. ``Accept-Encoding: gzip`` in ``headers`` asks for a gzip stream."""
    loop = asyncio.get_running_loop()
    head = "".join(f"{k}: {v}\r\n" for k, v in {"Host": f"127.0.0.1:{port}", **headers}.items())
    request = f"GET {path} HTTP/1.1\r\n{head}Accept: text/event-stream\r\n\r\n".encode()
    start = time.perf_counter()

    async def one() -> tuple[_Events, float]:
        done: asyncio.Future[None] = loop.create_future()
        transport, stream = await loop.create_connection(lambda: _Events(done), "127.0.0.1", port)
        transport.write(request)
        try:
            await asyncio.wait_for(done, timeout)
        except TimeoutError:
            stream.error = f"no end within {timeout:g} s"
        transport.close()
        return stream, time.perf_counter() - start

    results = []
    for stream, seconds in await asyncio.gather(*(one() for _ in range(n))):
        stream.decode()  # every stream has ended: decoding takes no core from the host
        out: dict[str, Any] = {"sequences": stream.sequences}
        out["lastEvent"] = stream.last_event.decode()
        out |= {"error": stream.error, "seconds": seconds, "chunks": stream.chunks}
        results.append(out | {"bytes": stream.wire})
    return results
