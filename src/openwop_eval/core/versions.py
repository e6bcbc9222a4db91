"""The versions of the formats this package writes and reads back, and the one check a
reader makes of a document's version before it reads anything else of it.

A format's version is raised when one of its members changes meaning or goes away; a
reader refuses a version newer than the one it knows, naming both, rather than misreading
a document written by a later release.
"""

from __future__ import annotations

from typing import Final

REPORT_VERSION: Final = 1
"""``reportVersion`` of the JSON report (``run --report``): what this version writes and
the newest it reads."""


def version_problem(member: str, found: object, newest: int) -> str | None:
    """Why a document whose ``member`` holds ``found`` cannot be read by a reader of
    versions up to ``newest``: not a version at all, or a newer one; None when it can be.
    The message names the member and both versions, never more of the value than that."""
    if isinstance(found, bool) or not isinstance(found, int) or found < 1:
        return f"{member} must be a version number, an integer from 1 to {newest}"
    if found > newest:
        shown = str(found) if found.bit_length() <= 64 else "a very large number"
        return f"{member} {shown} is newer than {newest}, the newest this version reads"
    return None
