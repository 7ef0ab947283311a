"""The projects' object store (files under SVC_DATA_DIR/objects, or S3) as a component: built in
the serving process too when whoever made the adapters left it out; at start, the temporary files
of writers killed mid-write are swept."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from svc.adapters.objects import build_object_store
from svc.adapters.objects.settings import ObjectSettings
from svc.settings import Config
from svc.supervisor.component import Component, Launch, Line


@contextlib.asynccontextmanager
async def _start(ctx: Any, launch: Launch) -> AsyncIterator[None]:
    store = ctx.adapters.objects
    sweep = getattr(store, "sweep_partials", None)
    if sweep is not None:
        await asyncio.to_thread(sweep)
    yield


def _banner(config: Config, launch: Launch) -> list[Line]:
    return [Line("objects", f"the projects' objects: {build_object_store(config).description}")]


COMPONENT = Component(name="objects", settings=ObjectSettings, slot="objects", build=build_object_store, fill=True,
                      start=_start, banner=_banner)
