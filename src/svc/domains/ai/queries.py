"""SQL for AI: grants, the org's credit row, and the ledger."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import CursorResult, Table, bindparam, delete, func, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite

from svc.db import dialect_insert, is_postgres
from svc.kit.store_session import StoreSession
from svc.models import (
    AICredit,
    AIGrant,
    AILedgerEntry,
    AIModelOverrun,
    AIReservation,
    AIUsage,
    AuditEvent,
    Org,
    Project,
)


async def grant(session: StoreSession, project_id: str) -> AIGrant | None:
    return await session.get(AIGrant, project_id)


async def remove_grant(session: StoreSession, project_id: str) -> bool:
    removed = await session.execute(delete(AIGrant).where(AIGrant.project_id == project_id)
                                    .execution_options(synchronize_session=False))
    assert isinstance(removed, CursorResult)
    return removed.rowcount > 0


_CREDIT = select(AICredit).where(AICredit.org_id == bindparam("org_id"))
_CREDIT_HELD = _CREDIT.with_for_update()


async def credit(session: StoreSession, org_id: str, *, lock: bool = False) -> AICredit | None:
    """The org's credit row; `lock`: held until the transaction ends (FOR UPDATE on PostgreSQL)."""
    return (await session.scalars(_CREDIT_HELD if lock else _CREDIT, {"org_id": org_id})).first()


async def ensure_credit(session: StoreSession, org_id: str, now: datetime) -> None:
    """The org's credit row, made at 0 the first time an amount moves."""
    await session.execute(dialect_insert(session, AICredit.__table__).values(
        org_id=org_id, balance_micro_cents=0, reserved_micro_cents=0, autotopup_enabled=False, updated_at=now)
        .on_conflict_do_nothing(index_elements=["org_id"]))


async def add_entry(session: StoreSession, *, org_id: str, kind: str, micro_cents: int, now: datetime,
                    project_id: str | None = None, model: str | None = None, input_tokens: int | None = None,
                    output_tokens: int | None = None, order_id: str | None = None, note: str | None = None) -> int:
    """A ledger row and the balance it moves, in the one transaction: the ledger sums to the balance."""
    await ensure_credit(session, org_id, now)
    entry = AILedgerEntry(org_id=org_id, kind=kind, micro_cents=micro_cents, created_at=now, project_id=project_id,
                          model=model, input_tokens=input_tokens, output_tokens=output_tokens, order_id=order_id,
                          note=note[:500] if note else None)
    session.add(entry)
    await session.execute(update(AICredit).where(AICredit.org_id == org_id).values(
        balance_micro_cents=AICredit.balance_micro_cents + micro_cents, updated_at=now))
    await session.flush()
    return entry.ledger_id


async def spent_since(session: StoreSession, project_id: str, since: datetime) -> int:
    """What the project's calls cost since `since` (a positive number of micro-cents)."""
    total = await session.scalar(select(func.coalesce(func.sum(AILedgerEntry.micro_cents), 0)).where(
        AILedgerEntry.project_id == project_id, AILedgerEntry.kind == "call", AILedgerEntry.created_at >= since))
    return -int(total or 0)


async def entries(session: StoreSession, org_id: str, *, limit: int, before: int | None) -> list[AILedgerEntry]:
    statement = select(AILedgerEntry).where(AILedgerEntry.org_id == org_id)
    if before is not None:
        statement = statement.where(AILedgerEntry.ledger_id < before)
    return list((await session.scalars(statement.order_by(AILedgerEntry.ledger_id.desc()).limit(limit))).all())


async def project_names(session: StoreSession, project_ids: set[str]) -> dict[str, str]:
    if not project_ids:
        return {}
    rows = await session.execute(select(Project.id, Project.name).where(Project.id.in_(sorted(project_ids))))
    return {project_id: name for project_id, name in rows}


async def has_order(session: StoreSession, order_id: str) -> bool:
    """Whether the provider's order was credited (the ledger's order_id is unique)."""
    return await session.scalar(select(AILedgerEntry.ledger_id).where(AILedgerEntry.order_id == order_id)) is not None


async def refused_before(session: StoreSession, order_id: str) -> bool:
    """Whether a paid order of credit was refused before (ai.topup.refused names it): told once."""
    return await session.scalar(select(AuditEvent.id).where(
        AuditEvent.action == "ai.topup.refused", AuditEvent.target == order_id).limit(1)) is not None


async def refused_unsettled(session: StoreSession, limit: int = 200) -> list[AuditEvent]:
    """Paid orders of credit refused (ai.topup.refused), newest first, that no ledger row settles
    since (an operator's credit of that order: svc admin credit --order)."""
    settled = select(AILedgerEntry.order_id).where(AILedgerEntry.order_id.is_not(None))
    return list((await session.scalars(
        select(AuditEvent).where(AuditEvent.action == "ai.topup.refused", AuditEvent.target.not_in(settled))
        .order_by(AuditEvent.at.desc()).limit(limit))).all())


async def waits_to_be_settled(session: StoreSession, org_id: str, order_id: str) -> bool:
    """Whether the org's paid order `order_id` was refused and no ledger row settles it yet."""
    refused = await session.scalar(select(AuditEvent.id).where(
        AuditEvent.action == "ai.topup.refused", AuditEvent.target == order_id, AuditEvent.org_id == org_id)
        .limit(1)) is not None
    return refused and not await has_order(session, order_id)


async def known_orders(session: StoreSession, order_ids: list[str]) -> set[str]:
    """Of these orders, the ones credited (on the ledger) or refused (ai.topup.refused) before."""
    known: set[str | None] = set()
    for at in range(0, len(order_ids), 500):
        chunk = order_ids[at:at + 500]
        known.update((await session.scalars(select(AILedgerEntry.order_id).where(
            AILedgerEntry.order_id.in_(chunk)))).all())
        known.update((await session.scalars(select(AuditEvent.target).where(
            AuditEvent.action == "ai.topup.refused", AuditEvent.target.in_(chunk)))).all())
    return {k for k in known if k}


async def waiting_for_orders(session: StoreSession, since: datetime) -> list[str]:
    """Orgs with a checkout for credit since `since` (audited ai.checkout) or a charge under way."""
    checkouts = select(AuditEvent.org_id).where(AuditEvent.action == "ai.checkout", AuditEvent.at >= since,
                                                AuditEvent.org_id.is_not(None))
    charging = select(AICredit.org_id).where(AICredit.autotopup_charging_since.is_not(None))
    return sorted({str(o) for o in (await session.scalars(checkouts.union(charging))).all()})


async def stale_reservations(session: StoreSession, before: datetime) -> list[AIReservation]:
    """Holds of calls that started before `before`: a crash left them (a live call settles sooner)."""
    return list((await session.scalars(select(AIReservation).where(AIReservation.created_at < before)
                                       .order_by(AIReservation.org_id))).all())


async def spend_by_day(session: StoreSession, org_id: str, since: datetime) -> list[tuple[str, str | None, int]]:
    """What the org's calls cost since `since`, by UTC day and project: (YYYY-MM-DD, project id, micro-cents)."""
    day = func.date(AILedgerEntry.created_at)
    rows = await session.execute(
        select(day, AILedgerEntry.project_id, func.sum(AILedgerEntry.micro_cents))
        .where(AILedgerEntry.org_id == org_id, AILedgerEntry.kind == "call", AILedgerEntry.created_at >= since)
        .group_by(day, AILedgerEntry.project_id))
    return [(str(d)[:10], project, -int(total or 0)) for d, project, total in rows.all()]


async def org_spent_since(session: StoreSession, org_id: str, since: datetime) -> int:
    total = await session.scalar(select(func.coalesce(func.sum(AILedgerEntry.micro_cents), 0)).where(
        AILedgerEntry.org_id == org_id, AILedgerEntry.kind == "call", AILedgerEntry.created_at >= since))
    return -int(total or 0)


async def last_ledger_id(session: StoreSession, org_id: str) -> int:
    found = await session.scalar(select(func.max(AILedgerEntry.ledger_id)).where(AILedgerEntry.org_id == org_id))
    return int(found or 0)


async def topped_up_since(session: StoreSession, org_id: str, after: int) -> bool:
    return await session.scalar(select(AILedgerEntry.ledger_id).where(
        AILedgerEntry.org_id == org_id, AILedgerEntry.ledger_id > after,
        AILedgerEntry.kind.in_(("topup", "autotopup"))).limit(1)) is not None


# The gateway's statements, built once (each call only binds its values) on the tables, not the
# ORM classes: every env.ai call runs them (bench/ai.py). They go through the session as every
# statement does: on the transaction's connection instead (svc.db.run_core, removed) a call's store
# work cost 0.96-1.03x as much CPU on SQLite, 0.96-1.06x on PostgreSQL, within the rounds' noise
# (bench/store.py, ai.call, two runs); end to end, what svc adds to an HTTP call moved with the
# machine's load, not with the change (bench/ai.py, alternated: 3.72-6.47 ms with it, 2.25-7.59 ms
# without). So this is not a hot path (docs/architecture.md, "The store").
_PROJECTS, _ORGS, _GRANTS = (cast(Table, m.__table__) for m in (Project, Org, AIGrant))
_CREDITS, _LEDGER, _HOLDS, _USAGE_ROWS, _OVERRUNS = (cast(Table, m.__table__) for m in (
    AICredit, AILedgerEntry, AIReservation, AIUsage, AIModelOverrun))
_SUBJECT = (select(_PROJECTS.c.state, _PROJECTS.c.manifest, _ORGS.c.id, _ORGS.c.plan, _GRANTS.c.project_id)
            .select_from(_PROJECTS.join(_ORGS, _ORGS.c.id == _PROJECTS.c.org_id)
                         .outerjoin(_GRANTS, _GRANTS.c.project_id == _PROJECTS.c.id))
            .where(_PROJECTS.c.id == bindparam("project_id")))
_COUNTS = select(
    # Calls settled in the last minute: at most maxCallsPerMinute rows (ix_ai_ledger_project_id_created_at).
    select(func.count()).select_from(_LEDGER).where(
        _LEDGER.c.project_id == bindparam("project_id"), _LEDGER.c.created_at >= bindparam("minute_ago"),
        _LEDGER.c.kind == "call").scalar_subquery(),
    select(func.count()).select_from(_HOLDS).where(
        _HOLDS.c.project_id == bindparam("project_id"),
        _HOLDS.c.created_at >= bindparam("minute_ago")).scalar_subquery(),
    select(func.coalesce(func.sum(_HOLDS.c.micro_cents), 0)).where(
        _HOLDS.c.project_id == bindparam("project_id")).scalar_subquery(),
    # A day's spend by minute: at most 1,440 rows, however many calls.
    select(func.coalesce(func.sum(_USAGE_ROWS.c.micro_cents), 0)).where(
        _USAGE_ROWS.c.project_id == bindparam("project_id"), _USAGE_ROWS.c.minute >= bindparam("day_ago"))
    .scalar_subquery(),
    # Whether svc stopped lending to the model (its provider billed a call more than its hold): a
    # primary-key lookup in a table that is nearly always empty, in the statement the call runs anyway.
    select(_OVERRUNS.c.stopped_since).where(_OVERRUNS.c.model == bindparam("model"))
    .scalar_subquery())


@dataclass(frozen=True)
class CallSubject:
    """What a gateway call needs of its project and org (plain values: no ORM objects on the hot path)."""

    active: bool
    manifest: dict[str, Any]
    org_id: str
    plan: str
    granted: bool


async def call_subject(session: StoreSession, project_id: str) -> CallSubject | None:
    """A gateway call's project, its org, and whether it is granted: one statement."""
    row = (await session.execute(_SUBJECT, {"project_id": project_id})).first()
    if row is None:
        return None
    return CallSubject(active=row[0] == "active", manifest=row[1] or {}, org_id=row[2], plan=row[3],
                       granted=row[4] is not None)


_AMOUNTS_HELD = (select(_CREDITS.c.balance_micro_cents, _CREDITS.c.reserved_micro_cents)
                 .where(_CREDITS.c.org_id == bindparam("org_id")).with_for_update())


async def amounts_held(session: StoreSession, org_id: str) -> tuple[int, int] | None:
    """The org's balance and what calls in flight hold, its credit row held until the transaction
    ends: every reservation of the org takes its turn here."""
    row = (await session.execute(_AMOUNTS_HELD, {"org_id": org_id})).first()
    return None if row is None else (int(row[0]), int(row[1]))


_RESERVE = insert(_HOLDS)
_HOLD = (update(_CREDITS).where(_CREDITS.c.org_id == bindparam("credit_of"))
         .values(reserved_micro_cents=_CREDITS.c.reserved_micro_cents + bindparam("held"),
                 updated_at=bindparam("now")))
_HOLD_IF_COVERED = _HOLD.where(
    _CREDITS.c.balance_micro_cents - _CREDITS.c.reserved_micro_cents >= bindparam("held"))


async def hold_if_covered(session: StoreSession, org_id: str, micro_cents: int, now: datetime) -> bool:
    """`micro_cents` held back from the org's balance when what is not held already covers it,
    the credit row held until the transaction ends (every reservation of the org takes its turn
    here): one statement for nearly every call. False, nothing changed, when it does not cover it
    or the org has no credit row yet."""
    held = await session.execute(_HOLD_IF_COVERED, {"credit_of": org_id, "held": micro_cents, "now": now})
    assert isinstance(held, CursorResult)
    return held.rowcount == 1


async def hold(session: StoreSession, org_id: str, micro_cents: int, now: datetime) -> None:
    """`micro_cents` held back from the org's balance (its credit row held by amounts_held)."""
    await session.execute(_HOLD, {"credit_of": org_id, "held": micro_cents, "now": now})


async def reserve(session: StoreSession, *, reservation_id: str, org_id: str, project_id: str, micro_cents: int,
                  now: datetime) -> None:
    """The call's reservation row, of what was held back for it."""
    await session.execute(_RESERVE, {"id": reservation_id, "org_id": org_id, "project_id": project_id,
                                     "micro_cents": micro_cents, "created_at": now})


@dataclass(frozen=True)
class Settled:
    """The org's credit as a settlement left it: what auto top-up and the low-balance notice read."""

    before: int
    after: int
    autotopup: bool
    threshold: int | None


# The settlement's move of the balance, the hold let go, and what auto top-up reads, in one
# statement (it holds the credit row on PostgreSQL, as SELECT ... FOR UPDATE would).
_UNHOLD = (update(_CREDITS).where(_CREDITS.c.org_id == bindparam("credit_of"))
           .values(balance_micro_cents=_CREDITS.c.balance_micro_cents + bindparam("moved"),
                   reserved_micro_cents=_CREDITS.c.reserved_micro_cents - bindparam("held"),
                   updated_at=bindparam("now"))
           .returning(_CREDITS.c.balance_micro_cents, _CREDITS.c.autotopup_enabled, _CREDITS.c.autotopup_stopped,
                      _CREDITS.c.autotopup_threshold_micro_cents))
_UNRESERVE = delete(_HOLDS).where(_HOLDS.c.id == bindparam("reservation_id"))
_ENTRY = insert(_LEDGER)


async def settle(session: StoreSession, *, org_id: str, reservation_id: str, held: int, now: datetime,
                 entry: dict[str, Any] | None) -> Settled:
    """A call's hold let go and, when it cost something, its ledger row (`entry`: kind "call",
    negative micro_cents) with the balance it moves: one transaction, the credit row held first."""
    moved = int(entry["micro_cents"]) if entry is not None else 0
    row = (await session.execute(_UNHOLD, {"credit_of": org_id, "moved": moved, "held": held, "now": now})).one()
    await session.execute(_UNRESERVE, {"reservation_id": reservation_id})
    if entry is not None:
        await session.execute(_ENTRY, {"order_id": None, "note": None, **entry, "org_id": org_id, "created_at": now})
    after = int(row[0])
    return Settled(before=after - moved, after=after, autotopup=bool(row[1]) and not row[2], threshold=row[3])


async def call_counts(session: StoreSession, project_id: str, model: str, minute_ago: datetime,
                      day_ago: datetime) -> tuple[int, int, int, datetime | None]:
    """For a gateway call's caps, in one statement: the project's calls in the last minute (settled
    or in flight), what its calls in flight hold, and what its calls cost since `day_ago` (whole
    minutes: the minute `day_ago` falls in counts whole, so a cap is never passed, at worst
    reached up to a minute early); and since when svc stopped lending to `model` (None: it lends)."""
    row = (await session.execute(_COUNTS, {"project_id": project_id, "minute_ago": minute_ago,
                                           "day_ago": minute_of(day_ago), "model": model})).one()
    stopped = row[4]
    if isinstance(stopped, str):  # SQLite hands a scalar subquery's time back as text
        stopped = datetime.fromisoformat(stopped)
    return int(row[0] or 0) + int(row[1] or 0), int(row[2] or 0), int(row[3] or 0), stopped


def minute_of(when: datetime) -> datetime:
    return when.replace(second=0, microsecond=0)


def _usage_upsert(insert: Any) -> Any:
    statement = insert(AIUsage.__table__).values(
        project_id=bindparam("project_id"), minute=bindparam("minute"), calls=1,
        micro_cents=bindparam("micro_cents"))
    return statement.on_conflict_do_update(
        index_elements=["project_id", "minute"],
        set_={"calls": AIUsage.__table__.c.calls + 1,
              "micro_cents": AIUsage.__table__.c.micro_cents + statement.excluded.micro_cents})


# One call more in a project's minute, in each store's spelling of ON CONFLICT (built once: every call runs it).
_USAGE = {"postgresql": _usage_upsert(postgresql.insert), "sqlite": _usage_upsert(sqlite.insert)}


async def add_usage(session: StoreSession, project_id: str, micro_cents: int, now: datetime) -> None:
    """One call in the project's minute of `now` (in the transaction of its ledger row)."""
    await session.execute(_USAGE["postgresql" if is_postgres(session) else "sqlite"],
                          {"project_id": project_id, "minute": minute_of(now), "micro_cents": micro_cents})


async def purge_usage(session: StoreSession, before: datetime) -> None:
    await session.execute(delete(AIUsage).where(AIUsage.minute < before).execution_options(synchronize_session=False))


async def overran(session: StoreSession, *, model: str, org_id: str, project_id: str, held: int, billed: int,
                  now: datetime) -> None:
    """A call of `model` billed more than its hold: svc's loss added to the model's record, and the
    gateway stopped lending to it (in the settlement's transaction: the record is there when the
    charge is)."""
    values = {"stopped_since": now, "last_at": now, "last_held_micro_cents": held, "last_billed_micro_cents": billed,
              "last_org_id": org_id, "last_project_id": project_id}
    table = AIModelOverrun.__table__
    statement = dialect_insert(session, table).values(model=model, overruns=1, loss_micro_cents=billed - held,
                                                      **values)
    await session.execute(statement.on_conflict_do_update(index_elements=["model"], set_={
        **values, "overruns": table.c.overruns + 1,
        "loss_micro_cents": table.c.loss_micro_cents + (billed - held),
        # Stopped since the first overrun not yet resumed.
        "stopped_since": func.coalesce(table.c.stopped_since, now)}))


async def overruns(session: StoreSession) -> list[AIModelOverrun]:
    """Every model that ever overran its hold, the stopped ones first."""
    return list((await session.scalars(select(AIModelOverrun).order_by(
        AIModelOverrun.stopped_since.is_(None), AIModelOverrun.last_at.desc()))).all())


async def overrun(session: StoreSession, model: str, *, lock: bool = False) -> AIModelOverrun | None:
    found = select(AIModelOverrun).where(AIModelOverrun.model == model)
    return (await session.scalars(found.with_for_update() if lock else found)).first()
