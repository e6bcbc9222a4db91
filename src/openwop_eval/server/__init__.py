"""The OpenWOP eval host: v2 routes for eval runs, live events, summaries and gated deploys."""

from .app import create_app
from .config import HostConfig, load_config

__all__ = ["HostConfig", "create_app", "load_config"]
