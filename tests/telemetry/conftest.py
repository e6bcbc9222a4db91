from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.telemetry.receiver import Received, serve


@pytest.fixture
def receiver() -> Iterator[tuple[str, Received]]:
    yield from serve()
