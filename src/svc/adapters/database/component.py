"""The projects' databases as a component: an external PostgreSQL cluster (SVC_PROJECT_DB_ADMIN_URL),
or a private cluster the serving process starts and supervises when PostgreSQL is installed."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from svc.adapters.database import database_plan, start_database
from svc.adapters.database.settings import ProjectDbSettings
from svc.settings import Config
from svc.supervisor.component import Component, Launch, Line, holding


@contextlib.asynccontextmanager
async def _start(ctx: Any, launch: Launch) -> AsyncIterator[None]:
    if "database" not in launch.processes or ctx.adapters.database is not None:
        yield
        return
    database = await start_database(ctx.config)
    if database.off is not None:
        ctx.adapters.off["database"] = database.off
    async with holding(ctx, "database", database.node, database.stop):
        yield


def _banner(config: Config, launch: Launch) -> list[Line]:
    settings = config.settings_of(ProjectDbSettings)
    plan = database_plan(config)
    return [Line("databases", plan.summary, alarm=plan.mode == "off" and settings.project_db_enabled)]


COMPONENT = Component(name="database", settings=ProjectDbSettings, slot="database", start=_start, banner=_banner,
                      processes=("PostgreSQL",))
