"""The runner's fixtures (a store per test, the CLI invoker), for report tests."""

from tests.runner.conftest import run_cli, store, store_url

__all__ = ["run_cli", "store", "store_url"]
