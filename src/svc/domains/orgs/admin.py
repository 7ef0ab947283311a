"""The orgs area's server command: `svc admin plan ORG free|pro`."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from svc.admin import Operator, refuse, said
from svc.domains.orgs import service
from svc.domains.orgs.schemas import OrgMembership
from svc.errors import AppError
from svc.models import Plan
from svc.uow import UnitOfWork


class PlanName(StrEnum):
    free = "free"
    pro = "pro"


def commands(app: typer.Typer, operator: Operator) -> None:
    @app.command("plan")
    def plan(
        org: Annotated[str, typer.Argument(help="The org's slug.", show_default=False)],
        plan_name: Annotated[PlanName, typer.Argument(metavar="PLAN", help="free or pro.", show_default=False)],
        as_json: Annotated[bool, typer.Option("--json", help="Print the org as JSON.")] = False,
    ) -> None:
        """Set an org's plan: its limits (projects, ...) follow at once. For self-hosted instances
        without a billing provider; recorded in the org's audit trail as org.plan."""

        async def work(uow: UnitOfWork) -> OrgMembership:
            return await service.set_plan(uow, slug=org, plan=Plan(plan_name.value), config=uow.ctx.config)

        try:
            changed = operator.run(work)
        except AppError as exc:
            refuse(as_json, exc.code, exc.message)
        if as_json:
            typer.echo(changed.model_dump_json(by_alias=True))
            return
        said(f"{changed.slug} is on the {changed.plan} plan: up to {changed.project_limit} projects.")
