"""A real OTLP/HTTP traces receiver on loopback: it accepts ``POST /v1/traces``, decodes the
protobuf ``ExportTraceServiceRequest`` and keeps every span, so tests read back what an
OpenTelemetry collector would receive."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@dataclass
class Received:
    """What the receiver decoded: every span (as protobuf JSON) with its resource, and
    every request's raw body (to look for text that must not be there)."""

    spans: list[dict[str, Any]] = field(default_factory=list)
    resources: list[dict[str, Any]] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)

    def named(self, prefix: str) -> list[dict[str, Any]]:
        return [s for s in self.spans if s["name"].startswith(prefix)]

    def one(self, name: str) -> dict[str, Any]:
        found = [s for s in self.spans if s["name"] == name]
        assert len(found) == 1, [s["name"] for s in self.spans]
        return found[0]

    def children(self, span: dict[str, Any]) -> list[dict[str, Any]]:
        return [s for s in self.spans if s.get("parentSpanId") == span["spanId"]]


def attributes(item: dict[str, Any]) -> dict[str, Any]:
    """A span's or event's attributes as plain values."""
    out: dict[str, Any] = {}
    for attribute in item.get("attributes", []):
        value = attribute["value"]
        (kind, plain), *_ = value.items()
        out[attribute["key"]] = int(plain) if kind == "intValue" else plain
    return out


def evaluations(span: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        attributes(e) for e in span.get("events", []) if e["name"] == "gen_ai.evaluation.result"
    ]


class _Handler(BaseHTTPRequestHandler):
    received: Received

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.paths.append(self.path)
        if self.path != "/v1/traces":
            self.send_error(404)
            return
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        self.received.bodies.append(body)
        for resource_spans in request.resource_spans:
            resource = MessageToDict(resource_spans.resource)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    self.received.spans.append(MessageToDict(span))
                    self.received.resources.append(resource)
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: Any) -> None:
        return None


def serve() -> Iterator[tuple[str, Received]]:
    """A receiver on a free loopback port: (its base URL, what it received)."""
    received = Received()
    handler = type("Handler", (_Handler,), {"received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def dump(received: Received) -> str:
    """Every span, for an assertion's message."""
    return json.dumps(received.spans, indent=1)[:4000]
