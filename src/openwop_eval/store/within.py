"""Writes or checks made inside another operation's transaction: a replica's lease on a run
it creates, the fence on each commit, an idempotency answer kept with what it answers."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

from sqlalchemy.engine import Connection

Within: TypeAlias = Callable[[Connection], None]
"""Writes or checks done inside another operation's transaction."""


def chain(*steps: Within | None) -> Within:
    """The steps given (None: none), one after the other, in one transaction."""

    def chained(tx: Connection) -> None:
        for step in steps:
            if step is not None:
                step(tx)

    return chained
