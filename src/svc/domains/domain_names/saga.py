"""The purchase: a saga whose every step is written before the next is tried, so a repeat request
(or the same request after a crash, even a kill -9 between two steps) resumes where it stopped, and
nothing is ever charged without registering.

    pending_payment --charge--> registering --register--> setting_ns --zone, NS--> active

1. Payment: the price asked again, then charged under the key "<domain id>:<attempt>": the
   registrar charges a key once, so a resend after a lost answer finds the same charge.
2. Registration with the contact (passed on, never stored) and the charge. Registering again with
   the same charge answers the same registration. Refused for good (422, or the name taken
   meanwhile): the refund owed is written (`refund_due`) and is from then on the only next step
   (a failed refund or a crash leaves it so: a resend or the sync cycle does the refund, never a
   registration); once refunded, the history, the audit trail and the org's admins say so, and the
   domain is back to pending_payment with the next attempt's key.
3. The zone on svc's nameservers (first, so svc answers for it once the NS change lands), the NS
   set at the registrar, then the zone marked delegated and the domain active, in one write.

Each step's outside call runs with nothing of the store held; its outcome is one short write."""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy.exc import IntegrityError

from svc.adapters.registrar.port import (
    Contact,
    NameUnavailable,
    PaymentDeclined,
    Registrar,
    RegistrarError,
)
from svc.adapters.registrar.port import RegistrarRejected as Refused
from svc.auth.roles import OrgAccess
from svc.context import AppContext
from svc.domains.audit.service import record
from svc.domains.dns import service as dns
from svc.domains.domain_names import errors, queries, schemas
from svc.domains.domain_names.names import domain_name
from svc.domains.domain_names.service import (
    apply_registration,
    asked,
    declined,
    dollars,
    note,
    registrar,
    rejected,
    view,
)
from svc.domains.notifications import service as notifications
from svc.errors import AppError
from svc.kit.clock import utcnow
from svc.kit.ids import new_id
from svc.models import Domain, DomainSource, DomainStatus, Org, User
from svc.uow import Tx, UnitOfWork, unit_of_work, use_case

log = logging.getLogger("svc.domains")


def _email_notice(contact: Contact) -> str:
    return (f"The registrar sends its verification email to {contact.email}: the registrant must confirm it, or "
            "the registry may suspend the domain.")


@use_case(Tx.READ)  # the steps write in units of their own (this module's docstring)
async def purchase(uow: UnitOfWork, access: OrgAccess, body: schemas.PurchaseRequest) -> tuple[schemas.Domain, bool]:
    """(the domain, created): created False when the request resumed or found it finished."""
    ctx = uow.ctx
    reg = registrar(ctx)
    dns.nameserver(ctx)
    name = domain_name(body.name)
    c = body.contact
    contact = Contact(name=c.name, email=c.email, phone=c.phone, street=c.street, city=c.city,
                      postal_code=c.postal_code, country=c.country)
    existing = await queries.by_name(uow.session, name)
    if existing is not None and existing.org_id != access.org.id:
        raise errors.DomainTaken()
    if existing is not None and existing.source == DomainSource.imported:
        raise errors.DomainTaken("This org imported this domain: it is registered elsewhere already")
    if existing is not None and existing.status not in _RESUMABLE:
        return view(existing), False
    if existing is None and await dns.held_by_another_org(uow, access, name):
        raise errors.DomainTaken("Another org on this svc holds this domain's zone")
    created = existing is None
    domain_id = existing.id if existing is not None else await _start(ctx, reg, access, name, body.years)
    done = await _run(ctx, reg, access, domain_id, contact)
    return view(done, notice=_email_notice(contact)), created


_RESUMABLE = (DomainStatus.pending_payment, DomainStatus.registering, DomainStatus.setting_ns)


async def _start(ctx: AppContext, reg: Registrar, access: OrgAccess, name: str, years: int) -> str:
    """The domain's row, pending_payment, once the registrar says the name is for sale."""
    with asked(reg):
        quote = (await reg.check([name]))[0]
    if not quote.available or quote.price_cents is None:
        raise errors.DomainUnavailable()
    async with unit_of_work(ctx, Tx.WRITE) as uow:
        session = uow.session
        found = await queries.by_name(session, name, lock=True)
        if found is not None:  # a concurrent request made it first
            if found.org_id != access.org.id:
                raise errors.DomainTaken()
            return found.id
        now = utcnow()
        domain = Domain(id=new_id("dom"), org_id=access.org.id, name=name, status=DomainStatus.pending_payment,
                        source=DomainSource.purchase, years=years, price_cents=quote.price_cents * years, attempt=1,
                        locked=False, auto_renew=True, nameservers=[],
                        created_by=access.principal.user.id if access.principal.user else None,
                        created_at=now, updated_at=now)
        try:
            async with session.begin_nested():
                session.add(domain)
                await session.flush()
        except IntegrityError:
            # A concurrent request inserted the name between the look above and this write (on
            # PostgreSQL the lock above holds no row yet): the same outcome as finding it there.
            found = await queries.by_name(session, name)
            if found is None or found.org_id != access.org.id:
                raise errors.DomainTaken() from None
            return found.id
        note(session, domain.id, "quote", f"Priced at {dollars(domain.price_cents)} for {years} year(s)")
        # The contact is not in the audit trail: it was passed to the registrar, and svc keeps none of it.
        await record(session, "domain.purchase", actor=access.principal.user, org=access.org, target=name,
                     data={"name": name, "years": years, "priceCents": domain.price_cents})
        return domain.id


async def _load(ctx: AppContext, domain_id: str) -> Domain:
    async with unit_of_work(ctx, Tx.READ) as uow:
        found = await queries.by_id(uow.session, domain_id)
        if found is None:
            raise errors.DomainNotFound()
        return found


async def _stopped(ctx: AppContext, domain_id: str, why: str, **changes: object) -> None:
    """The saga stopped at its current step: why, in the row and its history."""
    async with unit_of_work(ctx, Tx.WRITE) as uow:
        domain = await queries.by_id(uow.session, domain_id, lock=True)
        if domain is None:
            return
        for key, value in changes.items():
            setattr(domain, key, value)
        domain.last_error = why[:500]
        domain.updated_at = utcnow()
        note(uow.session, domain_id, "stopped", why)


async def _run(ctx: AppContext, reg: Registrar, access: OrgAccess, domain_id: str, contact: Contact) -> Domain:
    domain = await _load(ctx, domain_id)
    if domain.status == DomainStatus.pending_payment:
        domain = await _pay(ctx, reg, domain)
    if domain.status == DomainStatus.registering and domain.refund_due is not None:
        # The registration was refused for good and its refund failed: that refund is the next
        # step, and the only one (registering again would spend the charge on a refused request).
        await _refund(ctx, reg, access.principal.user, access.org, domain)
        raise _refused(domain.refund_due)
    if domain.status == DomainStatus.registering:
        domain = await _register(ctx, reg, access, domain, contact)
    if domain.status == DomainStatus.setting_ns:
        domain = await _delegate(ctx, reg, access, domain)
    return domain


async def _pay(ctx: AppContext, reg: Registrar, domain: Domain) -> Domain:
    try:
        quote = (await reg.check([domain.name]))[0]
        if not quote.available or quote.price_cents is None:
            await _abandon(ctx, domain.id)
            raise errors.DomainUnavailable()
        amount = quote.price_cents * domain.years
        charge = await reg.charge(name=domain.name, years=domain.years, amount_cents=amount,
                                  key=f"{domain.id}:{domain.attempt}")
    except PaymentDeclined as exc:
        await _stopped(ctx, domain.id, f"Payment declined: {exc}")
        raise declined(exc) from None
    except RegistrarError as exc:
        await _stopped(ctx, domain.id, f"The registrar failed before the payment: {exc}")
        raise errors.RegistrarFailed(f"The registrar failed: {exc}. Nothing was charged; send the request again.") \
            from None
    except Refused as exc:
        await _stopped(ctx, domain.id, f"The registrar refused the payment: {exc}")
        raise rejected(exc) from None
    async with unit_of_work(ctx, Tx.WRITE) as uow:
        row = await queries.by_id(uow.session, domain.id, lock=True)
        if row is None:
            raise errors.DomainNotFound()
        if row.status == DomainStatus.pending_payment:  # else a concurrent request recorded it
            row.status, row.charge_id, row.price_cents = DomainStatus.registering, charge, amount
            row.last_error, row.updated_at = None, utcnow()
            note(uow.session, row.id, "payment", f"Charged {dollars(amount)} (charge {charge})")
        return row


async def _abandon(ctx: AppContext, domain_id: str) -> None:
    """A purchase with no charge outstanding whose name is no longer for sale: nothing holds it."""
    async with unit_of_work(ctx, Tx.WRITE) as uow:
        row = await queries.by_id(uow.session, domain_id, lock=True)
        if row is not None and row.status == DomainStatus.pending_payment:
            await uow.session.delete(row)


async def _register(ctx: AppContext, reg: Registrar, access: OrgAccess, domain: Domain, contact: Contact) -> Domain:
    assert domain.charge_id is not None
    try:
        answer = await reg.register(name=domain.name, years=domain.years, contact=contact, charge_id=domain.charge_id)
    except RegistrarError as exc:
        await _stopped(ctx, domain.id, f"Paid, not registered yet: the registrar failed: {exc}")
        raise errors.SagaIncomplete(f"Paid, not registered yet (the registrar failed: {exc}): send the same request "
                                    "again to continue") from None
    except (Refused, NameUnavailable, PaymentDeclined) as exc:
        due = _refund_due(exc)
        await _owe_refund(ctx, domain.id, due)
        await _refund(ctx, reg, access.principal.user, access.org, domain)
        raise _refused(due) from None
    async with unit_of_work(ctx, Tx.WRITE) as uow:
        row = await queries.by_id(uow.session, domain.id, lock=True)
        if row is None:
            raise errors.DomainNotFound()
        if row.status == DomainStatus.registering and row.refund_due is None:
            apply_registration(row, answer)
            row.status, row.last_error, row.synced_at = DomainStatus.setting_ns, None, utcnow()
            note(uow.session, row.id, "registered", f"Registered until {answer.expires_at.date().isoformat()}; the "
                                                    f"registrar's verification email went to the registrant")
        return row


def _refund_due(exc: Exception) -> dict[str, Any]:
    """What the refund owed remembers of the refusal: enough to answer its resend as it was answered."""
    kind = ("declined" if isinstance(exc, PaymentDeclined) else "rejected" if isinstance(exc, Refused)
            else "unavailable")
    return {"kind": kind, "why": str(exc)[:300], "field": exc.field if isinstance(exc, Refused) else None}


def _refused(due: dict[str, Any]) -> AppError:
    """The answer to a purchase whose registration was refused for good, once its charge is back."""
    why = str(due.get("why") or "")
    if due.get("kind") == "declined":
        return declined(PaymentDeclined(why))
    if due.get("kind") == "rejected":
        field = due.get("field")
        return rejected(Refused(why, field if isinstance(field, str) else None), refunded=True)
    return errors.DomainUnavailable("The name was registered by somebody else meanwhile: the payment was refunded")


async def _owe_refund(ctx: AppContext, domain_id: str, due: dict[str, Any]) -> None:
    """Written before the refund is asked: from now on the saga's next step is that refund (a crash
    or a failed refund leaves it so, and the resend does exactly it)."""
    async with unit_of_work(ctx, Tx.WRITE) as uow:
        row = await queries.by_id(uow.session, domain_id, lock=True)
        if row is not None and row.status == DomainStatus.registering and row.refund_due is None:
            row.refund_due, row.updated_at = due, utcnow()
            row.last_error = f"Registration refused ({due['why']}): the payment is to be refunded"[:500]


async def _refund(ctx: AppContext, reg: Registrar, actor: User | None, org: Org, domain: Domain) -> None:
    """The charge given back (the registrar refunds a charge once, however often asked), then the
    domain back to pending_payment under the next attempt's key, with the history line, the audit
    event and the org's admins told, once. A refund that fails leaves the refund the next step (502)."""
    assert domain.charge_id is not None
    try:
        await reg.refund(domain.charge_id)
    except RegistrarError as exc:
        await _stopped(ctx, domain.id, f"Registration refused; the refund failed ({exc}): send the request again to "
                                       "retry it")
        raise errors.SagaIncomplete(f"The registration was refused, and the refund of the payment failed ({exc}): "
                                    "send the same request again to retry the refund") from None
    async with unit_of_work(ctx, Tx.WRITE) as uow:
        row = await queries.by_id(uow.session, domain.id, lock=True)
        if row is None or row.status != DomainStatus.registering or row.charge_id != domain.charge_id \
                or row.refund_due is None:
            return  # a concurrent resend recorded it
        refused = f"Registration refused ({row.refund_due.get('why')})"
        amount = row.price_cents
        note(uow.session, row.id, "refund", f"{refused}: refunded {dollars(amount)} (charge {row.charge_id})")
        await record(uow.session, "domain.refund", actor=actor, org=org, target=row.name,
                     data={"name": row.name, "priceCents": amount, "chargeId": row.charge_id})
        await notifications.mailed(uow, org, kind="domain.refund", settings=ctx.settings,
                                   subject=f"the purchase of {row.name} was refunded",
                                   message=f"The purchase of {row.name} was refunded ({dollars(amount)}): {refused}.",
                                   data={"name": row.name, "priceCents": amount})
        row.status, row.charge_id, row.attempt = DomainStatus.pending_payment, None, row.attempt + 1
        row.refund_due = None
        row.last_error, row.updated_at = f"{refused}; the payment was refunded"[:500], utcnow()


async def refunds_owed(ctx: AppContext, limit: int = 100) -> int:
    """The sync cycle's: each refund owed that no resend came for is tried again (a refund happens
    whether or not the buyer sends the request again); how many were made."""
    reg = ctx.adapters.registrar
    if reg is None:
        return 0
    async with unit_of_work(ctx, Tx.READ) as uow:
        owed = await queries.refunds_owed(uow.session, limit)
    made = 0
    for domain_id in owed:
        async with unit_of_work(ctx, Tx.READ) as uow:
            domain = await queries.by_id(uow.session, domain_id)
            org = await uow.session.get(Org, domain.org_id) if domain is not None else None
        if domain is None or org is None or domain.refund_due is None:
            continue
        try:
            await _refund(ctx, reg, None, org, domain)
        except errors.SagaIncomplete as exc:  # the next round tries again
            log.warning("domains: the refund owed for %s failed: %s", domain.name, exc.message)
            continue
        made += 1
    return made


async def _delegate(ctx: AppContext, reg: Registrar, access: OrgAccess, domain: Domain) -> Domain:
    ours = dns.nameservers(ctx.config)
    async with unit_of_work(ctx, Tx.READ_THEN_WRITE) as uow:
        await dns.create_zone(uow, access, domain.name)  # idempotent: the org's zone answers as it is
    try:
        answer = await reg.set_nameservers(domain.name, [n.rstrip(".") for n in ours])
    except (RegistrarError, Refused) as exc:
        await _stopped(ctx, domain.id, f"Registered; setting its nameservers failed: {exc}")
        raise errors.SagaIncomplete(f"Registered, but setting its nameservers failed ({exc}): send the same request "
                                    "again to continue") from None
    async with unit_of_work(ctx, Tx.WRITE) as uow:
        row = await queries.by_id(uow.session, domain.id, lock=True)
        if row is None:
            raise errors.DomainNotFound()
        if row.status == DomainStatus.setting_ns:
            apply_registration(row, answer)
            await dns.mark_delegated(uow, row.org_id, row.name)
            row.status, row.last_error = DomainStatus.active, None
            note(uow.session, row.id, "nameservers", f"Nameservers set to {', '.join(answer.nameservers)}; its zone "
                                                     "on svc is delegated: active")
        return row


__all__ = ["purchase", "refunds_owed"]
