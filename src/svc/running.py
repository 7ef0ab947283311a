"""A running svc: the serving process's life (the lifespan create_app gives FastAPI: the state store,
the auth cache's keeper, the areas' own lifespans, the components in their order, the job worker)
and the server context the operator's commands run in beside it."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
from collections.abc import AsyncIterator, Iterable
from typing import Any

from fastapi import FastAPI
from pydantic import ValidationError

from svc import components
from svc.areas import AREAS
from svc.auth.cache import AuthCache
from svc.auth.invalidation import CacheKeeper
from svc.context import Adapters, AppContext
from svc.db import Database, migrate, open_database
from svc.jobs.registry import JobRegistry
from svc.jobs.worker import Worker, worker_name
from svc.kit.crypto import Keyring, load_or_create_secret_key
from svc.kit.files import PRIVATE_UMASK, make_private
from svc.settings import BadSettings, Config, OwnSettings, Settings
from svc.supervisor.component import Launch

log = logging.getLogger("svc")

HOLDINGS = tuple(holding for area in AREAS for holding in area.holdings)
BINDINGS = tuple(area.bindings for area in AREAS if area.bindings is not None)
ORDERS = tuple(area.orders for area in AREAS if area.orders is not None)
RECONCILERS = tuple(area.reconcile for area in AREAS if area.reconcile is not None)
UNSETTLED = tuple(area.unsettled for area in AREAS if area.unsettled is not None)
RESOURCES = tuple(area.resource for area in AREAS if area.resource is not None)


OWN_SETTINGS: tuple[type[OwnSettings], ...] = (
    *(area.settings for area in AREAS if area.settings is not None), *components.SETTINGS)


def read_config(settings: Settings, given: Iterable[OwnSettings] = ()) -> Config:
    """The shared settings with every area's and component's own, read from the environment once;
    `given` replaces some (the tests'). Bad values raise BadSettings, every class's refusals
    together, which `svc serve` says in one line."""
    own: dict[type[OwnSettings], OwnSettings] = {type(part): part for part in given}
    refused: list[ValidationError] = []
    for kind in OWN_SETTINGS:
        if kind not in own:
            try:
                own[kind] = kind()
            except ValidationError as exc:
                refused.append(exc)
    if refused:
        raise BadSettings(refused)
    return Config(settings, own)


def app_context(config: Config, db: Database, adapters: Adapters) -> AppContext:
    """The context every use case runs in, with what the areas declare in their manifests."""
    settings = config.settings
    return AppContext(settings=settings, db=db, adapters=adapters, worker_name=worker_name(),
                      keyring=Keyring(load_or_create_secret_key(settings)), holdings=HOLDINGS, bindings=BINDINGS,
                      orders=ORDERS, reconcilers=RECONCILERS, unsettled=UNSETTLED, resources=RESOURCES,
                      own_settings=config.own)


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
    config = read_config(settings)
    await keep_data_private(settings)
    db = open_database(settings)
    async with contextlib.AsyncExitStack() as running:
        running.push_async_callback(db.dispose)
        await migrate(db)
        adapters = components.build_adapters(config)
        await components.beside(config, adapters, running)
        yield app_context(config, db, adapters)


def serving(config: Config, adapters: Adapters | None, launch: Launch, registry: JobRegistry, *,
            run_workers: bool, freeze_startup: bool) -> Any:
    """The serving process's lifespan, for FastAPI: everything starts before the first request and
    stops, in reverse, after the last."""

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[dict[str, Any]]:
        settings = config.settings
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
        ctx = app_context(config, db, adapters or components.build_adapters(config))
        app.state.ctx, app.state.auth_cache, app.state.auth_keeper = ctx, auth_cache, keeper
        components.fill(ctx)
        stop = asyncio.Event()
        async with contextlib.AsyncExitStack() as running:
            running.push_async_callback(db.dispose)
            running.push_async_callback(keeper.stop)
            for area in AREAS:
                if area.lifespan is not None:
                    await running.enter_async_context(area.lifespan(ctx))
            # The job worker runs while the components start (their start takes seconds: the cycles
            # are scheduled meanwhile, as they always were), and stops first, its batch finished
            # while the components still run.
            worker = app.state.worker = Worker(ctx, registry)
            task = asyncio.create_task(worker.run(stop), name="svc-worker") if run_workers else None
            if task is not None:
                running.push_async_callback(_stopped, stop, task)  # a component that fails to start
            await components.start(ctx, launch, running)
            if task is not None:
                running.push_async_callback(_stopped, stop, task)
            if freeze_startup:
                # What start-up made (the app, its routes and templates, the ORM's mappers: some
                # 250,000 objects) lives as long as the process: frozen, a full collection no longer
                # walks it. Unfrozen, that walk paused requests 200-470 ms about every 100 requests
                # (bench/git.py's browsing p99). Not in the tests, which make hundreds of apps.
                gc.collect()
                gc.freeze()
            yield {}

    return lifespan


async def _stopped(stop: asyncio.Event, task: asyncio.Task[None]) -> None:
    """The job worker, told to stop, finishes its batch (ten seconds at most)."""
    stop.set()
    with contextlib.suppress(asyncio.CancelledError, TimeoutError):
        await asyncio.wait_for(task, timeout=10)
