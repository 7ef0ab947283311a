"""The registrar as a component: DNSimple or a fake registrar running elsewhere (built from the
settings), or, with SVC_REGISTRAR=fake and no SVC_REGISTRAR_URL, a fake the serving process runs."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from svc.adapters.registrar import build_registrar, off_reason, start_fake_registrar
from svc.adapters.registrar.settings import RegistrarSettings
from svc.supervisor.component import Component, Launch, holding


@contextlib.asynccontextmanager
async def _start(ctx: Any, launch: Launch) -> AsyncIterator[None]:
    if ctx.settings_of(RegistrarSettings).registrar != "fake" or ctx.adapters.registrar is not None:
        yield
        return
    fake, client = await start_fake_registrar(ctx.config)

    async def stop() -> None:
        await client.aclose()
        await fake.stop()

    async with holding(ctx, "registrar", client, stop):
        yield


COMPONENT = Component(name="registrar", settings=RegistrarSettings, slot="registrar", build=build_registrar,
                      off=off_reason, start=_start)
