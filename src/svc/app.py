"""create_app(settings, adapters) -> FastAPI: the control API, its lifespan and its workers."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from svc import __version__
from svc.adapters.blobs import build_blob_store
from svc.adapters.idp import build_identity_provider
from svc.adapters.mail.eml import EmlDirectorySender
from svc.adapters.mail.smtp import SmtpSender
from svc.adapters.nameserver import build_nameserver, nameserver_plan, start_nameserver
from svc.adapters.resolver import build_resolver
from svc.auth.cache import AuthCache
from svc.auth.invalidation import CacheKeeper
from svc.context import Adapters, AppContext
from svc.db import migrate, open_database
from svc.domains.access import edge_router as access_edge
from svc.domains.access.router import router as access_router
from svc.domains.audit.router import router as audit_router
from svc.domains.credentials.router import router as credentials_router
from svc.domains.deployments import jobs as deployment_jobs
from svc.domains.deployments import service as deployments
from svc.domains.deployments.router import is_bundle_upload
from svc.domains.deployments.router import router as deployments_router
from svc.domains.dns import jobs as dns_jobs
from svc.domains.dns.router import router as dns_router
from svc.domains.hostnames import edge_router as hostnames_edge
from svc.domains.hostnames import jobs as hostname_jobs
from svc.domains.hostnames.router import router as hostnames_router
from svc.domains.identity.idp_router import router as idp_router
from svc.domains.identity.router import dev_router
from svc.domains.identity.router import router as identity_router
from svc.domains.invites.router import router as invites_router
from svc.domains.mail import jobs as mail_jobs
from svc.domains.notifications.router import router as notifications_router
from svc.domains.operations import jobs as operation_jobs
from svc.domains.operations.router import router as operations_router
from svc.domains.orgs.router import router as orgs_router
from svc.domains.projects import service as projects
from svc.domains.projects.router import router as projects_router
from svc.domains.secrets.router import router as secrets_router
from svc.edge import start_edge
from svc.errors import BadRequest, error_response, install_error_handlers
from svc.jobs.registry import JobRegistry
from svc.jobs.worker import Worker, worker_name
from svc.kit.crypto import Keyring, load_or_create_secret_key
from svc.kit.files import PRIVATE_UMASK, make_private
from svc.openapi import install_openapi
from svc.settings import Settings
from svc.web import install_dashboard

log = logging.getLogger("svc")

MAX_JSON_BODY = 1024 * 1024


def default_adapters(settings: Settings) -> Adapters:
    mail = SmtpSender(settings.smtp_url) if settings.smtp_url else EmlDirectorySender(settings.mail_dir())
    return Adapters(mail=mail, idp=build_identity_provider(settings), blobs=build_blob_store(settings),
                    nameserver=build_nameserver(settings))


def build_registry(settings: Settings) -> JobRegistry:
    """Every area registers its job kinds and periodic cycles here."""
    registry = JobRegistry()
    mail_jobs.register(registry)
    operation_jobs.register(registry)
    deployment_jobs.register(registry)
    dns_jobs.register(registry)
    hostname_jobs.register(registry, settings)
    return registry


class RequestGuard:
    """Refuse NUL in URLs and oversized request bodies before they are read (bundle uploads set their own bound)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            # NUL cannot be stored in PostgreSQL text and is never part of a valid name or token.
            if b"%00" in scope.get("raw_path", b"") or b"%00" in scope.get("query_string", b""):
                await error_response(BadRequest("The URL must not contain NUL characters"))(scope, receive, send)
                return
            if not is_bundle_upload(scope):
                for name, value in scope.get("headers", []):
                    if name == b"content-length" and value.isdigit() and int(value) > self.limit:
                        resp = error_response(BadRequest(f"The request body is over {self.limit} bytes"))
                        await resp(scope, receive, send)
                        return
                # A chunked body (no Content-Length) is counted as it arrives.
                receive = _bounded(receive, self.limit)
        await self.app(scope, receive, send)


def _bounded(receive: Receive, limit: int) -> Receive:
    """`receive`, refusing a body once it passes `limit` bytes. Raised as FastAPI's HTTPException,
    which its body reading passes on as it is (any other error becomes a vague 400)."""
    seen = 0

    async def bounded() -> Message:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                raise HTTPException(status_code=400, detail=f"The request body is over {limit} bytes")
        return message

    return bounded


async def keep_data_private(settings: Settings) -> None:
    """Everything svc writes from now on is the process user's alone (umask 077), and what an
    earlier svc left readable by others under the data directory is made private, with a warning.
    The edge's nginx workers run as the data directory's owner, so they still read the sites."""
    os.umask(PRIVATE_UMASK)
    repaired = await asyncio.to_thread(make_private, settings.data_dir)
    if repaired:
        log.warning("%d files and directories under %s were readable by other users; they are now private "
                    "(directories 0700, files 0600)", repaired, settings.data_dir)


@contextlib.asynccontextmanager
async def server_context(settings: Settings) -> AsyncIterator[AppContext]:
    """The state store (migrated) and adapters without the API, the worker or the edge: for the
    server-side commands an operator runs beside `svc serve` (`svc admin ...`)."""
    await keep_data_private(settings)
    db = open_database(settings)
    try:
        await migrate(db)
        adapters = default_adapters(settings)
        yield AppContext(settings=settings, db=db, adapters=adapters, worker_name=worker_name(),
                         keyring=Keyring(load_or_create_secret_key(settings)))
    finally:
        await db.dispose()


def create_app(settings: Settings, adapters: Adapters | None = None, *, run_workers: bool = True,
               registry: JobRegistry | None = None, run_edge: bool = False, edge_api: str | None = None,
               run_nameserver: bool = False) -> FastAPI:
    """run_edge: start and supervise this process's edge (nginx, svc/edge/) when settings.edge_enabled;
    edge_api is where nginx reaches this API (http://host:port; default SVC_PUBLIC_URL).
    run_nameserver: start and supervise a private PowerDNS (adapters/nameserver/process.py) when no
    nameserver was handed in or configured and pdns_server is installed."""
    registry = registry or build_registry(settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[dict[str, Any]]:
        await keep_data_private(settings)
        db = open_database(settings)
        auth_cache = AuthCache()
        keeper = CacheKeeper(settings, auth_cache, db.session_class)
        try:
            # SQLite: this process owns the data dir; PostgreSQL: LISTEN (auth/invalidation.py).
            await keeper.start()
        except BaseException:
            await db.dispose()
            raise
        await migrate(db)
        ctx = AppContext(settings=settings, db=db, adapters=adapters or default_adapters(settings),
                         worker_name=worker_name(), keyring=Keyring(load_or_create_secret_key(settings)))
        app.state.ctx = ctx
        app.state.auth_cache = auth_cache
        app.state.auth_keeper = keeper
        if ctx.adapters.blobs is None:
            ctx.adapters.blobs = build_blob_store(settings)
        if ctx.adapters.resolver is None:
            ctx.adapters.resolver = build_resolver(settings, managed_dns=nameserver_plan(settings).mode == "managed")
        # What a killed process left half-done (staging dirs, temporary uploads): never visible, removed here.
        await asyncio.to_thread(deployments.sweep_partials, ctx)
        worker = Worker(ctx, registry)
        app.state.worker = worker
        stop = asyncio.Event()
        tasks = [asyncio.create_task(worker.run(stop), name="svc-worker")] if run_workers else []
        edge = None
        dns = None
        try:
            if run_nameserver and ctx.adapters.nameserver is None:
                # Raises NameserverPortInUse (one line in `svc serve`) when the DNS port is taken.
                dns = await start_nameserver(settings)
                if dns is not None:
                    ctx.adapters.nameserver = dns.nameserver
            if run_edge and settings.edge_enabled:
                edge = await start_edge(settings, projects.EdgeRouting(ctx), api_url=edge_api or settings.public_url)
                ctx.edge = edge
            yield {}
        finally:
            stop.set()
            for t in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait_for(t, timeout=10)
            if edge is not None:
                await edge.stop()
            if dns is not None:
                ctx.adapters.nameserver = None
                await dns.stop()
            await keeper.stop()
            await db.dispose()

    app = FastAPI(title="svc control API", version=__version__, lifespan=lifespan,
                  openapi_url="/v1/openapi.json", docs_url=None, redoc_url=None)
    install_error_handlers(app)
    install_openapi(app)
    if settings.enable_dev_auth:
        app.include_router(dev_router)
    for router in (identity_router, idp_router, orgs_router, notifications_router, credentials_router, invites_router,
                   projects_router, operations_router, deployments_router, secrets_router, access_router,
                   access_edge.router, audit_router, dns_router, hostnames_router,
                   hostnames_edge.router):
        app.include_router(router)
    install_dashboard(app)
    app.add_middleware(RequestGuard, limit=MAX_JSON_BODY)
    return app
