"""The OpenAPI 3.1 document of the host's routes, served at ``GET /openapi.json``.

The document is shipped beside this module (``openapi.json``, the one source of truth; a
test checks it against ``ROUTES`` and runs an API fuzzer against a live host with it). The
host fills in what its configuration decides: the largest page ``GET /runs`` serves.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from importlib import resources
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from .errors import PROTOCOL_VERSION
from .state import host

DOCUMENT = "openapi.json"


@functools.cache
def shipped() -> dict[str, Any]:
    """The document as shipped, with the default limits."""
    text = resources.files(__package__).joinpath(DOCUMENT).read_text("utf-8")
    document: dict[str, Any] = json.loads(text)
    return document


def openapi_document(max_page_size: int) -> dict[str, Any]:
    """The document with this host's limits in it."""
    document = copy.deepcopy(shipped())
    for parameter in document["paths"]["/runs"]["get"]["parameters"]:
        if parameter["name"] == "limit":
            parameter["schema"]["maximum"] = max_page_size
    return document


@functools.lru_cache(maxsize=4)
def _encoded(max_page_size: int) -> tuple[bytes, str]:
    body = json.dumps(openapi_document(max_page_size), separators=(",", ":")).encode()
    return body, '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


async def openapi(request: Request) -> Response:
    """No key needed (as discovery); ``ETag`` / ``304`` for revalidation."""
    body, tag = _encoded(host(request).config.limits.max_page_size)
    headers = {"ETag": tag, "Cache-Control": "no-cache", "OpenWOP-Version": PROTOCOL_VERSION}
    if request.headers.get("if-none-match") == tag:
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="application/json", headers=headers)
