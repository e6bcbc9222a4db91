"""Ids on the OpenWOP wire: a tenant-bound run id projected into one path segment.

Every UTF-8 byte outside ``[A-Za-z0-9._-]`` becomes ``~HH`` (upper-case hex), so
``acme/r-1`` travels as ``acme~2Fr-1`` (ids.schema.json, RFC 0184 §A.1).
"""

from __future__ import annotations

_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


def project(run_id: str) -> str:
    return "".join(chr(b) if b in _SAFE else f"~{b:02X}" for b in run_id.encode("utf-8"))
