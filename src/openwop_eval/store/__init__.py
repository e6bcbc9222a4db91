"""The durable store of runs and their events: SQLite by default, PostgreSQL by URL."""

from .records import TERMINAL_STATUSES, EventRow, RunRecord, RunStatus
from .sql import Store, StoreError, StoreUnavailableError, default_url

__all__ = [
    "TERMINAL_STATUSES",
    "EventRow",
    "RunRecord",
    "RunStatus",
    "Store",
    "StoreError",
    "StoreUnavailableError",
    "default_url",
]
