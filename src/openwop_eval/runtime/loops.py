"""The event loop this project's own loops run on: uvloop where it is installed (it is a
dependency on every platform but Windows), as uvicorn runs the host's, else asyncio's."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def run_fast(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)`` on the loop of :func:`loop_factory`."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(coro)
