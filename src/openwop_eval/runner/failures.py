"""Why an agent failed, as its trial keeps it: the leaf exception told in one line for the
table and the summary's error, and for the local report and HTML page only, a bounded
traceback of that leaf and the agent's stderr tail. A failure to reach the model endpoint, an
MCP server or the judge after the retries is the infrastructure's (kind ``infrastructure``),
told apart from the agent's own errors."""

from __future__ import annotations

import traceback
from dataclasses import dataclass

from ..base.errors import leaves, told, unreachable
from ..base.limits import MAX_STDERR_CHARS, MAX_TRACEBACK_CHARS, MAX_TRACEBACK_FRAMES
from ..core.names import ERROR_INFRASTRUCTURE
from .tools import cut


@dataclass(frozen=True, slots=True)
class Failure:
    """An agent's exception, as its trial keeps it."""

    error: str
    """``Type: message`` of the leaf (exception groups unwrapped), cut to its limit."""
    kind: str
    """``exception``, or ``infrastructure``."""
    traceback: str | None = None
    stderr: str | None = None
    endpoint: str | None = None
    """What could not be reached (``infrastructure`` only)."""

    def diagnostics(self) -> dict[str, str]:
        """The members a trial's diagnostics gain (the local report, never an event)."""
        found = {"traceback": self.traceback, "stderr": self.stderr, "endpoint": self.endpoint}
        return {key: value for key, value in found.items() if value}


def failure(exc: BaseException) -> Failure:
    """How ``exc``, raised by an agent, fails its trial."""
    infra = unreachable(exc)
    tail = stderr_of(exc)
    if infra is not None:
        return Failure(cut(told(infra)), ERROR_INFRASTRUCTURE, None, tail, infra.endpoint)
    return Failure(cut(told(exc)), "exception", traceback_of(exc), tail)


def stderr_of(exc: BaseException) -> str | None:
    """The end of the agent's stderr that ``exc`` carries (a ``cmd:`` or ``mcp:`` agent's)."""
    stderr = getattr(exc, "stderr", None)
    return stderr[-MAX_STDERR_CHARS:] if isinstance(stderr, str) and stderr else None


def traceback_of(exc: BaseException) -> str:
    """The traceback of ``exc``'s first leaf: its last frames, the end kept within the limit."""
    leaf = leaves(exc)[0]
    lines = traceback.format_exception(leaf, limit=-MAX_TRACEBACK_FRAMES, chain=True)
    text = "".join(lines)
    if len(text) <= MAX_TRACEBACK_CHARS:
        return text
    return "…" + text[-(MAX_TRACEBACK_CHARS - 1) :]
