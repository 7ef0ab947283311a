"""AI rules (docs/ai.md). Services flush, never commit.

A project calls models through env.ai once it is granted (and its bundle declares `"ai": true`);
the calls are paid from its org's credit. The ledger is the canonical record of amounts: every
call, top-up and adjustment is one row, written in the same transaction as the balance it moves,
so the ledger always sums to the balance. Money is integer micro-cents everywhere."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Any

from svc.adapters.workers.port import EntrypointBinding
from svc.auth.roles import OrgAccess
from svc.context import AppContext
from svc.domains.ai import catalog, errors, gateway, queries, schemas, topups
from svc.domains.ai.settings import AISettings
from svc.domains.audit.service import record
from svc.domains.orgs import service as orgs
from svc.domains.projects import service as projects
from svc.kit.clock import utcnow
from svc.kit.store_session import StoreSession
from svc.models import AICredit, AIGrant, AIModelOverrun, Org, Project
from svc.uow import Tx, UnitOfWork, use_case

# At most this many ledger rows a page.
LEDGER_PAGE_MAX = 200


def models(uow: UnitOfWork) -> catalog.Catalog:
    return catalog.load(uow.ctx.settings_of(AISettings).ai_catalog)


def catalog_view(uow: UnitOfWork) -> schemas.Catalog:
    return schemas.Catalog(models=[schemas.CatalogModel.model_validate(m, from_attributes=True)
                                   for m in models(uow).models])


async def status(uow: UnitOfWork, org: Org, project: Project) -> schemas.AIStatus:
    """The project's grant, the caps its org's plan sets (shown without a grant too), the org's
    balance and what the project spent in the last 24 hours (from the ledger)."""
    limits = orgs.limits_of(uow.ctx.config, org.plan)
    credit = await queries.credit(uow.session, org.id)
    spent = await queries.spent_since(uow.session, project.id, utcnow() - timedelta(hours=24))
    return schemas.AIStatus(
        granted=await queries.grant(uow.session, project.id) is not None,
        max_output_tokens=limits.ai_max_output_tokens, max_input_tokens=limits.ai_max_input_tokens,
        max_calls_per_minute=limits.ai_calls_per_minute, max_micro_cents_per_day=limits.ai_micro_cents_per_day,
        balance_micro_cents=credit.balance_micro_cents if credit is not None else 0, spent_micro_cents24h=spent)


@use_case(Tx.WRITE)
async def grant(uow: UnitOfWork, access: OrgAccess, project: Project) -> schemas.AIStatus:
    """Idempotent: a granted project stays as it is. The worker finds env.ai at its next request."""
    if await queries.grant(uow.session, project.id) is None:
        uow.session.add(AIGrant(project_id=project.id, org_id=access.org.id, granted_at=utcnow(),
                                granted_by=access.principal.user.id if access.principal.user else None))
        await uow.session.flush()
        await record(uow.session, "ai.grant", actor=access.principal.user, org=access.org, target=project.name)
        await projects.bindings_changed(uow, project.id)
    return await status(uow, access.org, project)


@use_case(Tx.WRITE)
async def revoke(uow: UnitOfWork, access: OrgAccess, project: Project) -> None:
    """Idempotent; the ledger and the org's balance are kept (the balance is the org's)."""
    if await queries.remove_grant(uow.session, project.id):
        await record(uow.session, "ai.revoke", actor=access.principal.user, org=access.org, target=project.name)
        await projects.bindings_changed(uow, project.id)


async def credit(uow: UnitOfWork, org: Org) -> schemas.AICredit:
    row = await queries.credit(uow.session, org.id)
    per_day = uow.ctx.settings_of(AISettings).ai_autotopup_per_day
    return schemas.AICredit(
        balance_micro_cents=row.balance_micro_cents if row else 0,
        has_payment_method=bool(row and row.payment_customer_id), autotopups_today=topups.topups_today(row),
        autotopup_per_day=per_day,
        autotopup=schemas.AutoTopup(enabled=bool(row and row.autotopup_enabled),
                                    threshold_micro_cents=row.autotopup_threshold_micro_cents if row else None,
                                    amount_micro_cents=row.autotopup_amount_micro_cents if row else None))


async def credit_row(uow: UnitOfWork, org: Org) -> AICredit | None:
    return await queries.credit(uow.session, org.id)


async def spent_today(uow: UnitOfWork, org: Org) -> int:
    """What the org's calls cost in the last 24 hours (every project)."""
    return await queries.org_spent_since(uow.session, org.id, utcnow() - timedelta(hours=24))


async def last_ledger_id(uow: UnitOfWork, org: Org) -> int:
    return await queries.last_ledger_id(uow.session, org.id)


async def topped_up_since(uow: UnitOfWork, org: Org, after: int) -> bool:
    """Whether a top-up row came after the ledger row `after` (a checkout's payment arrived)."""
    return await queries.topped_up_since(uow.session, org.id, after)


async def ledger(uow: UnitOfWork, org: Org, *, limit: int, before: int | None) -> schemas.Ledger:
    """The org's ledger, newest first, `limit` rows before the row `before` (the cursor is the
    ledger id, never a time)."""
    rows = await queries.entries(uow.session, org.id, limit=limit + 1, before=before)
    page, more = rows[:limit], len(rows) > limit
    names = await queries.project_names(uow.session, {r.project_id for r in page if r.project_id})
    return schemas.Ledger(
        entries=[schemas.LedgerEntry(ledger_id=r.ledger_id, kind=r.kind, micro_cents=r.micro_cents,
                                     created_at=r.created_at, project=names.get(r.project_id or ""), model=r.model)
                 for r in page],
        next_before=page[-1].ledger_id if more and page else None)


@dataclass(frozen=True)
class Usage:
    """What the org's calls cost over the last `days` days: by day (oldest first, every day there)
    and by project (most first)."""

    days: list[tuple[str, int]]
    projects: list[tuple[str, int]]
    most: int
    # Each day's spend by project name: what the chart stacks.
    by_day: dict[str, dict[str, int]]


async def usage(uow: UnitOfWork, org: Org, days: int = 14) -> Usage:
    today = utcnow().date()
    first = today - timedelta(days=days - 1)
    since = datetime.combine(first, time.min, tzinfo=UTC)
    rows = await queries.spend_by_day(uow.session, org.id, since)
    by_day: dict[str, int] = {(first + timedelta(days=i)).isoformat(): 0 for i in range(days)}
    split: dict[str, dict[str, int]] = {day: {} for day in by_day}
    by_project: dict[str, int] = {}
    names = await queries.project_names(uow.session, {p for _, p, _ in rows if p})
    for day, project_id, spent in rows:
        name = names.get(project_id or "", "(deleted project)")
        if day in by_day:
            by_day[day] += spent
            split[day][name] = split[day].get(name, 0) + spent
        by_project[name] = by_project.get(name, 0) + spent
    projects = sorted(by_project.items(), key=lambda item: -item[1])
    return Usage(days=list(by_day.items()), projects=projects, most=max(by_day.values(), default=0), by_day=split)


@use_case(Tx.WRITE)
async def adjust(uow: UnitOfWork, org: Org, micro_cents: int, reason: str,
                 operator: str | None = None, order: str | None = None) -> tuple[int, int]:
    """An operator's adjustment (svc admin credit): a ledger row and the balance it moves, audited
    with who made it (`operator`: their name, as operator:NAME); the row's id and the balance after.
    With `order`: it settles that paid order of credit the org was refused (the operator's
    billing page lists it until then), once."""
    if order is not None:
        await queries.ensure_credit(uow.session, org.id, utcnow())
        await queries.credit(uow.session, org.id, lock=True)  # a second settlement of it waits here
        if not await queries.waits_to_be_settled(uow.session, org.id, order):
            raise errors.OrderNotUnsettled(f"No paid order {order!r} of {org.slug} waits to be settled (it was "
                                           f"credited, settled before, or never refused)")
    ledger_id = await queries.add_entry(uow.session, org_id=org.id, kind="adjust", micro_cents=micro_cents,
                                        now=utcnow(), note=reason, order_id=order)
    await record(uow.session, "ai.adjust", actor=None, org=org, target=org.slug,
                 data={"microCents": micro_cents, "reason": reason[:200], "order": order},
                 by=f"operator:{operator}" if operator else None)
    row = await queries.credit(uow.session, org.id, lock=True)
    assert row is not None
    await uow.session.refresh(row)
    if micro_cents < 0:
        await topups.maybe_top_up(uow, row)  # taken below the auto top-up's threshold: refilled as after a call
    return ledger_id, row.balance_micro_cents


# --- models whose provider billed more than svc held ---


async def overruns(uow: UnitOfWork) -> list[AIModelOverrun]:
    """For the operator (svc admin ai overruns): every model whose provider billed a call more than
    svc held for it, what svc bore, and whether the gateway still refuses it."""
    return await queries.overruns(uow.session)


async def resume_model(uow: UnitOfWork, model: str, operator: str) -> AIModelOverrun | None:
    """The operator lends to a stopped model again (its estimate corrected: the catalog, the
    bounds): the record of its losses stays. None: the model never overran."""
    row = await queries.overrun(uow.session, model, lock=True)
    if row is None:
        return None
    if row.stopped_since is not None:
        row.stopped_since = None
        row.resumed_at, row.resumed_by = utcnow(), operator[:100]
        await record(uow.session, "ai.model.resume", actor=None, org=None, target=model,
                     data={"overruns": row.overruns, "lossMicroCents": row.loss_micro_cents},
                     by=f"operator:{operator}")
    return row


# --- env.ai ---

BINDING = "__SVC_AI__"
ENTRYPOINT = "AI"


async def has_grant(session: StoreSession, project: Project) -> bool:
    """Whether the project is granted env.ai (the area's manifest declares it: the Overview)."""
    return await queries.grant(session, project.id) is not None


async def worker_env(session: StoreSession, ctx: AppContext, project: Project) -> dict[str, Any]:
    """env.ai for a granted project (the area's manifest declares it): a binding to the runtime's
    AI entrypoint, which sends the worker's calls to the gateway here. No key goes to the worker.
    A bundle that does not declare "ai": true still gets it, to be told so by the gateway (403)."""
    if await queries.grant(session, project.id) is None:
        return {}
    return {BINDING: EntrypointBinding(entrypoint=ENTRYPOINT, props={"project": project.id})}


async def chat(ctx: AppContext, project_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """One env.ai chat completion (gateway.py: reserved, forwarded, settled to the exact cost)."""
    return await gateway.chat(ctx, project_id, body)


async def chat_stream(ctx: AppContext, project_id: str, body: dict[str, Any]) -> AsyncIterator[bytes]:
    """A streamed env.ai call: its events, charged for what the upstream reports or delivered."""
    return await gateway.chat_stream(ctx, project_id, body)
