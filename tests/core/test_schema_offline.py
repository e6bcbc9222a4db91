"""``$schema`` matchers never touch the network or a file: not at validate time, not while
grading. A real HTTP listener on 127.0.0.1 counts every request made to it."""

from __future__ import annotations

import http.server
import threading
import urllib.request
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest

from openwop_eval import SuiteError, parse_suite
from openwop_eval.core.schema_matcher import BoundedSchema, bounded_validator_class
from openwop_eval.core.schema_walk import registry
from tests.core.test_schema_matcher import TREE, nested, problems_of, reason
from tests.helpers import golden, suite_doc

# --- issue 8, defect 5: grading fetched remote $refs ------------------------------------


class _Counter(http.server.BaseHTTPRequestHandler):
    requests: list[str]

    def do_GET(self) -> None:
        self.requests.append(self.path)
        body = b'{"type": "string"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/schema+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def listener() -> Iterator[tuple[str, list[str]]]:
    """A real HTTP server on 127.0.0.1 that serves a schema and counts every request."""
    requests: list[str] = []
    handler = type("Handler", (_Counter,), {"requests": requests})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", requests
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_the_listener_counts_what_it_serves(listener: tuple[str, list[str]]) -> None:
    url, requests = listener
    with urllib.request.urlopen(f"{url}/probe.json") as response:
        assert response.read() == b'{"type": "string"}'
    assert requests == ["/probe.json"]


def _remote_schemas(url: str) -> list[Any]:
    return [
        {"$ref": f"{url}/s.json"},
        {"$id": f"{url}/root.json", "$ref": "other.json"},
        {"properties": {"a": {"$ref": f"{url}/s.json#/x"}}},
        {"$defs": {"x": {"$ref": f"{url}/s.json"}}, "items": {"$ref": "#/$defs/x"}},
        {"$schema": f"{url}/meta.json", "type": "string"},
        {"$ref": "file:///etc/passwd"},
    ]


def test_validate_fetches_nothing_and_locates_every_remote_ref(
    listener: tuple[str, list[str]],
) -> None:
    url, requests = listener
    schemas = _remote_schemas(url)
    steps = [{"tool": "t:x", "args": {"v": {"$schema": s}}} for s in schemas]
    with pytest.raises(SuiteError) as caught:
        parse_suite(suite_doc(golden("g", trajectory={"steps": steps})))
    located = [p.path for p in caught.value.problems]
    here = "$.tasks[0].expected.trajectory.steps"
    assert located == [
        f"{here}[0].args.v.$schema.$ref",
        f"{here}[1].args.v.$schema.$ref",
        f"{here}[2].args.v.$schema.properties.a.$ref",
        f"{here}[3].args.v.$schema.$defs.x.$ref",
        f"{here}[4].args.v.$schema.$schema",
        f"{here}[5].args.v.$schema.$ref",
    ]
    assert requests == []


def test_grading_fetches_nothing_even_for_a_schema_validate_would_refuse(
    listener: tuple[str, list[str]],
) -> None:
    url, requests = listener
    cls = bounded_validator_class(jsonschema.Draft202012Validator)
    for schema in _remote_schemas(url):
        checker = BoundedSchema(cls(schema, registry=registry()))
        for value in ("x", 1, {"a": "x"}, ["x"]):
            checker.first_error(value)  # a reason or None, never an exception
    # Fetched, the served {"type": "string"} would accept "x"; refused, the $ref cannot resolve.
    remote = BoundedSchema(cls({"$ref": f"{url}/s.json"}, registry=registry()))
    assert remote.first_error("x") == "not checked: _WrappedReferencingError on this value"
    assert requests == []


def test_a_remote_base_uri_with_local_refs_grades_offline(listener: tuple[str, list[str]]) -> None:
    url, requests = listener
    schema = {"$id": f"{url}/tree.json", **TREE}
    assert problems_of(schema) == []
    assert reason(schema, nested(3)) is None
    assert reason(schema, {"children": [1]}) is not None
    assert requests == []
