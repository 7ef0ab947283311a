"""The email area: a project's address, mail in (svc's SMTP server) and out (the relay), the mail
log, and the mail provider's notifications (docs/email.md)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from svc.context import AppContext
from svc.domains.email import hooks, inbound, jobs, kinds, pages, records, router, runtime, runtime_router, service
from svc.domains.email.settings import EmailSettings
from svc.manifest import Area, NavLink, ProjectResource
from svc.web.dashboard import Place


@contextlib.asynccontextmanager
async def _lifespan(ctx: AppContext) -> AsyncIterator[None]:
    await records.make_key(ctx)
    # Before the components start: the SMTP server delivers what it accepts to this area.
    if ctx.adapters.smtp is not None:
        ctx.adapters.smtp.deliver_to(inbound.Inbound(ctx))
    yield


AREA = Area(
    name="email",
    routers=(router.router, hooks.router, runtime_router.router),
    bindings=runtime.worker_env,
    pages=(pages.router,),
    templates=Path(__file__).parent / "templates",
    nav=(NavLink(Place.project, "Email", "/email", order=39),),
    resource=ProjectResource(name="email", binding="env.email", what="mail in and out at the project's address",
                             granted=service.has_grant, command="svc email grant --project {project}", tab="/email",
                             button="Grant email", off=service.unavailable),
    jobs=jobs.register, job_kinds=kinds.EmailJob,
    settings=EmailSettings,
    lifespan=_lifespan,
    hints={"email_unavailable": "The operator of this svc sets SVC_MAIL_DOMAIN (a domain whose MX points at svc) "
                                "and restarts it.",
           "email_address_taken": "The project holding it is being deleted, or was renamed away from this name "
                                  "with its grant: once it is gone, or revoked, grant again."},
)
