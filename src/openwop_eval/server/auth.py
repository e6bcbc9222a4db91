"""Bearer API keys, each bound to one tenant and a set of scopes."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from starlette.requests import Request

from .config import HostConfig
from .errors import ApiError


@dataclass(frozen=True)
class Principal:
    tenant: str
    name: str
    scopes: frozenset[str]

    def owner(self) -> dict[str, object]:
        """The ``owner`` block of a run snapshot and of ``run.started``."""
        return {
            "tenant": self.tenant,
            "subject": {
                "issuer": "urn:openwop-eval:api-key",
                "subjectId": self.name,
                "tenant": self.tenant,
                "lane": "api-key",
                "kind": "user",
            },
        }


class KeyRing:
    def __init__(self, config: HostConfig) -> None:
        # each key's principal made once: a request only hashes its token and compares
        self._keys = [
            (k.digest, Principal(k.tenant, k.name, frozenset(k.scopes))) for k in config.api_keys
        ]

    def authenticate(self, request: Request) -> Principal:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise ApiError(
                401, "unauthenticated", "an API key is required: Authorization: Bearer <key>"
            )
        digest = hashlib.sha256(token.strip().encode()).hexdigest()
        for known, principal in self._keys:
            if hmac.compare_digest(known, digest):
                return principal
        raise ApiError(401, "unauthenticated", "the API key is not valid")


def require(principal: Principal, scope: str) -> None:
    if scope not in principal.scopes:
        raise ApiError(
            403, "forbidden", f"the API key lacks the scope {scope}", {"requiredScope": scope}
        )
