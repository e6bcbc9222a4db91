"""Host fixtures (defined in tests.hosts)."""

from tests.hosts import database

__all__ = ["database"]
