"""``openwop-eval view``: browse the store's runs, their reports and comparisons."""

from __future__ import annotations

import click

from .shell import consoles, open_store


@click.command()
@click.option("--store", "store_url", metavar="URL", help="Database URL of the run store.")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Interface to listen on (the pages show outputs and arguments: keep it local).",
)
@click.option("--port", type=click.IntRange(0, 65535), default=8766, show_default=True)
def view(store_url: str | None, host: str, port: int) -> None:
    """Serve the run list, each run's HTML report and the comparison of two runs,
    read-only, on http://HOST:PORT/."""
    import uvicorn

    from ..server.app import viewer_app

    _, err = consoles()
    store = open_store(err, store_url)
    err.print(f"viewing {store.url} on http://{host}:{port}/ (Ctrl+C to stop)")
    uvicorn.run(viewer_app(store), host=host, port=port, log_level="warning")
