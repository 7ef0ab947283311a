"""`svc admin`: operator commands, run on the server beside `svc serve`, against its state store
(the same SVC_DATA_DIR or SVC_DATABASE_URL). Not an API client: they need the store, not a login,
so only someone who can read the server's settings can run them. Loaded only when `svc admin` runs.

    svc admin plan ORG pro|free     set an org's plan (self-hosted instances without billing)
    svc admin certs                 the TLS certificates svc holds, their expiry and renewal
"""

from __future__ import annotations

import asyncio
import json
from enum import StrEnum
from typing import Annotated

import typer
from rich.console import Console

from svc.app import server_context
from svc.domains.certificates import service as certificates
from svc.domains.certificates.schemas import CertificateSummary
from svc.domains.identity.schemas import OrgMembership
from svc.domains.orgs import service as orgs
from svc.errors import AppError
from svc.models import Plan
from svc.settings import Settings
from svc.uow import unit_of_work

app = typer.Typer(name="admin", no_args_is_help=True, add_completion=False, rich_markup_mode=None)
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


class PlanName(StrEnum):
    free = "free"
    pro = "pro"


@app.callback()
def _group() -> None:
    """Operator commands, run on the server against its state store (SVC_DATA_DIR or
    SVC_DATABASE_URL, as for svc serve)."""


@app.command("plan")
def plan(
    org: Annotated[str, typer.Argument(help="The org's slug.", show_default=False)],
    plan_name: Annotated[PlanName, typer.Argument(metavar="PLAN", help="free or pro.", show_default=False)],
    as_json: Annotated[bool, typer.Option("--json", help="Print the org as JSON.")] = False,
) -> None:
    """Set an org's plan: its limits (projects, ...) follow at once. For self-hosted instances
    without a billing provider; recorded in the org's audit trail as org.plan."""
    settings = Settings()
    try:
        changed = asyncio.run(_set_plan(settings, org, Plan(plan_name.value)))
    except AppError as exc:
        if as_json:
            print(json.dumps({"code": exc.code, "message": exc.message, "details": exc.details}))
        else:
            err.print(f"error: {exc.message} ({exc.code})", markup=False, highlight=False)
        raise typer.Exit(1) from None
    if as_json:
        print(changed.model_dump_json(by_alias=True))
        return
    out.print(f"{changed.slug} is on the {changed.plan} plan: up to {changed.project_limit} projects.",
              markup=False, highlight=False)


async def _set_plan(settings: Settings, slug: str, plan_: Plan) -> OrgMembership:
    async with server_context(settings) as ctx, unit_of_work(ctx) as uow:
        return await orgs.set_plan(uow, slug=slug, plan=plan_, settings=settings)


@app.command("certs")
def certs(as_json: Annotated[bool, typer.Option("--json", help="Print them as JSON.")] = False) -> None:
    """The TLS certificates svc holds (the app domain's wildcard, each active custom hostname's):
    their status, expiry, when each is renewed, and why the last order failed."""
    settings = Settings()
    rows = asyncio.run(_certificates(settings))
    if as_json:
        print(json.dumps({"certificates": [r.model_dump(mode="json", by_alias=True) for r in rows]}))
        return
    if not rows:
        out.print("No certificates: svc orders them when SVC_ACME_DIRECTORY_URL is set (docs/tls.md).",
                  markup=False, highlight=False)
        return
    from rich.table import Table

    table = Table("NAME", "KIND", "STATUS", "EXPIRES", "RENEWS", "LAST ERROR", box=None)
    for r in rows:
        table.add_row(r.name, r.kind, r.status, f"{r.not_after:%Y-%m-%d %H:%M}" if r.not_after else "-",
                      f"{r.renew_at:%Y-%m-%d %H:%M}" if r.renew_at else "-", r.last_error or "")
    out.print(table)


async def _certificates(settings: Settings) -> list[CertificateSummary]:
    async with server_context(settings) as ctx, unit_of_work(ctx) as uow:
        return await certificates.list_all(uow)
