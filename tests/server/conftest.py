"""Host fixtures: the app in this process (inprocess), and real `serve` processes (tests.hosts)
for what only a process can show: a SIGKILL and a restart, and the published SDK over HTTP."""

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.hosts import database, host, make_host, run_workers
from tests.server.inprocess import AppHost, app_host, host_config

__all__ = ["app", "database", "fresh_app", "host", "make_app", "make_host", "run_workers"]


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def app(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AppHost]:
    """The host app in this process, on a fresh SQLite or PostgreSQL database per module."""
    yield from app_host(request, tmp_path_factory.mktemp("app"))


@pytest.fixture
def make_app(database: str) -> Iterator[Callable[..., AppHost]]:
    """Start the host app in this process on this test's fresh database; keyword arguments
    go to ``host_config``. Apps made again on the same database see what the last one
    stored: closing one ends its lifespan (its runs stop and stay open), starting the next
    recovers them."""
    apps: list[AppHost] = []

    def make(**config: Any) -> AppHost:
        app = AppHost(database, host_config(database, **config))
        apps.append(app)
        return app

    yield make
    for app in apps:
        app.close()


@pytest.fixture
def fresh_app(make_app: Callable[..., AppHost]) -> AppHost:
    """The standard host app in this process, alone on a fresh database (as a `serve`
    process per test was)."""
    return make_app()
