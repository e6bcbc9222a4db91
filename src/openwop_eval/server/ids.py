"""Run ids on the wire: tenant-bound ``tenant/opaque``, projected into one path segment.

Projection (ids.schema.json): every UTF-8 byte outside ``[A-Za-z0-9._-]`` becomes ``~HH``
(upper-case hex); decoding also accepts percent escapes, which some front doors produce.
"""

from __future__ import annotations

import functools
import re
from urllib.parse import unquote

from ..protocol.ids import project
from .errors import validation

__all__ = ["project", "unproject"]

_ESCAPE = re.compile(r"~([0-9A-Fa-f]{2})")


@functools.lru_cache(maxsize=4096)  # clients read the same few runs again and again
def unproject(segment: str) -> str:
    """The run id a path segment projects; a bad escape or non-UTF-8 bytes are a 400."""
    text = unquote(segment)
    if re.search(r"~(?![0-9A-Fa-f]{2})", text):
        raise validation("a '~' in a run id must start a two-digit hex escape")
    raw = _ESCAPE.sub(lambda m: "%" + m.group(1), text.replace("%", "%25"))
    try:
        return unquote(raw, errors="strict")
    except UnicodeDecodeError:
        raise validation("the run id's escapes do not decode as UTF-8") from None
