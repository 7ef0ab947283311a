"""Custom hostname rules: add (normalised, unique across svc, never a service name), remove, the
ownership check (verify.py) run on demand and by the background cycle (jobs.py), and the record
svc creates for a hostname inside the org's own zone (dns.service.link_host). Services flush,
never commit.

A hostname is pending_dns until ownership is proven, then active for good (the spec names no other
state): the edge routes active hostnames (projects.queries.routing_table) and answers a pending one
with a page naming the record that is missing (pending_page)."""

from __future__ import annotations

import asyncio
import logging
import secrets
from dataclasses import dataclass

from sqlalchemy.exc import IntegrityError

from svc.adapters.resolver.port import Resolver
from svc.auth.roles import OrgAccess
from svc.context import AppContext
from svc.domains.audit.service import record
from svc.domains.dns import service as dns
from svc.domains.hostnames import errors, names, queries, schemas, verify
from svc.domains.projects import service as projects
from svc.errors import ServiceUnavailable
from svc.kit.clock import utcnow
from svc.models import Hostname, HostnameKind, HostnameStatus, JobKind, Project
from svc.settings import Settings
from svc.uow import Tx, UnitOfWork, use_case

log = logging.getLogger("svc.hostnames")

# The verification cycle's work per run: the longest-unchecked first, a few lookups at a time.
CYCLE_BATCH = 200
LOOKUPS_AT_ONCE = 8
VALUE_BYTES = 32


def resolver(ctx: AppContext) -> Resolver:
    found = ctx.adapters.resolver
    if found is None:  # svc.app sets one at start; a context built without it cannot check
        raise ServiceUnavailable("No DNS resolver is configured for ownership checks")
    return found


def fallback_origin(settings: Settings) -> str:
    return settings.fallback_origin_name


# --- views ---

def view(row: Hostname, settings: Settings) -> schemas.Hostname:
    return schemas.Hostname.of(row, txt_name=verify.txt_name(row.host), cname_target=fallback_origin(settings))


async def list_hostnames(uow: UnitOfWork, project: Project) -> schemas.HostnameList:
    settings = uow.ctx.settings
    rows = await queries.of_project(uow.session, project.id)
    return schemas.HostnameList(hostnames=[view(r, settings) for r in rows])


async def _own(uow: UnitOfWork, project: Project, host: str, *, lock: bool = False) -> Hostname:
    """The project's hostname named by the path's {host} (any case, unicode, a trailing dot), or 404."""
    stored = names.lookup_form(host)
    row = await queries.by_host(uow.session, stored, lock=lock) if stored else None
    if row is None or row.project_id != project.id:
        raise errors.HostnameNotFound(details={"host": (stored or host.strip())[:253]})
    return row


# --- add and remove ---

async def add_hostname(uow: UnitOfWork, access: OrgAccess, project: Project, name: str) -> schemas.Hostname:
    """A new custom hostname, pending until ownership is proven (a check is enqueued with it, so a
    name in the org's own zone turns active within seconds). The same name again in the same
    project: the existing row, unchanged."""
    settings = uow.ctx.settings
    host = names.normalize(name)
    names.check_not_service(settings, host)
    session = uow.session
    existing = await queries.by_host(session, host)
    if existing is not None:
        return _existing(existing, project, settings)
    row = Hostname(host=host, project_id=project.id, kind=HostnameKind.custom, status=HostnameStatus.pending_dns,
                   verification_value=secrets.token_urlsafe(VALUE_BYTES), last_error=None, created_at=utcnow(),
                   checked_at=None)
    try:
        async with session.begin_nested():
            session.add(row)
            await session.flush()
    except IntegrityError:  # a concurrent add of the same name won
        existing = await queries.by_host(session, host)
        if existing is None:
            raise
        return _existing(existing, project, settings)
    linked = await dns.link_host(uow, access.org.id, host, fallback_origin(settings))
    uow.enqueue(JobKind.hostname_verify, {"host": host}, max_attempts=1)
    # The edge answers for it from now on: the pending page, never the project's content.
    await projects.edge_changed(uow)
    await record(session, "hostname.add", actor=access.principal.user, org=access.org, target=host,
                 data={"project": project.name, "host": host, "dnsRecord": linked})
    await session.flush()
    return view(row, settings)


def _existing(row: Hostname, project: Project, settings: Settings) -> schemas.Hostname:
    if row.project_id != project.id:
        raise errors.HostnameTaken("This hostname is used by another project", details={"host": row.host})
    return view(row, settings)


async def delete_hostname(uow: UnitOfWork, access: OrgAccess, project: Project, host: str) -> None:
    """Unrouted at the edge and its project link removed (when svc made one); the default: 400."""
    session = uow.session
    row = await _own(uow, project, host, lock=True)
    if row.kind == HostnameKind.default:
        raise errors.DefaultHostname(details={"host": row.host})
    await session.delete(row)
    unlinked = await dns.unlink_host(uow, access.org.id, row.host)
    await projects.edge_changed(uow)
    await record(session, "hostname.delete", actor=access.principal.user, org=access.org, target=row.host,
                 data={"project": project.name, "host": row.host, "dnsRecordRemoved": unlinked})
    await session.flush()


async def release_project(uow: UnitOfWork, org_id: str, project_id: str) -> int:
    """A project's teardown: remove the project links of its custom hostnames (the rows go with the
    project). Returns how many records were removed. Safe to run twice."""
    removed = 0
    for host in await queries.custom_hosts_of(uow.session, project_id):
        removed += await dns.unlink_host(uow, org_id, host)
    return removed


# --- the ownership check ---

@dataclass(frozen=True)
class Checked:
    item: queries.Pending
    check: verify.Check


async def _check_all(uow: UnitOfWork, items: list[queries.Pending]) -> int:
    """Check pending hostnames (Tx.READ_THEN_WRITE: this reads, gives the store back for the
    lookups, then writes). Returns how many turned active; the edge follows them."""
    ctx = uow.ctx
    in_zone = await dns.hosts_in_org_zones(uow, [(i.host, i.org_id) for i in items])
    await uow.close_reads()
    port = resolver(ctx)
    target = fallback_origin(ctx.settings)
    at_once = asyncio.Semaphore(LOOKUPS_AT_ONCE)

    async def one(item: queries.Pending) -> Checked:
        if item.host in in_zone:
            return Checked(item, verify.Check(proven=True, by="zone"))
        async with at_once:
            return Checked(item, await verify.check_records(port, item.host, item.value, target))

    results = await asyncio.gather(*(one(i) for i in items))
    session = await uow.begin_write()
    now = utcnow()
    turned = 0
    for done in results:
        if await queries.record_check(session, done.item.host, done.item.value, proven=done.check.proven,
                                      error=done.check.error, at=now):
            turned += 1
            log.info("hostname %s is active (ownership proven by %s)", done.item.host, done.check.by)
    if turned:
        await projects.edge_changed(uow)
    return turned


@use_case(Tx.READ_THEN_WRITE)  # the lookups run with the store given back
async def verify_hostname(uow: UnitOfWork, project: Project, host: str) -> schemas.Hostname:
    """POST verify: the check now. Active (and default) hostnames are answered as they are."""
    row = await _own(uow, project, host)
    if row.kind == HostnameKind.custom and row.status == HostnameStatus.pending_dns:
        item = await queries.pending_one(uow.session, row.host)
        if item is not None:
            await _check_all(uow, [item])
            row = await _own(uow, project, host)
    return view(row, uow.ctx.settings)


@use_case(Tx.READ_THEN_WRITE)
async def verify_pending(uow: UnitOfWork, host: str | None = None) -> int:
    """The `hostname.verify` job: one hostname (enqueued by its add), or, for the periodic cycle,
    the pending ones checked longest ago (CYCLE_BATCH of them)."""
    if host is not None:
        one = await queries.pending_one(uow.session, host)
        items = [one] if one is not None else []
    else:
        items = await queries.pending(uow.session, CYCLE_BATCH)
    if not items:
        return 0
    return await _check_all(uow, items)


# --- the edge's answer for a pending hostname ---

@dataclass(frozen=True)
class PendingHost:
    """What the public page of a pending hostname may show: the records to create, what the last
    check saw. Never the verification value (anyone can open the page)."""

    host: str
    txt_name: str
    cname_target: str
    last_error: str | None


async def pending_host(uow: UnitOfWork, host: str) -> PendingHost | None:
    """The pending custom hostname `host` of an active project, or None (unknown or active)."""
    found = await queries.pending_one(uow.session, host)
    if found is None:
        return None
    row = await queries.by_host(uow.session, host)
    return PendingHost(host=host, txt_name=verify.txt_name(host), cname_target=fallback_origin(uow.ctx.settings),
                       last_error=row.last_error if row is not None else None)
