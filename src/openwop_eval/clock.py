"""The one clock of records and events: UTC, microseconds, RFC 3339 with ``Z``."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_stamp() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
