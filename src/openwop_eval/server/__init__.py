"""The OpenWOP eval host: v2 routes for eval runs, live events, summaries and gated deploys.

The app is imported on first use: a run worker (worker.py) imports this package too, and
needs none of the HTTP side.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import create_app
    from .config import HostConfig, load_config

__all__ = ["HostConfig", "create_app", "load_config"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from .app import create_app

        return create_app
    if name in ("HostConfig", "load_config"):
        from . import config

        return getattr(config, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
