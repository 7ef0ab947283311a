"""Email rules (spec "Email"; docs/email.md). Services flush, never commit.

A project granted email receives mail at its address, `<project>.<org>.<mail domain>` (any local
part), fixed at grant, and sends from it; the plan caps what it sends an hour. The mail log holds
one row per message in or out; its raw message (with the headers svc added) lies in the blob store
until the row is pruned after the plan's keepDays."""

from __future__ import annotations

import os
import tempfile
from datetime import timedelta
from pathlib import Path

from svc.adapters.blobs.port import BlobMissing
from svc.auth.roles import OrgAccess
from svc.context import AppContext
from svc.domains.audit.service import record
from svc.domains.email import errors, queries, records, schemas
from svc.domains.email.accepted import Accepted
from svc.domains.email.settings import EmailSettings
from svc.domains.orgs import service as orgs
from svc.domains.projects import service as projects
from svc.kit.clock import utcnow
from svc.kit.cursors import decode_cursor, encode_cursor
from svc.kit.hosts import valid_host
from svc.kit.store_session import StoreSession
from svc.models import EmailGrant, MailDirection, MailLogEntry, Org, Project
from svc.uow import Tx, UnitOfWork, use_case

# The local part of a project's mail unless it names another (decisions.md).
SENDER_LOCAL_PART = "noreply"


def mail_domain(ctx: AppContext) -> str | None:
    return ctx.settings_of(EmailSettings).mail_domain


def address_for(ctx: AppContext, org: Org, project: Project) -> str | None:
    """The address a grant would fix now (None: no mail domain, or too long a name for DNS)."""
    domain = mail_domain(ctx)
    if domain is None:
        return None
    address = f"{project.name}.{org.slug}.{domain}".lower()
    return address if valid_host(address) else None


def raw_key(project_id: str, mail_id: str) -> str:
    """Where a message's raw bytes lie in the blob store (by project id: a rename moves nothing)."""
    return f"mail/{project_id}/{mail_id}.eml"


async def status(uow: UnitOfWork, org: Org, project: Project) -> schemas.EmailStatus:
    """Filled without a grant too: the address a grant would fix, the plan's cap."""
    grant = await queries.grant(uow.session, project.id)
    address = grant.address if grant is not None else address_for(uow.ctx, org, project)
    if address is None:
        raise errors.EmailNotConfigured()
    counts = await queries.counts_since(uow.session, project.id, utcnow() - timedelta(hours=24))
    return schemas.EmailStatus(
        granted=grant is not None, address=address, sender=f"{SENDER_LOCAL_PART}@{address}",
        hourly_cap=orgs.limits_of(uow.ctx.config, org.plan).mail_per_hour,
        sent24h=counts.get(MailDirection.outbound, 0), received24h=counts.get(MailDirection.inbound, 0))


@use_case(Tx.WRITE)
async def grant(uow: UnitOfWork, access: OrgAccess, project: Project) -> schemas.EmailStatus:
    """Idempotent: a granted project keeps its address. Sending and receiving turn on together; the
    worker finds env.email at its next request."""
    if await queries.grant(uow.session, project.id) is None:
        address = address_for(uow.ctx, access.org, project)
        if address is None:
            raise errors.EmailUnavailable()
        # The address is unique: another project holds it when it was renamed away from this name
        # with its grant, or an org was renamed likewise.
        if await queries.grant_at(uow.session, address) is not None:
            raise errors.AddressTaken()
        uow.session.add(EmailGrant(project_id=project.id, org_id=access.org.id, address=address,
                                   granted_at=utcnow(),
                                   granted_by=access.principal.user.id if access.principal.user else None))
        await uow.session.flush()
        await record(uow.session, "email.grant", actor=access.principal.user, org=access.org, target=project.name,
                     data={"address": address})
        _forget_after_commit(uow, address)
        await projects.bindings_changed(uow, project.id)
        # The mail domain's records, in svc's zone holding it (the cycle repeats it; records.py).
        await records.publish(uow)
    return await status(uow, access.org, project)


@use_case(Tx.WRITE)
async def revoke(uow: UnitOfWork, access: OrgAccess, project: Project) -> None:
    """Idempotent; the log is kept. Mail to the address is refused (550) from the commit on."""
    grant = await queries.grant(uow.session, project.id)
    if grant is not None and await queries.remove_grant(uow.session, project.id):
        _forget_after_commit(uow, grant.address)
        await record(uow.session, "email.revoke", actor=access.principal.user, org=access.org, target=project.name)
        await projects.bindings_changed(uow, project.id)


def _forget_after_commit(uow: UnitOfWork, address: str) -> None:
    """The SMTP server's RCPT check asks the store again about `address` once this commits."""
    answers = uow.ctx.state_of(Accepted)

    async def forget() -> None:
        answers.forget(address)

    uow.after_commit(forget)


async def granted(uow: UnitOfWork, project: Project) -> EmailGrant | None:
    return await queries.grant(uow.session, project.id)


def entry_view(row: MailLogEntry) -> schemas.MailLogEntry:
    return schemas.MailLogEntry(id=row.id, direction=MailDirection(row.direction).value, from_=row.from_addr,
                                to=row.to_addr, subject=row.subject, outcome=row.outcome, size=row.size,
                                spf=row.spf, has_raw=row.raw_key is not None, created_at=row.created_at)


async def log(uow: UnitOfWork, project: Project, query: schemas.MailLogQuery) -> schemas.MailLogPage:
    """Newest first, `query.limit` rows after the cursor (an instant and an id, never an offset:
    mail arriving meanwhile shifts nothing)."""
    before = decode_cursor(query.cursor) if query.cursor else None
    rows = await queries.page(uow.session, project.id, direction=query.direction or None,
                              limit=query.limit + 1, before=before)
    page, more = rows[:query.limit], len(rows) > query.limit
    return schemas.MailLogPage(entries=[entry_view(r) for r in page],
                               next_cursor=encode_cursor(page[-1].created_at, page[-1].id) if more and page else None)


async def entry(uow: UnitOfWork, project: Project, mail_id: str) -> schemas.MailLogEntry:
    row = await queries.entry(uow.session, project.id, mail_id)
    if row is None:
        raise errors.MailNotFound()
    return entry_view(row)


def _temp_file() -> Path:
    fd, name = tempfile.mkstemp(prefix="svc-mail-", suffix=".eml")
    os.close(fd)
    return Path(name)


def _discard(path: Path) -> None:
    path.unlink(missing_ok=True)


async def raw_message(uow: UnitOfWork, project: Project, mail_id: str) -> Path:
    """The raw message in a temporary file the caller deletes (404 when the row has none, or the
    blob store lost it)."""
    row = await queries.entry(uow.session, project.id, mail_id)
    if row is None:
        raise errors.MailNotFound()
    if row.raw_key is None:
        raise errors.RawMissing()
    path = _temp_file()
    try:
        await uow.ctx.blobs.get_to_file(row.raw_key, path)
    except BlobMissing:
        _discard(path)
        raise errors.RawMissing() from None
    except BaseException:
        _discard(path)
        raise
    return path


async def has_grant(session: StoreSession, project: Project) -> bool:
    """Whether the project is granted email (the area's manifest declares it: the Overview)."""
    return await queries.grant(session, project.id) is not None


def unavailable(ctx: AppContext) -> str | None:
    """Why this svc cannot grant email now, in `svc serve`'s words."""
    return None if mail_domain(ctx) else "no mail domain (SVC_MAIL_DOMAIN)"
