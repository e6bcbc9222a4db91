"""An exception as a person reads it: an exception group (a task group's, an MCP client's)
told by its first leaf, the cause a person can act on, not by the group around it."""

from __future__ import annotations


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions at the leaves of ``exc``, depth first (``[exc]`` when it is no group)."""
    found: list[BaseException] = []
    pending = [exc]
    while pending:
        item = pending.pop(0)
        if isinstance(item, BaseExceptionGroup):
            pending[:0] = list(item.exceptions)
        else:
            found.append(item)
    return found or [exc]


def told(exc: BaseException) -> str:
    """``Type: message`` of ``exc``'s first leaf, with how many more there are."""
    found = leaves(exc)
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return f"{type(found[0]).__name__}: {found[0]}{more}"


class InfrastructureError(RuntimeError):
    """A trial could not reach what it needed — its model endpoint, an MCP server, its judge —
    after the retries: the infrastructure failed, not the agent. ``endpoint`` names it (a URL
    or a server's name, never a key): the run says which, and how many trials it cost."""

    def __init__(self, message: str, endpoint: str) -> None:
        super().__init__(message)
        self.endpoint = endpoint


def unreachable(exc: BaseException) -> InfrastructureError | None:
    """The infrastructure failure at a leaf of ``exc`` (an MCP client's exception group may
    wrap it), if there is one."""
    return next((e for e in leaves(exc) if isinstance(e, InfrastructureError)), None)
