"""Host fixtures (defined in tests.hosts)."""

from tests.hosts import database, host, make_host, run_workers

__all__ = ["database", "host", "make_host", "run_workers"]
