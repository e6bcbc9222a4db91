"""Host fixtures: real `serve` processes (tests.hosts) and the app in process (inprocess)."""

from collections.abc import Iterator

import pytest

from tests.hosts import database, host, make_host
from tests.server.inprocess import AppHost, app_host

__all__ = ["app", "database", "host", "make_host"]


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def app(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AppHost]:
    """The host app in this process, on a fresh SQLite or PostgreSQL database per module."""
    yield from app_host(request, tmp_path_factory.mktemp("app"))
