"""The one error envelope: ``{"error": code, "message": text, "details"?: {...}}``.

Every refusal the host makes is an :class:`ApiError` with a registered code and its
registered status; one handler renders them, the router's own refusals (no such path or
method) get the same envelope, and anything unexpected becomes a content-free 500
``internal_error``: the exception is logged, never sent.
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

log = logging.getLogger("openwop_eval.server")

PROTOCOL_VERSION = "2.0"


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.details = details
        self.headers = headers or {}


def envelope(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"error": code, "message": message}
    if details:
        body["details"] = details
    return body


def error_response(error: ApiError) -> JSONResponse:
    headers = {"OpenWOP-Version": PROTOCOL_VERSION, **error.headers}
    if error.status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    return JSONResponse(
        envelope(error.code, error.message, error.details),
        status_code=error.status,
        headers=headers,
    )


async def handle_api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return error_response(exc)


async def handle_http_error(request: Request, exc: Exception) -> Response:
    """The router's refusals. No route for a method is ``404 not_found`` as well: the
    registry has no code for 405, and an operation not served is a 404 (wire surface)."""
    assert isinstance(exc, HTTPException)
    if exc.status_code in (404, 405):
        return error_response(not_found(f"no {request.method} route on this path"))
    return error_response(ApiError(400, "validation_error", "the request is malformed"))


RETRY_AFTER_S = 5
"""The ``Retry-After`` of a ``503 store_unavailable``: about one round of the store's retries."""


def store_unavailable() -> ApiError:
    return ApiError(
        503,
        "store_unavailable",
        "the store is unavailable for now; try again later",
        headers={"Retry-After": str(RETRY_AFTER_S)},
    )


async def handle_store_unavailable(request: Request, exc: Exception) -> Response:
    """The store is away past its retries (store/retry.py): a content-free 503 the client
    may retry, never a 500; logged as a line, not a traceback (it is not a bug)."""
    log.warning("%s %s: %s", request.method, request.url.path, exc)
    return error_response(store_unavailable())


async def handle_log_version(request: Request, exc: Exception) -> Response:
    """A run whose log a newer version wrote (a replica not yet upgraded, on a shared store):
    ``409 run_state_conflict`` naming the event and both versions (content-free), not a 500;
    the request succeeds on a host that reads it."""
    log.warning("%s %s: %s", request.method, request.url.path, exc)
    return error_response(ApiError(409, "run_state_conflict", str(exc)))


async def handle_unexpected(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return error_response(ApiError(500, "internal_error", "the host failed to answer"))


def not_found(what: str = "the resource") -> ApiError:
    return ApiError(404, "not_found", f"{what} was not found")


def validation(message: str, details: dict[str, Any] | None = None) -> ApiError:
    return ApiError(400, "validation_error", message, details)
