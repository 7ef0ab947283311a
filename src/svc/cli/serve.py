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

from svc.adapters.ai import describe as ai_lanes
from svc.adapters.database import database_plan
from svc.adapters.git import off_reason as git_off_reason
from svc.adapters.git.port import SshPortInUse
from svc.adapters.nameserver import NameserverPortInUse, dns_address, dns_port_taken, nameserver_plan
from svc.adapters.resolver import build_resolver
from svc.adapters.workers import workerd_binary
from svc.app import create_app, default_adapters, read_area_settings
from svc.auth.invalidation import StoreInUse, check_store_free
from svc.edge import INSTALL_HINT, EdgePortInUse, edge_address, edge_port_taken
from svc.kit.hosts import local_address
from svc.settings import Settings
from svc.supervisor import find_binary, host_port

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

    EXPLAINED = (StoreInUse, EdgePortInUse, NameserverPortInUse, SshPortInUse)

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


def _startup_error(exc: Exception) -> str:
    if isinstance(exc, EdgePortInUse):
        return _edge_port_error(exc.address)
    if isinstance(exc, NameserverPortInUse):
        return _dns_port_error(exc.address)
    if isinstance(exc, SshPortInUse):
        return f"the git SSH port {exc.address} is in use; stop what uses it or choose another with SVC_SSH_PORT"
    return str(exc)


def _asks_itself(settings: Settings, managed: bool) -> bool:
    """Whether SVC_DNS_RESOLVER names the DNS address of svc's own managed PowerDNS."""
    asked = settings.dns_resolver_address
    if asked is None or not managed:
        return False
    own = "127.0.0.1" if settings.dns_host in ("0.0.0.0", "") else settings.dns_host  # noqa: S104
    return asked == (own, settings.dns_port)


def _dns_port_error(address: str) -> str:
    return (f"the DNS port {address} is in use; stop what uses it or choose another with SVC_DNS_PORT "
            f"(or set SVC_DNS_ENABLED=false)")


def _edge_port_error(address: str) -> str:
    return f"the edge port {address} is in use; stop what uses it or choose another with --edge-port"


def _bad_settings(exc: ValidationError) -> str:
    """The variables a ValidationError of the settings names, in one line: SVC_X: what is wrong."""
    said = [f"SVC_{str(e['loc'][0]).upper()} {e['msg'][:1].lower()}{e['msg'][1:]}" if e["loc"] else e["msg"]
            for e in exc.errors()]
    return "; ".join(said)


def _fail(message: str) -> typer.Exit:
    console.print(f"[bold red]error:[/bold red] {escape(message)}")
    return typer.Exit(1)


def _tls_summary(settings: Settings) -> str:
    """The banner's https line: where, with which CA, or how to turn it on."""
    if not settings.acme_directory_url or not settings.edge_tls_port:
        return ("off: the edge serves http only. To serve https, set SVC_ACME_DIRECTORY_URL (Let's Encrypt's, or "
                "any ACME CA) and SVC_EDGE_TLS_PORT (or --edge-tls-port), and give svc an app domain the CA can "
                "reach (docs/tls.md)")
    return (f"on {host_port(local_address(settings.edge_host), settings.edge_tls_port)}, certificates from "
            f"{settings.acme_directory_url}")


def _git_summary(settings: Settings) -> str:
    """The banner's git line: where repositories are cloned from."""
    off = git_off_reason(settings)
    if off is not None:
        return off
    ssh = (f"SSH on {host_port(local_address(settings.ssh_host), settings.ssh_port)}" if settings.ssh_port
           else "no SSH (set SVC_SSH_PORT to serve git over SSH)")
    return f"over HTTPS at {settings.public_url.rstrip('/')}/git/<org>/<project>/<repo>.git; {ssh}"


def _billing_summary(settings: Settings, api_url: str) -> str:
    """The banner's billing line: where plans come from."""
    from svc.adapters.billing import off_reason

    reason = off_reason(settings)
    if reason is not None:
        return reason
    if settings.billing == "fake":
        return ("a fake Polar in this process (development; test card 4242 4242 4242 4242), its webhooks at "
                f"{api_url}/v1/hooks/polar")
    where = "Polar's sandbox" if settings.billing_sandbox else "Polar"
    return f"{where}, product {settings.polar_product_id}; webhooks at {settings.public_url}/v1/hooks/polar"


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
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = Settings()
        read_area_settings()  # each area's own SVC_* settings, checked before anything starts
    except ValidationError as exc:
        raise _fail(_bad_settings(exc)) from None
    if edge_port is not None:
        settings = settings.model_copy(update={"edge_port": edge_port})
    if edge_tls_port is not None:
        settings = settings.model_copy(update={"edge_tls_port": edge_tls_port})
    # Private from the start (the first start's check of the data dir then finds nothing to repair).
    settings.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    if settings.is_sqlite:
        try:  # before anything is said: a second svc on the same data says only this
            check_store_free(settings.data_dir.resolve())
        except StoreInUse as exc:
            raise _fail(str(exc)) from None
    nginx = find_binary(settings.nginx_binary) if settings.edge_enabled else None
    # Else nginx would retry binding for seconds and exit, again and again (the start checks again).
    if nginx is not None and edge_port_taken(settings):
        raise _fail(_edge_port_error(edge_address(settings)))
    dns = nameserver_plan(settings)
    # pdns would exit at once, again and again (the start checks again).
    if dns.mode == "managed" and dns_port_taken(settings):
        raise _fail(_dns_port_error(dns_address(settings.dns_host, settings.dns_port)))
    if not settings.trust_own_zones and _asks_itself(settings, dns.mode == "managed"):
        raise _fail(f"SVC_DNS_RESOLVER ({settings.dns_resolver}) is svc's own nameserver: ownership would be "
                    "proven by svc's own answers. Point it at a recursive resolver that stands for the public "
                    "DNS, or set SVC_TRUST_OWN_ZONES=true for a local run")
    adapters = default_adapters(settings)
    # nginx reaches the API on this address (auth_request checks, the /__svc/ pages).
    app = _StartupErrors(create_app(settings, adapters, run_edge=nginx is not None,
                                    edge_api=f"http://{host_port(local_address(host), port)}", run_nameserver=True,
                                    run_database=True, freeze_startup=True))
    store = "PostgreSQL" if not settings.is_sqlite else f"SQLite at {settings.data_dir / 'svc.sqlite3'}"
    api_url = f"http://{_display_host(host)}:{port}"
    console.print(f"[bold]svc[/bold] state store: {store}")
    console.print(f"mail: {adapters.mail.description}")
    console.print(f"dashboard: {api_url}/")
    console.print(f"API:       {api_url}/v1  (OpenAPI: {api_url}/v1/openapi.json, docs: {api_url}/docs)")
    sample = settings.edge_url(f"<project>-<org>.{settings.app_domain}")
    if not settings.edge_enabled:
        console.print("edge:      off (SVC_EDGE_ENABLED=false): deployments are not served by this process")
    elif nginx is None:
        console.print(f"[bold red]edge:      OFF[/bold red] - nginx ({settings.nginx_binary}) was not found, so "
                      f"deployments are not served. To serve them, {INSTALL_HINT}.")
    else:
        console.print(f"edge:      {sample}/  (nginx {nginx} on "
                      f"{host_port(local_address(settings.edge_host), settings.edge_port)}; log in "
                      f"{settings.data_dir / 'edge'})")
    if nginx is not None:
        workerd = workerd_binary(settings)
        if workerd is None:
            console.print("[bold red]workers:   OFF[/bold red] - workerd was not found, so projects' workers do "
                          "not run (their files are served). To run them, install it with `make setup` (npm).")
        else:
            console.print(f"workers:   workerd {workerd} ({settings.worker_processes} processes and a checker; "
                          f"log in {settings.data_dir / 'workers'})")
    console.print(f"https:     {escape(_tls_summary(settings))}")
    databases = database_plan(settings)
    if databases.mode == "off" and settings.project_db_enabled:
        console.print(f"[bold red]databases:[/bold red] {escape(databases.summary)}")
    else:
        console.print(f"databases: {escape(databases.summary)}")
    console.print(f"billing:   {escape(_billing_summary(settings, api_url))}")
    console.print(f"ai:        {escape(ai_lanes(settings))}")
    console.print(f"git:       {escape(_git_summary(settings))}")
    if dns.mode == "off" and settings.dns_enabled:
        console.print(f"[bold red]dns:[/bold red]       {escape(dns.summary)}")
    else:
        console.print(f"dns:       {escape(dns.summary)}")
    checks = build_resolver(settings, managed_dns=dns.mode == "managed").description
    console.print(f"hostnames: ownership checked every {settings.hostname_verify_seconds:g}s, asking "
                  f"{escape(checks)} (SVC_DNS_RESOLVER) for the public DNS")
    if settings.trust_own_zones:
        console.print("[bold red]ownership: svc's own zones are trusted as proof (SVC_TRUST_OWN_ZONES=true): "
                      "UNSAFE on a shared server, where any org could claim any name[/bold red]")
    if settings.enable_dev_auth:
        console.print(f"dev login: on  (svc login --dev <name> with SVC_API_URL={api_url})")
    logging.getLogger("uvicorn.access").addFilter(_RedactSecrets())
    # aiosqlite's debug lines repeat each statement's parameters (hashes, invite mail bodies).
    logging.getLogger("aiosqlite").setLevel(max(logging.INFO, logging.getLogger().level))
    # One line per call to PowerDNS's API (and any other HTTP port) is noise at info.
    logging.getLogger("httpx").setLevel(max(logging.WARNING, logging.getLogger().level))
    logging.getLogger("uvicorn.error").addFilter(_DropStartupFailed(app))
    config = server_config(app, host=host, port=port, log_level=log_level, access_log=log_level == "debug")
    try:
        asyncio.run(uvicorn.Server(config).serve())
    except SystemExit:  # uvicorn exits when the startup failed
        if app.error is None:
            raise
    if app.error is not None:
        raise _fail(_startup_error(app.error))


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
