"""The AI area: the model catalog, per-project grants, and the org's credit and ledger (docs/ai.md)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from svc.context import AppContext
from svc.domains.ai import admin, gateway, jobs, kinds, pages, router, service, topups
from svc.domains.ai.settings import AISettings
from svc.manifest import Area, NavLink, ProjectResource
from svc.models import Role
from svc.web.dashboard import Place


@contextlib.asynccontextmanager
async def _lifespan(ctx: AppContext) -> AsyncIterator[None]:
    yield
    # Calls answered whose settlement has not landed yet: written before svc stops.
    await gateway.drain(ctx)


AREA = Area(
    name="ai",
    admin=admin.commands,
    routers=(router.router, router.runtime_router),
    pages=(pages.router,),
    templates=Path(__file__).parent / "templates",
    nav=(NavLink(Place.project, "AI", "/ai", order=38),
         NavLink(Place.org, "AI credit", "/ai", order=55, role=Role.member)),
    bindings=service.worker_env,
    resource=ProjectResource(name="ai", binding="env.ai", what="AI models, paid from the org's AI credit",
                             granted=service.has_grant, command="svc ai grant --project {project}", tab="/ai",
                             button="Grant AI"),
    orders=topups.order_paid,
    reconcile=topups.reconcile_orders,
    unsettled=topups.unsettled,
    jobs=jobs.register, job_kinds=kinds.AIJob,
    settings=AISettings,
    lifespan=_lifespan,
    hints={"no_payment_method": "Buy credit once (the payment stores a payment method), then turn auto top-up on.",
           "insufficient_credit": "Buy credit on the org's AI credit page, or turn auto top-up on."},
)
