"""``openwop-eval serve``: the OpenWOP eval host over HTTP."""

from __future__ import annotations

import sys

import click
from rich.console import Console

from .codes import EXIT_INCOMPLETE, EXIT_INVALID


@click.command()
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, exists=True),
    help="The host configuration (TOML). Without it: the development default.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True)
@click.option("--database", metavar="URL", help="Overrides the configuration's database URL.")
@click.option(
    "--log-level",
    default="info",
    show_default=True,
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
)
def serve(
    config_path: str | None, host: str, port: int, database: str | None, log_level: str
) -> None:
    """Serve the OpenWOP v2 eval routes: runs, live events, summaries and gated deploys."""
    import uvicorn

    from ..server import create_app, load_config
    from ..server.config import DEV_KEY, ConfigError, development_config
    from ..store import StoreError

    err = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        if config_path is None:
            config = development_config(database)
            err.print(
                f"[yellow]development default[/yellow]: RFC 0246 conformance fixtures,"
                f" API key {DEV_KEY!r} for tenant 'dev'. Use --config for anything else."
            )
        else:
            config = load_config(config_path)
            if database is not None:
                config = config.model_copy(update={"database": database})
        app = create_app(config, port=port)
    except ConfigError as exc:
        err.print(f"[red]error:[/red] {exc}")
        sys.exit(EXIT_INVALID)
    except StoreError as exc:
        err.print(f"[red]error:[/red] {exc}")
        sys.exit(EXIT_INCOMPLETE)
    uvicorn.run(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=10)
