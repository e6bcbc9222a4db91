"""The headers every request of an ``a2a:URL`` agent carries: the protocol version, and the
credentials the environment gives (read when the agent is resolved, never told)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..base import AgentSpecError

TOKEN_ENV = "OPENWOP_EVAL_A2A_TOKEN"
"""A bearer token: every request carries ``Authorization: Bearer TOKEN``."""
HEADERS_ENV = "OPENWOP_EVAL_A2A_HEADERS"
"""A JSON object of header names to string values, added to every request."""
VERSION_HEADER = "A2A-Version"
PROTOCOL_VERSION = "1.0"
"""The A2A version this client speaks, sent as ``A2A-Version`` with every request."""
_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
"""A header name (RFC 9110's token)."""


@dataclass(frozen=True)
class CredentialVariables:
    """The environment variables an agent's credentials are read from: by default the
    standard two; a host agent's entry names its own (``api_key_env``, ``headers_env``)."""

    token: str | None = TOKEN_ENV
    headers: str | None = HEADERS_ENV


def headers_from(
    environ: Mapping[str, str], variables: CredentialVariables = CredentialVariables()
) -> dict[str, str]:
    """``A2A-Version``, then the headers of ``variables.headers``, then the bearer token of
    ``variables.token``; what cannot be used is a usage error naming its variable, never
    sent."""
    headers = {VERSION_HEADER: PROTOCOL_VERSION}
    named, token_env = variables.headers, variables.token
    raw = environ.get(named, "").strip() if named else ""
    if raw:
        try:
            given = json.loads(raw)
        except ValueError as exc:
            raise AgentSpecError(f"{named} is not JSON: {exc}") from None
        if not isinstance(given, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in given.items()
        ):
            raise AgentSpecError(f'{named} must be a JSON object of strings: {{"X-Key": "…"}}')
        for name, value in given.items():
            _check_header(name, value)
        headers.update(given)
    token = environ.get(token_env, "").strip() if token_env else ""
    if token:
        if any(name.lower() == "authorization" for name in headers):
            raise AgentSpecError(f"{token_env} and an Authorization header in {named}: give one")
        _check_header("Authorization", token)
        headers["Authorization"] = f"Bearer {token}"
    return headers


def _check_header(name: str, value: str) -> None:
    """A header that can be sent: a token of a name, a value of ASCII without line breaks;
    the value is never told."""
    if not (name.isascii() and value.isascii()):
        raise AgentSpecError(f"the A2A header {name!r} cannot be sent (not ASCII)")
    if not _NAME.fullmatch(name) or any(c in value for c in "\r\n\0"):
        raise AgentSpecError(f"the A2A header {name!r} is not a valid header")
