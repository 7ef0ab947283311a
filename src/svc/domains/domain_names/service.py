"""The domains area's use cases other than the purchase (saga.py): list, get, check, import,
renew, auto-renew, lock, auth code, sync. The registrar is asked with nothing of the store held
(Tx.READ_THEN_WRITE); what it answers is written with a history line and the audit event."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from datetime import datetime
from typing import TypeVar

from svc.adapters.registrar.port import (
    NameUnavailable,
    NotInAccount,
    PaymentDeclined,
    Registrar,
    RegistrarError,
    Registration,
)
from svc.adapters.registrar.port import RegistrarRejected as Refused
from svc.auth.roles import OrgAccess
from svc.context import AppContext
from svc.domains.audit.service import record
from svc.domains.dns import service as dns
from svc.domains.domain_names import errors, queries, schemas
from svc.domains.domain_names.names import TLD, domain_name
from svc.kit import money
from svc.kit.clock import utcnow
from svc.kit.ids import new_id
from svc.kit.store_session import StoreSession
from svc.models import Domain, DomainEvent, DomainRenewal, DomainSource, DomainStatus
from svc.uow import Tx, UnitOfWork, unit_of_work, use_case

T = TypeVar("T")

AUTO_RENEW_STAYS_ON = ("The registrar-side auto-renew stays on whatever this says: svc renews (or lets the domain "
                       "lapse) by this setting, and the registrar may still renew it at expiry.")


def registrar(ctx: AppContext) -> Registrar:
    found = ctx.adapters.registrar
    if found is None:
        why = ctx.adapters.off.get("registrar")
        raise errors.RegistrarNotConfigured(f"No registrar is configured on this svc ({why})" if why else None)
    return found


def view(domain: Domain, *, notice: str | None = None) -> schemas.Domain:
    return schemas.Domain(name=domain.name, status=domain.status, source=domain.source,  # type: ignore[arg-type]
                          expires_at=domain.expires_at, locked=domain.locked, auto_renew=domain.auto_renew,
                          nameservers=list(domain.nameservers or []), last_error=domain.last_error, notice=notice)


def note(session: StoreSession, domain_id: str, action: str, detail: str) -> None:
    session.add(DomainEvent(domain_id=domain_id, at=utcnow(), action=action, detail=detail[:500]))


def dollars(cents: int | None) -> str:
    return "no price" if cents is None else money.dollars(cents * money.PER_CENT)


@contextlib.contextmanager
def asked(reg: Registrar) -> Iterator[None]:
    """The registrar's failures as this area's errors (502, 402, 422, 409)."""
    try:
        yield
    except RegistrarError as exc:
        raise errors.RegistrarFailed(f"The registrar failed: {exc}") from None
    except PaymentDeclined as exc:
        raise declined(exc) from None
    except Refused as exc:
        raise rejected(exc) from None
    except NameUnavailable as exc:
        raise errors.DomainUnavailable(f"The registrar says the name cannot be registered: {exc}") from None


def declined(exc: PaymentDeclined) -> errors.PaymentFailed:
    return errors.PaymentFailed(f"The registrar could not take the payment: {exc}. Nothing was registered; send "
                                "the request again once the payment method is fixed.")


def rejected(exc: Refused, *, refunded: bool = False) -> errors.RegistrarRejected:
    then = " The payment was refunded." if refunded else ""
    return errors.RegistrarRejected(f"The registrar refused it: {exc}.{then} Correct it and send a new request.",
                                    details={"field": exc.field} if exc.field else None)


def apply_registration(domain: Domain, reg: Registration) -> None:
    domain.expires_at = reg.expires_at
    domain.locked = reg.locked
    domain.auto_renew = reg.auto_renew
    domain.nameservers = list(reg.nameservers)
    domain.updated_at = utcnow()


async def _own(session: StoreSession, access: OrgAccess, text: str, *, lock: bool = False) -> Domain:
    found = await queries.by_name(session, domain_name(text), lock=lock)
    if found is None or found.org_id != access.org.id:
        raise errors.DomainNotFound()
    return found


async def list_domains(uow: UnitOfWork, access: OrgAccess) -> schemas.DomainList:
    return schemas.DomainList(domains=[view(d) for d in await queries.of_org(uow.session, access.org.id)])


async def detail(uow: UnitOfWork, access: OrgAccess, name: str) -> schemas.DomainDetail:
    domain = await _own(uow.session, access, name)
    lines = [schemas.HistoryLine(at=e.at, action=e.action, detail=e.detail)
             for e in await queries.history(uow.session, domain.id)]
    return schemas.DomainDetail(**view(domain).model_dump(), history=lines)


# A search for a bare word ("acme") prices <word>.<tld> under at most this many of the registrar's
# TLDs, these first (in this order) when the registrar sells them, then the rest alphabetically: one
# word costs at most SEARCH_TLDS registrar checks, and a request holds one word at most.
SEARCH_TLDS = 10
PREFERRED_TLDS = ("com", "net", "org", "io", "dev", "app", "co", "ai", "xyz", "me", "site", "online", "tech")


def is_word(text: str) -> bool:
    """A name of one label: a word to search under the registrar's TLDs, not a name to price."""
    return "." not in text.strip().rstrip(".")


def search_tlds(sold: list[str]) -> list[str]:
    """The TLDs a word is searched under: the preferred ones the registrar sells, then the others
    (letters, or an IDN's xn--), SEARCH_TLDS at most."""
    usable = {t for t in (tld.strip().lower().lstrip(".") for tld in sold) if TLD.match(t)}
    first = [t for t in PREFERRED_TLDS if t in usable]
    return (first + sorted(usable - set(first)))[:SEARCH_TLDS]


def _label(text: str, field: str) -> str:
    """A word as the label it is under a TLD (IDNA, lowercase), or 400 naming the field."""
    return domain_name(f"{text.strip().rstrip('.')}.com", field=field).split(".")[0]


@use_case(Tx.READ)
async def check(uow: UnitOfWork, access: OrgAccess, names: list[str]) -> schemas.CheckResults:
    """Availability and prices of full names, and of a bare word under the registrar's TLDs."""
    reg = registrar(uow.ctx)
    words = [i for i, n in enumerate(names) if is_word(n)]
    if len(words) > 1:
        raise errors.InvalidDomain.of_field(f"names[{words[1]}]", "must be a full name (example.com): a search "
                                            "takes one word at a time")
    parsed: list[str | list[str]] = [_label(n, f"names[{i}]") if i in words else domain_name(n, field=f"names[{i}]")
                                     for i, n in enumerate(names)]
    with asked(reg):
        if words:
            word = parsed[words[0]]
            assert isinstance(word, str)
            parsed[words[0]] = [f"{word}.{tld}" for tld in search_tlds(await reg.tlds())]
        wanted = [n for item in parsed for n in ([item] if isinstance(item, str) else item)]
        quotes = await reg.check(list(dict.fromkeys(wanted))) if wanted else []
    by_name = {q.name: q for q in quotes}
    return schemas.CheckResults(results=[
        schemas.CheckResult(name=n, available=by_name[n].available, price_cents=by_name[n].price_cents,
                            renewal_cents=by_name[n].renewal_cents) if n in by_name else
        schemas.CheckResult(name=n, available=False, price_cents=None, renewal_cents=None) for n in wanted])


@use_case(Tx.READ_THEN_WRITE)  # a zone taken over from another org is proven in the public DNS first
async def import_domain(uow: UnitOfWork, access: OrgAccess, text: str) -> tuple[schemas.Domain, bool]:
    """A domain registered elsewhere: its zone here, active; no registrar call. (view, created)."""
    dns.nameserver(uow.ctx)
    name = domain_name(text)
    existing = await queries.by_name(uow.session, name)
    if existing is not None:
        if existing.org_id != access.org.id:
            raise errors.DomainTaken()
        return view(existing), False
    if await dns.held_by_another_org(uow, access, name):
        raise errors.DomainTaken("Another org on this svc holds this domain's zone: if the domain is yours, ask that "
                                 "org to delete it")
    await dns.create_zone(uow, access, name)  # idempotent for the org's own zone
    session = uow.session
    if await queries.by_name(session, name) is not None:  # a concurrent import won
        raise errors.DomainTaken()
    now = utcnow()
    domain = Domain(id=new_id("dom"), org_id=access.org.id, name=name, status=DomainStatus.active,
                    source=DomainSource.imported, years=1, attempt=1, locked=False, auto_renew=False,
                    nameservers=dns.nameservers(uow.ctx.config), created_by=_actor_id(access),
                    created_at=now, updated_at=now)
    session.add(domain)
    await session.flush()
    note(session, domain.id, "import", "Imported: its zone is on svc's nameservers; point the domain's NS there at "
                                       "its registrar")
    await record(session, "domain.import", actor=access.principal.user, org=access.org, target=name,
                 data={"name": name})
    await session.flush()
    return view(domain), True


def _actor_id(access: OrgAccess) -> str | None:
    return access.principal.user.id if access.principal.user else None


async def _registered(uow: UnitOfWork, access: OrgAccess, text: str) -> tuple[Registrar, Domain]:
    """The org's purchased domain and the registrar, for a registrar-side change."""
    reg = registrar(uow.ctx)
    domain = await _own(uow.session, access, text)
    if domain.source != DomainSource.purchase:
        raise errors.ImportedDomain()
    if domain.status in (DomainStatus.pending_payment, DomainStatus.registering):
        raise errors.InvalidDomain.of_field("name", "is not registered yet: finish its purchase first")
    return reg, domain


async def _gone(ctx: AppContext, domain_id: str) -> errors.TransferredOut:
    """The registrar's account lacks the domain: it is transferred_out (written now, in its own
    unit: the caller raises what this returns)."""
    async with unit_of_work(ctx, Tx.WRITE) as uow:
        domain = await queries.by_id(uow.session, domain_id, lock=True)
        if domain is not None and domain.status != DomainStatus.transferred_out:
            domain.status = DomainStatus.transferred_out
            domain.updated_at = utcnow()
            note(uow.session, domain.id, "transferred_out", "The registrar's account no longer holds it: transferred "
                                                            "to another registrar")
            await dns.registrar_released(uow, domain.name)  # its DS is its owner's business now
    return errors.TransferredOut()


async def _written(uow: UnitOfWork, domain_id: str, reg: Registration | None, action: str, said: str,
                   access: OrgAccess | None, audit: dict[str, object] | None = None) -> Domain:
    session = await uow.begin_write()
    domain = await queries.by_id(session, domain_id, lock=True)
    if domain is None:
        raise errors.DomainNotFound()
    if reg is not None:
        apply_registration(domain, reg)
        domain.synced_at = utcnow()
        if domain.status == DomainStatus.expired and reg.expires_at > utcnow():
            domain.status = DomainStatus.active
    note(session, domain.id, action, said)
    if access is not None and audit is not None:
        await record(session, f"domain.{action}", actor=access.principal.user, org=access.org, target=domain.name,
                     data={"name": domain.name, **audit})
    await session.flush()
    return domain


def _day(when: datetime | None) -> str:
    return when.date().isoformat() if when else "unknown"


async def _at_registrar(uow: UnitOfWork, access: OrgAccess, name: str,
                        call: Callable[[Registrar, Domain], Awaitable[T]]) -> tuple[str, T]:
    """A registrar-side change of the org's purchased domain, asked with nothing of the store held:
    (the domain's id, the registrar's answer). Gone from the registrar's account: transferred_out."""
    reg, domain = await _registered(uow, access, name)
    domain_id = domain.id
    await uow.close_reads()
    try:
        with asked(reg):
            return domain_id, await call(reg, domain)
    except NotInAccount:
        raise await _gone(uow.ctx, domain_id) from None


@use_case(Tx.READ_THEN_WRITE)
async def renew(uow: UnitOfWork, access: OrgAccess, name: str, years: int, *,
                request_key: str | None = None) -> tuple[schemas.Domain, bool]:
    """(the domain, replayed). A renewal is keyed by its request, not by the expiry it reads (which
    moves as concurrent renewals land): one is written pending before the registrar is asked, and a
    request that finds it pending with the same length continues it under the same registrar key
    (a resend after a lost answer or a crash, a concurrent identical request): charged once, recorded
    once. An Idempotency-Key names the renewal for good: its replay answers without a new charge."""
    reg, domain = await _registered(uow, access, name)
    domain_id, domain_name_ = domain.id, domain.name
    await uow.close_reads()
    with asked(reg):  # the price, for the record: the registrar charges its renewal price
        quote = (await reg.check([domain_name_]))[0]
    price = quote.renewal_cents * years if quote.renewal_cents is not None else None
    renewal_id, key, replayed = await _renewal(uow.ctx, access, domain_id, years, price, request_key)
    if replayed:
        async with unit_of_work(uow.ctx, Tx.READ) as again:
            found = await queries.by_id(again.session, domain_id)
            if found is None:
                raise errors.DomainNotFound()
            return view(found), True
    try:
        with asked(reg):
            answer = await reg.renew(domain_name_, years=years, key=key)
    except NotInAccount:
        raise await _gone(uow.ctx, domain_id) from None
    except (errors.PaymentFailed, errors.RegistrarRejected, errors.DomainUnavailable):
        await _drop_renewal(uow.ctx, renewal_id)  # refused before any charge: the next request is a new one
        raise
    # errors.RegistrarFailed (502) leaves it pending: maybe charged, so a resend continues it.
    return view(await _renewed(uow, domain_id, renewal_id, answer, access)), False


async def _renewal(ctx: AppContext, access: OrgAccess, domain_id: str, years: int, price: int | None,
                   request_key: str | None) -> tuple[str, str, bool]:
    """(the renewal's id, the registrar's key, replayed): the request's renewal, started or continued
    with the domain's row locked (one pending renewal per domain)."""
    async with unit_of_work(ctx, Tx.WRITE) as uow:
        session = uow.session
        domain = await queries.by_id(session, domain_id, lock=True)
        if domain is None:
            raise errors.DomainNotFound()
        if request_key is not None:
            mine = await queries.renewal_by_request(session, domain_id, request_key)
            if mine is not None:
                if mine.years != years:
                    raise errors.IdempotencyKeyReused(f"This Idempotency-Key renewed {domain.name} for {mine.years} "
                                                      f"year(s), not {years}")
                return mine.id, mine.key, mine.status == "done"
        pending = await queries.pending_renewal(session, domain_id)
        if pending is not None:
            if pending.years == years and (request_key is None or pending.request_key in (None, request_key)):
                return pending.id, pending.key, False
            raise errors.RenewalInProgress(
                f"A renewal of {domain.name} for {pending.years} year(s) is unfinished (the registrar's answer was "
                f"lost){' under another Idempotency-Key' if pending.request_key else ''}: send that request again to "
                "finish it first")
        renewal_id = new_id("rnw")
        key = f"{domain_id}:renew:{renewal_id}:{_day(domain.expires_at)}:{years}"
        session.add(DomainRenewal(id=renewal_id, domain_id=domain_id, request_key=request_key, key=key, years=years,
                                  price_cents=price, status="pending", created_by=_actor_id(access),
                                  created_at=utcnow(), done_at=None))
        await session.flush()
        return renewal_id, key, False


async def _drop_renewal(ctx: AppContext, renewal_id: str) -> None:
    async with unit_of_work(ctx, Tx.WRITE) as uow:
        found = await queries.renewal(uow.session, renewal_id)
        if found is not None and found.status == "pending":
            await uow.session.delete(found)


async def _renewed(uow: UnitOfWork, domain_id: str, renewal_id: str, answer: Registration,
                   access: OrgAccess) -> Domain:
    """The registrar's answer written; the renewal done, its history line and its audit event (with
    the price) written once: by the first of the requests that carried it to be answered."""
    session = await uow.begin_write()
    domain = await queries.by_id(session, domain_id, lock=True)
    renewal = await queries.renewal(session, renewal_id)
    if domain is None:
        raise errors.DomainNotFound()
    if renewal is None or renewal.status != "pending":
        apply_registration(domain, answer)
        domain.synced_at = utcnow()
        await session.flush()
        return domain
    renewal.status, renewal.done_at = "done", utcnow()
    said = (f"Renewed for {renewal.years} year(s) at {dollars(renewal.price_cents)}: now until "
            f"{_day(answer.expires_at)}")
    return await _written(uow, domain_id, answer, "renew", said, access,
                          {"years": renewal.years, "priceCents": renewal.price_cents})


@use_case(Tx.READ_THEN_WRITE)
async def set_auto_renew(uow: UnitOfWork, access: OrgAccess, name: str, enabled: bool) -> schemas.Domain:
    domain_id, answer = await _at_registrar(uow, access, name, lambda reg, d: reg.set_auto_renew(d.name, enabled))
    done = await _written(uow, domain_id, answer, "auto_renew", f"Auto-renew turned {'on' if enabled else 'off'}",
                          access, {"enabled": enabled})
    return view(done, notice=AUTO_RENEW_STAYS_ON)


@use_case(Tx.READ_THEN_WRITE)
async def set_lock(uow: UnitOfWork, access: OrgAccess, name: str, locked: bool) -> schemas.Domain:
    domain_id, answer = await _at_registrar(uow, access, name, lambda reg, d: reg.set_lock(d.name, locked))
    said = "Transfer lock on" if locked else "Transfer lock off: the domain can be transferred away"
    return view(await _written(uow, domain_id, answer, "lock", said, access, {"locked": locked}))


@use_case(Tx.READ_THEN_WRITE)
async def auth_code(uow: UnitOfWork, access: OrgAccess, name: str) -> schemas.AuthCode:
    """The transfer-out code: handed to the caller only, never recorded (history and audit say
    that it was asked for, not what it is)."""
    domain_id, code = await _at_registrar(uow, access, name, lambda reg, d: reg.auth_code(d.name))
    await _written(uow, domain_id, None, "auth_code", "The auth code was asked for (a transfer out may follow)",
                   access, {})
    return schemas.AuthCode(code=code)


@use_case(Tx.READ_THEN_WRITE)
async def sync(uow: UnitOfWork, access: OrgAccess | None, name: str) -> schemas.Domain:
    """The registrar's view written back: expiry, lock, NS, auto-renew; absent: transferred_out.
    An imported domain has no registration here: answered as it is."""
    domain = await (_own(uow.session, access, name) if access is not None else _by_name(uow.session, name))
    if domain.source != DomainSource.purchase or domain.status in (
            DomainStatus.pending_payment, DomainStatus.registering, DomainStatus.transferred_out):
        return view(domain)
    reg = registrar(uow.ctx)
    domain_id, domain_name_ = domain.id, domain.name
    await uow.close_reads()
    try:
        with asked(reg):
            answer = await reg.domain(domain_name_)
    except NotInAccount:
        await _gone(uow.ctx, domain_id)
        async with unit_of_work(uow.ctx, Tx.READ) as again:
            gone = await queries.by_id(again.session, domain_id)
            assert gone is not None
            return view(gone)
    done = await _written(uow, domain_id, answer, "sync", f"Read back from the registrar: until "
                          f"{_day(answer.expires_at)}, {'locked' if answer.locked else 'unlocked'}, NS "
                          f"{', '.join(answer.nameservers)}", None)
    if answer.expires_at <= utcnow() and done.status == DomainStatus.active:
        done.status = DomainStatus.expired
    return view(done)


async def _by_name(session: StoreSession, name: str) -> Domain:
    found = await queries.by_name(session, name)
    if found is None:
        raise errors.DomainNotFound()
    return found
