"""`svc serve`: the API, the edge (a private nginx, svc/edge/) and the background cycles in one process."""

from __future__ import annotations

import asyncio
import logging
import re
from pathlib import Path

import typer
import uvicorn
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from svc import components
from svc.adapters.edge.settings import EdgeSettings
from svc.app import create_app, read_config
from svc.auth.invalidation import StoreInUse, check_store_free
from svc.kit.hosts import local_address
from svc.settings import BadSettings, Config, Settings
from svc.supervisor import find_binary, host_port
from svc.supervisor.component import Launch

console = Console(stderr=True, soft_wrap=True)


# Paths that carry a secret in a segment: invite links (/v1/invites/<token>, /invites/<token>).
_SECRET_IN_PATH = re.compile(r"(/invites/)[^/?]+")


class _RedactSecrets(logging.Filter):
    """Access log lines keep the path but never the query (login callbacks carry codes and state)
    nor an invite token in the path."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and len(record.args) >= 3 and isinstance(record.args[2], str):
            path, sep, _ = record.args[2].partition("?")
            path = _SECRET_IN_PATH.sub(r"\1[redacted]", path)
            record.args = (*record.args[:2], path + ("?[redacted]" if sep else ""), *record.args[3:])
        return True


class _StartupErrors:
    """The app, except that the startup failures svc explains in one line (the SQLite data dir is
    served by another svc, the edge or DNS port is taken) are kept from uvicorn, which would print a
    traceback: `error` holds the exception and serve() prints its line."""

    EXPLAINED: tuple[type[Exception], ...] = (StoreInUse, *components.EXPLAINED)

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.error: Exception | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return
        held: list[Message] = []

        async def hold_failure(message: Message) -> None:
            # Starlette reports a failed startup (with the traceback), then raises the exception.
            if message["type"] == "lifespan.startup.failed":
                held.append(message)
            else:
                await send(message)

        try:
            await self.app(scope, receive, hold_failure)
        except self.EXPLAINED as exc:
            self.error = exc
            await send({"type": "lifespan.startup.failed", "message": ""})
            return
        finally:
            if self.error is None:
                for message in held:
                    await send(message)


class _DropStartupFailed(logging.Filter):
    """uvicorn's "Application startup failed. Exiting." when svc prints the reason itself."""

    def __init__(self, startup: _StartupErrors) -> None:
        super().__init__()
        self.startup = startup

    def filter(self, record: logging.LogRecord) -> bool:
        return self.startup.error is None or not record.getMessage().startswith("Application startup failed")


def _bad_settings(exc: ValidationError | BadSettings) -> str:
    """The variables a ValidationError of the settings names, in one line: SVC_X: what is wrong."""
    said = [f"SVC_{str(e['loc'][0]).upper()} {e['msg'][:1].lower()}{e['msg'][1:]}" if e["loc"] else e["msg"]
            for e in exc.errors()]
    return "; ".join(said)


def _fail(message: str) -> typer.Exit:
    console.print(f"[bold red]error:[/bold red] {escape(message)}")
    return typer.Exit(1)


def _config(edge_port: int | None, edge_tls_port: int | None) -> Config:
    """The settings, every area's and component's own among them, checked before anything starts,
    with the options'."""
    refused: list[ValidationError] = []
    try:
        settings = Settings()
    except ValidationError as exc:
        refused.append(exc)
        settings = Settings.model_construct()
    try:
        config = read_config(settings)
    except BadSettings as exc:
        refused += exc.refused
    if refused:
        raise _fail(_bad_settings(BadSettings(refused)))
    given = {"edge_port": edge_port, "edge_tls_port": edge_tls_port}
    return config.updated(**{k: v for k, v in given.items() if v is not None})


def _check(config: Config) -> None:
    """What stops svc before anything is said: another svc on the same SQLite data, a port another
    program holds (else its process would exit, again and again), a setting at odds with another."""
    settings = config.settings
    # Private from the start (the first start's check of the data dir then finds nothing to repair).
    settings.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    if settings.is_sqlite:
        try:
            check_store_free(settings.data_dir.resolve())
        except StoreInUse as exc:
            raise _fail(str(exc)) from None
    why = components.preflight(config)
    if why is not None:
        raise _fail(why)


def _banner(config: Config, launch: Launch, host: str, port: int) -> None:
    settings = config.settings
    store = "PostgreSQL" if not settings.is_sqlite else f"SQLite at {settings.data_dir / 'svc.sqlite3'}"
    api_url = f"http://{_display_host(host)}:{port}"
    console.print(f"[bold]svc[/bold] state store: {store}")
    console.print(f"dashboard: {api_url}/")
    console.print(f"API:       {api_url}/v1  (OpenAPI: {api_url}/v1/openapi.json, docs: {api_url}/docs)")
    for line in components.banner(config, launch):
        label = f"{line.label}:".ljust(10)
        shown = f"[bold red]{label}[/bold red]" if line.alarm else label
        console.print(f"{shown} {escape(line.text)}")
    if settings.enable_dev_auth:
        console.print(f"dev login: on  (svc login --dev <name> with SVC_API_URL={api_url})")


def _logging(log_level: str, app: _StartupErrors) -> None:
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("uvicorn.access").addFilter(_RedactSecrets())
    # aiosqlite's debug lines repeat each statement's parameters (hashes, invite mail bodies).
    logging.getLogger("aiosqlite").setLevel(max(logging.INFO, logging.getLogger().level))
    # One line per call to PowerDNS's API (and any other HTTP port) is noise at info.
    logging.getLogger("httpx").setLevel(max(logging.WARNING, logging.getLogger().level))
    logging.getLogger("uvicorn.error").addFilter(_DropStartupFailed(app))


def serve(
    host: str = typer.Option("127.0.0.1", help="Address the API listens on"),
    port: int = typer.Option(8080, help="Port of the API"),
    edge_port: int | None = typer.Option(None, help="Port of the edge that serves deployments "
                                         "(default SVC_EDGE_PORT, 8081)"),
    edge_tls_port: int | None = typer.Option(None, help="Port where the edge serves https with the certificates "
                                             "svc gets over ACME (default SVC_EDGE_TLS_PORT; unset: http only)"),
    log_level: str = typer.Option("info", help="debug, info, warning or error"),
) -> None:
    """Run svc: the control API, the edge (nginx) and the background cycles (jobs, mail) in one process."""
    config = _config(edge_port, edge_tls_port)
    _check(config)
    # nginx and workerd reach the API on this address (auth_request checks, the /__svc/ pages).
    edge_api = f"http://{host_port(local_address(host), port)}"
    edge = find_binary(config.settings_of(EdgeSettings).nginx_binary) is not None
    app = _StartupErrors(create_app(config, run_edge=edge, edge_api=edge_api, run_nameserver=True,
                                    run_database=True, freeze_startup=True))
    _banner(config, Launch(api_url=f"http://{_display_host(host)}:{port}"), host, port)
    _logging(log_level, app)
    served = server_config(app, host=host, port=port, log_level=log_level, access_log=log_level == "debug")
    try:
        asyncio.run(uvicorn.Server(served).serve())
    except SystemExit:  # uvicorn exits when the startup failed
        if app.error is None:
            raise
    if app.error is not None:
        raise _fail(components.explain(app.error) or str(app.error))


def server_config(app: ASGIApp, *, host: str, port: int, log_level: str = "info",
                  access_log: bool = False) -> uvicorn.Config:
    """The HTTP server `svc serve` runs, in one place: the benchmarks and the tests that need a
    server process of their own run exactly this."""
    return uvicorn.Config(app, host=host, port=port, log_level=log_level, proxy_headers=True,
                          server_header=False, access_log=access_log)


async def serve_reporting_port(config: uvicorn.Config, port_file: Path) -> None:
    """Serve `config` (port 0: a free port) and, once it listens, write the bound port to
    `port_file` atomically, for the process that started this one to read. (uvicorn binds the
    socket itself: a socket handed over with `sockets=` and created without proto=IPPROTO_TCP
    makes asyncio skip TCP_NODELAY, ~40 ms per request.)"""
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            await task
            return
        await asyncio.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    tmp = port_file.with_suffix(".tmp")
    tmp.write_text(str(port))
    tmp.replace(port_file)
    await task


def _display_host(host: str) -> str:
    return "localhost" if host in ("127.0.0.1", "0.0.0.0", "::") else host  # noqa: S104
