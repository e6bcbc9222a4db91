"""A TCP proxy on loopback that a test can break: reset every connection, or stall them.

Put between a host and its PostgreSQL (the host's database URL names the proxy's port), it
forwards bytes both ways on two threads per connection. :meth:`Proxy.reset` closes every
connection with a TCP reset, as a network blip or a database restart would; :meth:`stall`
stops forwarding (connections stay open, bytes sent wait), as a frozen server or a dead
path would, until :meth:`resume`.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from types import TracebackType


class Proxy:
    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1") -> None:
        self.upstream = (upstream_host, upstream_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._flowing = threading.Event()
        self._flowing.set()
        self._closed = False
        self.resets = 0
        threading.Thread(target=self._accept, name="test-proxy", daemon=True).start()

    def url(self, database_url: str) -> str:
        """``database_url`` (on the upstream's port) through this proxy instead."""
        return database_url.replace(f":{self.upstream[1]}/", f":{self.port}/", 1)

    def reset(self) -> None:
        """Close every open connection with a TCP reset; new ones are accepted as before."""
        with self._lock:
            doomed, self._sockets = self._sockets, set()
            self.resets += 1
        for sock in doomed:
            _abort(sock)

    def stall(self) -> None:
        """Stop forwarding: what either side sends waits in the proxy."""
        self._flowing.clear()

    def resume(self) -> None:
        self._flowing.set()

    def close(self) -> None:
        self._closed = True
        self._flowing.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        self.reset()

    def __enter__(self) -> Proxy:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._open, args=(client,), daemon=True).start()

    def _open(self, client: socket.socket) -> None:
        self._flowing.wait()  # a stalled path does not carry a new connection's greeting
        try:
            server = socket.create_connection(self.upstream, timeout=5)
            server.settimeout(None)
        except OSError:
            _abort(client)
            return
        with self._lock:
            self._sockets.update((client, server))
        for source, sink in ((client, server), (server, client)):
            threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                self._flowing.wait()
                sink.sendall(data)
        except OSError:
            pass
        for sock in (source, sink):
            _abort(sock)
            with self._lock:
                self._sockets.discard(sock)


def _abort(sock: socket.socket) -> None:
    """Close with a reset (SO_LINGER 0), not an orderly FIN."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RD)  # wakes the thread reading it; sends nothing
    with contextlib.suppress(OSError):
        sock.close()
