"""The one clock of records and events: UTC, microseconds, RFC 3339 with ``Z``."""

from __future__ import annotations

import time

_second: tuple[int, str] = (-1, "")
"""The last second formatted, and its text: a run stamps thousands of events a second."""


def utc_stamp() -> str:
    global _second
    seconds, nanos = divmod(time.time_ns(), 1_000_000_000)
    cached, text = _second
    if seconds != cached:
        text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
        _second = (seconds, text)
    return f"{text}.{nanos // 1000:06d}Z"
