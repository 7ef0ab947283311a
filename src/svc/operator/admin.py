"""`svc admin`: operator commands, run on the server beside `svc serve`, against its state store
(the same SVC_DATA_DIR or SVC_DATABASE_URL). Not an API client: they need the store, not a login,
so only someone who can read the server's settings can run them. Loaded only when `svc admin` runs.

    svc admin plan ORG pro|free     set an org's plan (self-hosted instances without billing)
    svc certs list                  the TLS certificates svc holds, their expiry and renewal
                                    (also `svc admin certs list`)
    svc certs trust                 trust svc's local CA (SVC_TLS_ISSUER=local) where curl and
                                    Chromium look
    svc admin billing events        the billing webhooks received, with what became of each
    svc admin billing replay ID     apply a kept delivery again
    svc admin billing reconcile ORG compare an org with the billing provider and repair a drift
    svc admin credit ORG AMOUNT --reason R   adjust an org's AI credit (a ledger row)
    svc admin ai overruns           models whose provider billed more than svc held (svc's loss)
    svc admin ai resume MODEL       lend to a model stopped by an overrun again
"""

from __future__ import annotations

import asyncio
import getpass
import json
from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.console import Console

from svc.app import server_context
from svc.domains.ai import service as ai
from svc.domains.billing import service as billing
from svc.domains.certificates import service as certificates
from svc.domains.certificates.schemas import CertificateSummary
from svc.domains.identity.schemas import OrgMembership
from svc.domains.orgs import service as orgs
from svc.errors import AppError
from svc.kit import money
from svc.models import Plan
from svc.operator import trust
from svc.settings import Settings
from svc.uow import Tx, unit_of_work

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
        return await orgs.set_plan(uow, slug=slug, plan=plan_, config=uow.ctx.config)


certs_app = typer.Typer(name="certs", no_args_is_help=True, add_completion=False, rich_markup_mode=None,
                        help="The TLS certificates svc holds, on the server against its store (docs/tls.md).")
app.add_typer(certs_app, name="certs")


@certs_app.callback()
def _certs_group() -> None:
    """The TLS certificates svc holds, on the server against its store (docs/tls.md)."""


@certs_app.command("list")
def certs(as_json: Annotated[bool, typer.Option("--json", help="Print them as JSON.")] = False) -> None:
    """The TLS certificates svc holds (the app domain's wildcard, each active custom hostname's):
    their status, expiry, when each is renewed, and why the last order failed."""
    settings = Settings()
    rows = asyncio.run(_certificates(settings))
    if as_json:
        print(json.dumps({"certificates": [r.model_dump(mode="json", by_alias=True) for r in rows]}))
        return
    if not rows:
        out.print("No certificates: svc gets them when the edge serves https (SVC_EDGE_TLS_PORT) with an issuer: "
                  "SVC_ACME_DIRECTORY_URL, or SVC_TLS_ISSUER=local (docs/tls.md).",
                  markup=False, highlight=False)
        return
    from rich.table import Table

    table = Table("NAME", "KIND", "STATUS", "EXPIRES", "RENEWS", "LAST ERROR", box=None)
    for r in rows:
        table.add_row(r.name, r.kind, r.status, f"{r.not_after:%Y-%m-%d %H:%M}" if r.not_after else "-",
                      f"{r.renew_at:%Y-%m-%d %H:%M}" if r.renew_at else "-", r.last_error or "")
    out.print(table)


certs_app.command("trust")(trust.trust)


async def _certificates(settings: Settings) -> list[CertificateSummary]:
    async with server_context(settings) as ctx, unit_of_work(ctx) as uow:
        return await certificates.list_all(uow)


billing_app = typer.Typer(name="billing", no_args_is_help=True, add_completion=False, rich_markup_mode=None,
                          help="The billing provider's webhooks as svc received them, and repairs (docs/billing.md).")
app.add_typer(billing_app, name="billing")


@billing_app.callback()
def _billing_group() -> None:
    """The billing provider's webhooks as svc received them, and repairs (docs/billing.md)."""


def _event_json(row: Any) -> dict[str, Any]:
    return {"webhookId": row.webhook_id, "type": row.type, "receivedAt": row.received_at.isoformat(),
            "outcome": row.outcome, "detail": row.detail, "org": row.org_slug, "deliveries": row.deliveries}


@billing_app.command("events")
def billing_events(limit: Annotated[int, typer.Option(min=1, max=1000, help="How many, newest first.")] = 50,
                   as_json: Annotated[bool, typer.Option("--json", help="Print them as JSON.")] = False) -> None:
    """The webhook deliveries received (the inbox), newest first: type, org, outcome (applied,
    stale, ignored, failed) and why, and how many times each arrived."""
    rows = asyncio.run(_in_store(Settings(), lambda uow: billing.inbox(uow, limit), Tx.READ))
    if as_json:
        print(json.dumps({"events": [_event_json(r) for r in rows]}))
        return
    if not rows:
        out.print("No billing webhooks received.", markup=False, highlight=False)
        return
    from rich.table import Table

    table = Table("RECEIVED", "ID", "TYPE", "ORG", "OUTCOME", "DELIVERIES", "DETAIL", box=None)
    for r in rows:
        table.add_row(f"{r.received_at:%Y-%m-%d %H:%M:%S}", r.webhook_id, r.type, r.org_slug or "-", r.outcome,
                      str(r.deliveries), r.detail or "")
    out.print(table)


@billing_app.command("replay")
def billing_replay(
    webhook_id: Annotated[str, typer.Argument(help="The delivery's webhook-id.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the delivery as JSON.")] = False,
) -> None:
    """Apply a kept delivery again (one that failed because its org came later, say); an older state
    of a subscription still never overwrites a newer one."""
    row = asyncio.run(_in_store(Settings(), lambda uow: billing.replay(uow, webhook_id)))
    if row is None:
        _refuse(as_json, "not_found", f"No delivery {webhook_id!r} was received")
    if as_json:
        print(json.dumps(_event_json(row)))
        return
    out.print(f"{row.webhook_id} ({row.type}): {row.outcome}, {row.detail}", markup=False, highlight=False)


@billing_app.command("reconcile")
def billing_reconcile(
    org: Annotated[str, typer.Argument(help="The org's slug.", show_default=False)],
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Find the org's customer at the billing provider, read every subscription of it now, repair a
    drift and report a duplicate (what the daily cycle does for every org with an account). A
    provider that cannot be asked is an error, never "in step"."""
    try:
        result = asyncio.run(_in_store(Settings(), lambda uow: billing.reconcile_slug(uow, org),
                                       Tx.READ_THEN_WRITE))
    except AppError as exc:
        _refuse(as_json, exc.code, exc.message)
    if result is None:
        _refuse(as_json, "not_found", f"No org {org!r}")
    assert result is not None
    if as_json:
        print(json.dumps({"org": org, "changed": result.changed, "plan": result.plan,
                          "customerId": result.customer_id, "liveSubscriptions": list(result.live),
                          "duplicate": result.duplicate, "message": result.words()}))
        return
    out.print(result.words(), markup=False, highlight=False)


@app.command("credit")
def credit(
    org: Annotated[str, typer.Argument(help="The org's slug.", show_default=False)],
    amount: Annotated[str, typer.Argument(metavar="AMOUNT", show_default=False,
                                          help="+$5, -$1.25 (dollars) or micro-cents (+500000000). A "
                                               "negative amount goes after --: svc admin credit --reason R ORG "
                                               "-- -$1.25")],
    reason: Annotated[str, typer.Option("--reason", help="Why, kept on the ledger row.", show_default=False)],
    by: Annotated[str | None, typer.Option("--by", help="Who adjusts, for the audit trail (operator:NAME); "
                                                        "default: the account running this.",
                                           show_default=False)] = None,
    order: Annotated[str | None, typer.Option("--order", help="A paid order of credit the org was refused (the "
                                                              "operator's billing page lists them): this credit "
                                                              "settles it, once.", show_default=False)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Adjust an org's AI credit: one `adjust` row on its ledger, and the balance it moves, in one
    transaction (audited as ai.adjust, with the operator as its actor)."""
    try:
        micro_cents = money.parse(amount)
    except ValueError as exc:
        _refuse(as_json, "bad_request", str(exc))
    if not reason.strip():
        _refuse(as_json, "bad_request", "--reason says why, for the ledger")
    operator = _operator(by)

    async def run(uow: Any) -> tuple[int, int] | None:
        found = await orgs.org_by_slug(uow, org)
        return None if found is None else await ai.adjust(uow, found, micro_cents, reason.strip(), operator,
                                                          order.strip() if order else None)

    try:
        result = asyncio.run(_in_store(Settings(), run))
    except AppError as exc:
        _refuse(as_json, exc.code, exc.message)
    if result is None:
        _refuse(as_json, "not_found", f"No org {org!r}")
    assert result is not None
    ledger_id, balance = result
    if as_json:
        print(json.dumps({"org": org, "ledgerId": ledger_id, "microCents": micro_cents, "balanceMicroCents": balance,
                          "order": order}))
        return
    out.print(f"{org}: {money.dollars(micro_cents)} ({reason.strip()}); the balance is now {money.dollars(balance)}.",
              markup=False, highlight=False)


def _operator(by: str | None) -> str:
    """Who runs an operator's command: as they say (--by), else the server account running it."""
    if by is not None and by.strip():
        return by.strip()[:80]
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name (a container's numeric user)
        return "unknown"


ai_app = typer.Typer(name="ai", no_args_is_help=True, add_completion=False, rich_markup_mode=None,
                     help="AI models whose provider billed more than svc held for a call (docs/ai.md).")
app.add_typer(ai_app, name="ai")


@ai_app.callback()
def _ai_group() -> None:
    """AI models whose provider billed more than svc held for a call (docs/ai.md)."""


def _overrun_json(row: Any) -> dict[str, Any]:
    return {"model": row.model, "stopped": row.stopped_since is not None,
            "stoppedSince": row.stopped_since.isoformat() if row.stopped_since else None,
            "overruns": row.overruns, "lossMicroCents": row.loss_micro_cents, "lastAt": row.last_at.isoformat(),
            "lastHeldMicroCents": row.last_held_micro_cents, "lastBilledMicroCents": row.last_billed_micro_cents,
            "lastOrgId": row.last_org_id, "lastProjectId": row.last_project_id,
            "resumedAt": row.resumed_at.isoformat() if row.resumed_at else None, "resumedBy": row.resumed_by}


@ai_app.command("overruns")
def ai_overruns(as_json: Annotated[bool, typer.Option("--json", help="Print them as JSON.")] = False) -> None:
    """Models whose provider billed a call more than svc held for it: svc's loss (the org paid the
    hold), and whether the gateway refuses the model until you resume it."""
    rows = asyncio.run(_in_store(Settings(), ai.overruns, Tx.READ))
    if as_json:
        print(json.dumps({"overruns": [_overrun_json(r) for r in rows]}))
        return
    if not rows:
        out.print("No model was billed more than svc held.", markup=False, highlight=False)
        return
    for r in rows:
        state = f"stopped since {r.stopped_since:%Y-%m-%d %H:%M:%S}" if r.stopped_since else "lent to"
        out.print(f"{r.model}: {state}; {r.overruns} overruns, svc's loss {money.dollars(r.loss_micro_cents)} "
                  f"(last: held {money.dollars(r.last_held_micro_cents)}, billed "
                  f"{money.dollars(r.last_billed_micro_cents)})", markup=False, highlight=False)


@ai_app.command("resume")
def ai_resume(
    model: Annotated[str, typer.Argument(help="The model's id in the catalog.", show_default=False)],
    by: Annotated[str | None, typer.Option("--by", help="Who resumes it, for the audit trail.",
                                           show_default=False)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the model's record as JSON.")] = False,
) -> None:
    """Lend to a model the gateway stopped after an overrun again, once its estimate is corrected
    (the catalog's context and prices, the provider's billing); its losses stay on record."""
    operator = _operator(by)
    row = asyncio.run(_in_store(Settings(), lambda uow: ai.resume_model(uow, model, operator)))
    if row is None:
        _refuse(as_json, "not_found", f"No overrun of {model!r} is on record")
    if as_json:
        print(json.dumps(_overrun_json(row)))
        return
    out.print(f"{model}: lent to again.", markup=False, highlight=False)


def _refuse(as_json: bool, code: str, message: str) -> None:
    if as_json:
        print(json.dumps({"code": code, "message": message, "details": None}))
    else:
        err.print(f"error: {message} ({code})", markup=False, highlight=False)
    raise typer.Exit(1)


async def _in_store(settings: Settings, case: Any, policy: Tx = Tx.WRITE) -> Any:
    """`case(uow)` in a unit of work on the server's store, with the billing provider of its settings."""
    async with server_context(settings) as ctx, unit_of_work(ctx, policy) as uow:
        return await case(uow)
