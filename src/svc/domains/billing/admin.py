"""The billing area's server commands: `svc admin billing events|replay|reconcile`."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from svc.admin import Operator, as_json, group, refuse, said
from svc.domains.billing import service
from svc.errors import AppError
from svc.uow import Tx

HELP = "The billing provider's webhooks as svc received them, and repairs (docs/billing.md)."


def _event_json(row: Any) -> dict[str, Any]:
    return {"webhookId": row.webhook_id, "type": row.type, "receivedAt": row.received_at.isoformat(),
            "outcome": row.outcome, "detail": row.detail, "org": row.org_slug, "deliveries": row.deliveries}


def commands(app: typer.Typer, operator: Operator) -> None:
    billing = group(app, "billing", HELP)

    @billing.callback()
    def _billing() -> None:
        """The billing provider's webhooks as svc received them, and repairs (docs/billing.md)."""

    @billing.command("events")
    def events(limit: Annotated[int, typer.Option(min=1, max=1000, help="How many, newest first.")] = 50,
               json_: Annotated[bool, typer.Option("--json", help="Print them as JSON.")] = False) -> None:
        """The webhook deliveries received (the inbox), newest first: type, org, outcome (applied,
        stale, ignored, failed) and why, and how many times each arrived."""
        rows = operator.run(lambda uow: service.inbox(uow, limit), Tx.READ)
        if json_:
            as_json({"events": [_event_json(r) for r in rows]})
            return
        if not rows:
            said("No billing webhooks received.")
            return
        from rich.console import Console
        from rich.table import Table

        table = Table("RECEIVED", "ID", "TYPE", "ORG", "OUTCOME", "DELIVERIES", "DETAIL", box=None)
        for r in rows:
            table.add_row(f"{r.received_at:%Y-%m-%d %H:%M:%S}", r.webhook_id, r.type, r.org_slug or "-", r.outcome,
                          str(r.deliveries), r.detail or "")
        Console(soft_wrap=True).print(table)

    @billing.command("replay")
    def replay(
        webhook_id: Annotated[str, typer.Argument(help="The delivery's webhook-id.")],
        json_: Annotated[bool, typer.Option("--json", help="Print the delivery as JSON.")] = False,
    ) -> None:
        """Apply a kept delivery again (one that failed because its org came later, say); an older state
        of a subscription still never overwrites a newer one."""
        row = operator.run(lambda uow: service.replay(uow, webhook_id))
        if row is None:
            refuse(json_, "not_found", f"No delivery {webhook_id!r} was received")
        if json_:
            as_json(_event_json(row))
            return
        said(f"{row.webhook_id} ({row.type}): {row.outcome}, {row.detail}")

    @billing.command("reconcile")
    def reconcile(
        org: Annotated[str, typer.Argument(help="The org's slug.", show_default=False)],
        json_: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    ) -> None:
        """Find the org's customer at the billing provider, read every subscription of it now, repair a
        drift and report a duplicate (what the daily cycle does for every org with an account). A
        provider that cannot be asked is an error, never "in step"."""
        try:
            result = operator.run(lambda uow: service.reconcile_slug(uow, org), Tx.READ_THEN_WRITE)
        except AppError as exc:
            refuse(json_, exc.code, exc.message)
        if result is None:
            refuse(json_, "not_found", f"No org {org!r}")
        if json_:
            as_json({"org": org, "changed": result.changed, "plan": result.plan, "customerId": result.customer_id,
                     "liveSubscriptions": list(result.live), "duplicate": result.duplicate,
                     "message": result.words()})
            return
        said(result.words())
