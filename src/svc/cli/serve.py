"""`svc serve`: the API and the background cycles in one process (uvicorn)."""

from __future__ import annotations

import asyncio
import logging

import typer
import uvicorn
from rich.console import Console

from svc.app import create_app, default_adapters
from svc.settings import Settings

console = Console(stderr=True, soft_wrap=True)


class _RedactQuery(logging.Filter):
    """Access log lines keep the path but never the query: login callbacks carry codes and state."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and len(record.args) >= 3 and isinstance(record.args[2], str):
            path, sep, _ = record.args[2].partition("?")
            if sep:
                record.args = (*record.args[:2], path + "?[redacted]", *record.args[3:])
        return True


def serve(
    host: str = typer.Option("127.0.0.1", help="Address the API listens on"),
    port: int = typer.Option(8080, help="Port of the API"),
    edge_port: int = typer.Option(8081, help="Port of the edge that serves deployments"),
    log_level: str = typer.Option("info", help="debug, info, warning or error"),
) -> None:
    """Run svc: the control API and the background cycles (jobs, mail) in one process."""
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = Settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    adapters = default_adapters(settings)
    app = create_app(settings, adapters)
    store = "PostgreSQL" if not settings.is_sqlite else f"SQLite at {settings.data_dir / 'svc.sqlite3'}"
    api_url = f"http://{_display_host(host)}:{port}"
    console.print(f"[bold]svc[/bold] state store: {store}")
    console.print(f"mail: {adapters.mail.description}")
    console.print(f"API:       {api_url}/v1  (OpenAPI: {api_url}/v1/openapi.json, docs: {api_url}/v1/docs)")
    console.print(f"edge:      port {edge_port} (deployments are served from the projects issue on)")
    if settings.enable_dev_auth:
        console.print(f"dev login: on  (svc login --dev <name> with SVC_API_URL={api_url})")
    logging.getLogger("uvicorn.access").addFilter(_RedactQuery())
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, proxy_headers=True,
                            server_header=False, access_log=log_level == "debug")
    asyncio.run(uvicorn.Server(config).serve())


def _display_host(host: str) -> str:
    return "localhost" if host in ("127.0.0.1", "0.0.0.0", "::") else host  # noqa: S104
