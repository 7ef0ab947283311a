"""create_app(settings, adapters) -> FastAPI: the control API, its lifespan and its workers."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
from collections.abc import AsyncIterator, Iterable
from typing import Any

from fastapi import APIRouter, FastAPI, HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from svc import __version__
from svc.adapters.acme import acme_factory
from svc.adapters.ai import build_upstreams, start_fake_upstream
from svc.adapters.billing import build_billing, forget_fake_billing, running_fake_billing, start_fake_billing
from svc.adapters.billing import off_reason as billing_off_reason
from svc.adapters.blobs import build_blob_store
from svc.adapters.database import start_database
from svc.adapters.git import build_git_node
from svc.adapters.git import off_reason as git_off_reason
from svc.adapters.idp import build_identity_provider
from svc.adapters.mail.eml import EmlDirectorySender
from svc.adapters.mail.smtp import SmtpSender
from svc.adapters.nameserver import build_nameserver, nameserver_plan, start_nameserver
from svc.adapters.registrar import build_registrar, start_fake_registrar
from svc.adapters.registrar import off_reason as registrar_off_reason
from svc.adapters.resolver import build_resolver
from svc.adapters.workers import start_runtime
from svc.areas import AREAS
from svc.auth.cache import AuthCache
from svc.auth.invalidation import CacheKeeper
from svc.context import Adapters, AppContext
from svc.db import migrate, open_database
from svc.domains.certificates.service import EdgeCertificates
from svc.domains.projects.service import EdgeRouting
from svc.domains.workers.service import SteadySource, TrafficRecorder
from svc.edge import start_edge
from svc.edge.config import api_address
from svc.errors import BadRequest, error_response, install_error_handlers
from svc.jobs.registry import JobRegistry
from svc.jobs.worker import Worker, worker_name
from svc.kit.crypto import Keyring, load_or_create_secret_key
from svc.kit.files import PRIVATE_UMASK, make_private
from svc.openapi import install_openapi
from svc.settings import AreaSettings, Settings
from svc.web import install_dashboard

log = logging.getLogger("svc")

MAX_JSON_BODY = 1024 * 1024
HOLDINGS = tuple(holding for area in AREAS for holding in area.holdings)
BINDINGS = tuple(area.bindings for area in AREAS if area.bindings is not None)
ORDERS = tuple(area.orders for area in AREAS if area.orders is not None)
RECONCILERS = tuple(area.reconcile for area in AREAS if area.reconcile is not None)
UNSETTLED = tuple(area.unsettled for area in AREAS if area.unsettled is not None)


def _runtime_only(router: APIRouter) -> bool:
    paths = [getattr(route, "path", "") for route in router.routes]
    return bool(paths) and all(path.startswith("/v1/runtime/") for path in paths)


def default_adapters(settings: Settings) -> Adapters:
    mail = SmtpSender(settings.smtp_url) if settings.smtp_url else EmlDirectorySender(settings.mail_dir())
    dns = nameserver_plan(settings)
    off = {"nameserver": dns.summary.removeprefix("OFF - ").rstrip(".")} if dns.mode == "off" else {}
    billing_off = billing_off_reason(settings)
    if billing_off is not None:
        off["billing"] = billing_off
    registrar_off = registrar_off_reason(settings)
    if registrar_off is not None:
        off["registrar"] = registrar_off
    git_off = git_off_reason(settings)
    if git_off is not None:
        off["git"] = git_off
    return Adapters(mail=mail, idp=build_identity_provider(settings), blobs=build_blob_store(settings),
                    nameserver=build_nameserver(settings), acme=acme_factory(settings), billing=build_billing(settings),
                    ai=build_upstreams(settings), registrar=build_registrar(settings), git=build_git_node(settings),
                    off=off)


def build_registry(settings: Settings) -> JobRegistry:
    """Every area's job kinds and periodic cycles, as its manifest registers them."""
    registry = JobRegistry()
    for area in AREAS:
        if area.jobs is not None:
            area.jobs(registry, settings)
    return registry


def read_area_settings(given: Iterable[AreaSettings] = ()) -> dict[type[AreaSettings], AreaSettings]:
    """Every area's own settings, read from the environment once (a bad value raises pydantic's
    ValidationError, which `svc serve` says in one line); `given` replaces some (the tests')."""
    chosen = {type(own): own for own in given}
    return {area.settings: chosen.get(area.settings) or area.settings() for area in AREAS if area.settings is not None}


def is_upload(scope: Scope) -> bool:
    """A request whose body an area bounds itself (a bundle upload)."""
    return any(area.uploads(scope) for area in AREAS if area.uploads is not None)


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
            if not is_upload(scope):
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
    adapters: Adapters | None = None
    try:
        await migrate(db)
        adapters = default_adapters(settings)
        if settings.billing == "fake" and adapters.billing is None:
            # The fake Polar of the `svc serve` beside this command, asked as Polar would be.
            adapters.billing, why = running_fake_billing(settings)
            if why is not None:
                adapters.off["billing"] = why
        yield AppContext(settings=settings, db=db, adapters=adapters, worker_name=worker_name(),
                         keyring=Keyring(load_or_create_secret_key(settings)), holdings=HOLDINGS, bindings=BINDINGS,
                         orders=ORDERS, reconcilers=RECONCILERS, unsettled=UNSETTLED,
                         area_settings=read_area_settings())
    finally:
        if settings.billing == "fake" and adapters is not None and adapters.billing is not None:
            await adapters.billing.aclose()
        await db.dispose()


def create_app(settings: Settings, adapters: Adapters | None = None, *, run_workers: bool = True,
               registry: JobRegistry | None = None, run_edge: bool = False, edge_api: str | None = None,
               run_nameserver: bool = False, run_database: bool = False,
               area_settings: Iterable[AreaSettings] = (), freeze_startup: bool = False) -> FastAPI:
    """run_edge: start and supervise this process's edge (nginx, svc/edge/) when settings.edge_enabled;
    edge_api is where nginx reaches this API (http://host:port; default SVC_PUBLIC_URL).
    run_nameserver: start and supervise a private PowerDNS (adapters/nameserver/process.py) when no
    nameserver was handed in or configured and pdns_server is installed.
    run_database: the projects' databases' node (adapters/database/): SVC_PROJECT_DB_ADMIN_URL's
    cluster, else a private cluster started and supervised here when PostgreSQL is installed.
    freeze_startup: the serving process's own (`svc serve`): what start-up made is kept out of the
    garbage collector's sight (gc.freeze), see the lifespan."""
    registry = registry or build_registry(settings)
    # Read (and checked) now, before anything starts.
    own_settings = read_area_settings(area_settings)

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
                         worker_name=worker_name(), keyring=Keyring(load_or_create_secret_key(settings)),
                         holdings=HOLDINGS, bindings=BINDINGS, orders=ORDERS, reconcilers=RECONCILERS,
                         unsettled=UNSETTLED, area_settings=own_settings)
        app.state.ctx = ctx
        app.state.auth_cache = auth_cache
        app.state.auth_keeper = keeper
        if ctx.adapters.blobs is None:
            ctx.adapters.blobs = build_blob_store(settings)
        if ctx.adapters.resolver is None:
            ctx.adapters.resolver = build_resolver(settings, managed_dns=nameserver_plan(settings).mode == "managed")
        areas_running = contextlib.AsyncExitStack()
        for area in AREAS:
            if area.lifespan is not None:
                await areas_running.enter_async_context(area.lifespan(ctx))
        worker = Worker(ctx, registry)
        app.state.worker = worker
        stop = asyncio.Event()
        tasks = [asyncio.create_task(worker.run(stop), name="svc-worker")] if run_workers else []
        edge = None
        dns = None
        runtime = None
        database = None
        fake_billing = None
        fake_ai = None
        fake_registrar = None
        try:
            if settings.registrar == "fake" and ctx.adapters.registrar is None:
                # A fake registrar in this process (development; SVC_REGISTRAR_URL names an outside one).
                fake_registrar, ctx.adapters.registrar = await start_fake_registrar(settings)
            # A fake AI upstream in this process (SVC_AI_FAKE, development) for lanes without one.
            fake_ai = await start_fake_upstream(settings, ctx.adapters.ai)
            if settings.billing == "fake" and ctx.adapters.billing is None:
                # A fake Polar in this process (development): its webhooks come back to this API.
                hook = (edge_api or settings.public_url).rstrip("/") + "/v1/hooks/polar"
                fake_billing, ctx.adapters.billing, ctx.settings = await start_fake_billing(ctx.settings, hook)
            if run_database and ctx.adapters.database is None:
                database = await start_database(settings)
                ctx.adapters.database = database.node
                if database.off is not None:
                    ctx.adapters.off["database"] = database.off
            if run_nameserver and ctx.adapters.nameserver is None:
                # Raises NameserverPortInUse (one line in `svc serve`) when the DNS port is taken.
                dns = await start_nameserver(settings)
                if dns is not None:
                    ctx.adapters.nameserver = dns.nameserver
            if run_edge and settings.edge_enabled:
                api_url = edge_api or settings.public_url
                # The data plane: the projects' workers (workerd), then the edge in front of them.
                if ctx.adapters.runtime is None:
                    runtime = await start_runtime(settings, api_address=api_address(api_url)[0])
                    ctx.adapters.runtime = runtime
                edge = await start_edge(settings, EdgeRouting(ctx), api_url=api_url, runtime=ctx.adapters.runtime,
                                        traffic=TrafficRecorder(ctx) if settings.edge_traffic_log else None,
                                        certificates=EdgeCertificates(ctx) if settings.edge_tls_port else None)
                ctx.edge = edge
                if runtime is not None and edge is not None:
                    # Each shard's live workers, served steadily behind the loading processes.
                    runtime.follow(SteadySource(ctx), edge.steady_changed, edge.layout.error_log)
            if freeze_startup:
                # What start-up made (the app, its routes and templates, the ORM's mappers: some
                # 250,000 objects) lives as long as the process: frozen, a full collection no longer
                # walks it. Unfrozen, that walk paused requests 200-470 ms about every 100 requests
                # (bench/git.py's browsing p99). Not in the tests, which make hundreds of apps.
                gc.collect()
                gc.freeze()
            yield {}
        finally:
            stop.set()
            for t in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait_for(t, timeout=10)
            if runtime is not None:
                # First: its steady processes tell the edge of their changes while they run.
                ctx.adapters.runtime = None
                await runtime.stop()
            if edge is not None:
                await edge.stop()
            if dns is not None:
                ctx.adapters.nameserver = None
                await dns.stop()
            if database is not None:
                ctx.adapters.database = None
                await database.stop()
            for upstream in ctx.adapters.ai.values():  # their connections (a later start opens new ones)
                with contextlib.suppress(Exception):
                    await upstream.aclose()
            if fake_ai is not None:
                await fake_ai.stop()
            if fake_registrar is not None:
                registrar, ctx.adapters.registrar = ctx.adapters.registrar, None
                if registrar is not None:
                    await registrar.aclose()
                await fake_registrar.stop()
            if fake_billing is not None:
                billing, ctx.adapters.billing = ctx.adapters.billing, None
                if billing is not None:
                    await billing.aclose()
                forget_fake_billing(ctx.settings)
                await fake_billing.stop()
            await areas_running.aclose()
            await keeper.stop()
            await db.dispose()

    app = FastAPI(title="svc control API", version=__version__, lifespan=lifespan,
                  openapi_url="/v1/openapi.json", docs_url=None, redoc_url=None)
    install_error_handlers(app)
    install_openapi(app)
    routers = [router for area in AREAS
               for router in (*area.routers, *(area.dev_routers if settings.enable_dev_auth else ()))]
    # The runtime's routes first: they are the hot ones (every env.db query, every worker load) and
    # a request is matched against the routes in order (the last of ~160 cost a tenth of a query).
    for router in sorted(routers, key=lambda r: not _runtime_only(r)):
        app.include_router(router)
    install_dashboard(app, AREAS)
    app.add_middleware(RequestGuard, limit=MAX_JSON_BODY)
    return app
