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

from svc.auth.roles import OrgAccess
from svc.domains.audit.service import record
from svc.domains.certificates import service as certificates
from svc.domains.certificates.schemas import CertificateView
from svc.domains.dns import service as dns
from svc.domains.hostnames import errors, names, queries, schemas, verify
from svc.domains.hostnames.kinds import HostnameJob
from svc.domains.hostnames.settings import HostnameSettings
from svc.domains.notifications import service as notifications
from svc.domains.orgs import service as orgs
from svc.domains.projects import service as projects
from svc.kit.clock import utcnow
from svc.models import Hostname, HostnameKind, HostnameStatus, Project
from svc.settings import Config
from svc.uow import Tx, UnitOfWork, use_case

log = logging.getLogger("svc.hostnames")

# The verification cycle's work per run: the longest-unchecked first, a few lookups at a time.
CYCLE_BATCH = 200
LOOKUPS_AT_ONCE = 8
VALUE_BYTES = 32


def fallback_origin(config: Config) -> str:
    return config.settings_of(HostnameSettings).fallback_origin_name(config.settings.app_domain)


# --- views ---

def view(row: Hostname, config: Config, certificate: CertificateView | None = None) -> schemas.Hostname:
    return schemas.Hostname.of(row, txt_name=verify.txt_name(row.host), cname_target=fallback_origin(config),
                               certificate=certificate)


async def _viewed(uow: UnitOfWork, row: Hostname) -> schemas.Hostname:
    """One hostname as the API shows it, with the certificate it is served with."""
    found = await certificates.for_hosts(uow.session, uow.ctx.config, [(row.host, row.kind)])
    return view(row, uow.ctx.config, found.get(row.host))


async def list_hostnames(uow: UnitOfWork, project: Project) -> schemas.HostnameList:
    config = uow.ctx.config
    rows = await queries.of_project(uow.session, project.id)
    found = await certificates.for_hosts(uow.session, config, [(r.host, r.kind) for r in rows])
    return schemas.HostnameList(hostnames=[view(r, config, found.get(r.host)) for r in rows])


async def _own(uow: UnitOfWork, project: Project, host: str, *, lock: bool = False) -> Hostname:
    """The project's hostname named by the path's {host} (any case, unicode, a trailing dot), or 404."""
    stored = names.lookup_form(host)
    row = await queries.by_host(uow.session, stored, lock=lock) if stored else None
    if row is None or row.project_id != project.id:
        raise errors.HostnameNotFound(details={"host": (stored or host.strip())[:253]})
    return row


# --- add and remove ---

# How an active hostname was proven: "zone" and "txt" name the org; a CNAME to the fallback origin
# any org could point, so another org's stronger proof takes a name proven so over.
STRONG_PROOFS = frozenset({"zone", "txt"})


@use_case(Tx.READ_THEN_WRITE)  # a contested name is proven in the public DNS with nothing of the store held
async def add_hostname(uow: UnitOfWork, access: OrgAccess, project: Project, name: str) -> schemas.Hostname:
    """A new custom hostname, pending until ownership is proven (a check is enqueued with it, so a
    name in the org's own delegated zone turns active within seconds). The same name again in the
    same project: the existing row, unchanged. Another project's of this org, or another org's that
    it proved (by TXT or its delegated zone): 409 hostname_taken. Another org's that it never proved
    (pending, or by a CNAME anyone can point): taken over when this org proves the name in the
    public DNS now (its delegated zone, or TXT _svc-verify.<host> with the value in the 409's
    details.claim); the other org is told."""
    config = uow.ctx.config
    host = names.normalize(name)
    names.check_not_service(config, host)
    existing = await queries.by_host(uow.session, host)
    proven_by: str | None = None
    previous_project: str | None = None
    if existing is not None:
        if existing.project_id == project.id:
            return view(existing, config)
        proven_by = await _prove_claim(uow, access, existing)
    else:
        await uow.close_reads()
    session = await uow.begin_write()
    if existing is not None:
        # Again, in the write: the row proven against must still be the one there.
        current = await queries.by_host(session, host, lock=True)
        if current is not None:
            if current.project_id != existing.project_id or current.verification_value != existing.verification_value:
                raise errors.HostnameTaken(details={"host": host})
            await _release(uow, current)
            previous_project = current.project_id
    row = Hostname(host=host, project_id=project.id, kind=HostnameKind.custom, status=HostnameStatus.pending_dns,
                   verification_value=secrets.token_urlsafe(VALUE_BYTES), last_error=None, created_at=utcnow(),
                   checked_at=None)
    if proven_by is not None:
        row.status, row.proven_by, row.checked_at = HostnameStatus.active, proven_by, utcnow()
        row.verification_value = dns.claim(uow, access.org.id, host).value
    try:
        async with session.begin_nested():
            session.add(row)
            await session.flush()
    except IntegrityError:  # a concurrent add of the same name won
        raise errors.HostnameTaken(details={"host": host}) from None
    linked = await dns.link_host(uow, access.org.id, host, fallback_origin(config))
    if proven_by is None:
        uow.enqueue(HostnameJob.verify, {"host": host}, max_attempts=1)
    # The edge answers for it from now on: the pending page (never the project's content), or the
    # project itself once proven; a name taken over leaves its previous project.
    await projects.edge_changed(uow, project.id, *([previous_project] if previous_project else []))
    await record(session, "hostname.add", actor=access.principal.user, org=access.org, target=host,
                 data={"project": project.name, "host": host, "dnsRecord": linked,
                       **({"provenBy": proven_by, "tookOver": True} if proven_by else {})})
    await session.flush()
    if proven_by is not None:
        await certificates.order_now(uow, [host])
    return view(row, config)


async def _prove_claim(uow: UnitOfWork, access: OrgAccess, held: Hostname) -> str:
    """`held` belongs to another project: 409 hostname_taken unless it is another org's, never
    strongly proven, and this org proves the name now (its delegated zone; else the claim's TXT,
    asked of the public DNS with nothing of the store held). Returns how it was proven."""
    host = held.host
    holder = await queries.holder_org(uow.session, host)
    if holder == access.org.id:
        raise errors.HostnameTaken("This hostname is used by another project of this org", details={"host": host})
    if held.status == HostnameStatus.active and held.proven_by in STRONG_PROOFS:
        raise errors.HostnameTaken("This hostname is used by a project of another org, which proved it is theirs",
                                   details={"host": host})
    cover = (await dns.covering_zones(uow, [(host, access.org.id)])).get(host)
    wanted = dns.claim(uow, access.org.id, host)
    await uow.close_reads()
    if cover is not None and cover.delegated:
        return "zone"
    if await dns.claim_proven(uow, wanted):
        return "txt"
    raise errors.HostnameTaken(
        f"This hostname is claimed by a project of another org, which has not proven it is theirs: to take it "
        f"over, publish TXT {wanted.name} \"{wanted.value}\" in the domain's DNS, then add it again",
        details={"host": host, "claim": wanted.as_details()})


async def _release(uow: UnitOfWork, row: Hostname) -> None:
    """Another org's unproven hostname, taken over: removed (with the record svc made for it in that
    org's zone), in the holder's audit trail, and its admins told. The edge follows the caller's
    change."""
    session = uow.session
    holder_id = await queries.holder_org(session, row.host)
    project_name = await queries.project_name(session, row.project_id)
    await session.delete(row)
    if holder_id is None:
        return
    await dns.unlink_host(uow, holder_id, row.host)
    holder = await orgs.org_by_id(uow, holder_id)
    if holder is not None:
        await record(session, "hostname.delete", actor=None, org=holder, target=row.host,
                     data={"project": project_name, "host": row.host,
                           "reason": "taken over by an org that proved control of the name"})
        await notifications.claim_released(
            uow, holder, kind="hostname.released",
            message=f"The hostname {row.host} was removed from {project_name}: another org proved in the "
                    f"public DNS that the name is theirs, and {holder.slug} never had.",
            settings=uow.ctx.settings)
    await session.flush()


async def delete_hostname(uow: UnitOfWork, access: OrgAccess, project: Project, host: str) -> None:
    """Unrouted at the edge and its project link removed (when svc made one); the default: 400."""
    session = uow.session
    row = await _own(uow, project, host, lock=True)
    if row.kind == HostnameKind.default:
        raise errors.DefaultHostname(details={"host": row.host})
    await session.delete(row)
    unlinked = await dns.unlink_host(uow, access.org.id, row.host)
    await projects.edge_changed(uow, project.id)
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
    lookups, then writes). Returns how many turned active; the edge follows them. A name in its
    org's zone on svc is proven by the zone only once the public DNS delegates it to svc; before,
    its lastError says so (unless a TXT or CNAME in the public DNS proves it anyway)."""
    ctx = uow.ctx
    covers = await dns.covering_zones(uow, [(i.host, i.org_id) for i in items])
    await uow.close_reads()
    port = dns.resolver(ctx)
    target = fallback_origin(ctx.config)
    at_once = asyncio.Semaphore(LOOKUPS_AT_ONCE)

    async def one(item: queries.Pending) -> Checked:
        cover = covers.get(item.host)
        if cover is not None and cover.delegated:
            return Checked(item, verify.Check(proven=True, by="zone"))
        async with at_once:
            check = await verify.check_records(port, item.host, item.value, target)
        if not check.proven and cover is not None:
            check = verify.Check(proven=False, error=cover.why_not)
        return Checked(item, check)

    results = await asyncio.gather(*(one(i) for i in items))
    session = await uow.begin_write()
    now = utcnow()
    turned = 0
    projects_turned: set[str] = set()
    for done in results:
        if await queries.record_check(session, done.item.host, done.item.value,
                                      proven_by=done.check.by if done.check.proven else None,
                                      error=done.check.error, at=now):
            turned += 1
            projects_turned.add(done.item.project_id)
            log.info("hostname %s is active (ownership proven by %s)", done.item.host, done.check.by)
    if projects_turned:
        await projects.edge_changed(uow, *projects_turned)
        # Their certificates now, not at the next check: https within seconds of turning active.
        await certificates.order_now(uow, [d.item.host for d in results if d.check.proven])
    return turned


@use_case(Tx.READ_THEN_WRITE)  # the lookups run with the store given back
async def verify_hostname(uow: UnitOfWork, project: Project, host: str) -> schemas.Hostname:
    """POST verify: the check now. Active (and default) hostnames are answered as they are."""
    row = await _own(uow, project, host)
    if row.kind == HostnameKind.custom and row.status == HostnameStatus.pending_dns:
        item = await queries.pending_one(uow.session, row.host)
        if item is not None:
            await _check_all(uow, [item])
        # Read again either way: the background check may have proven it since the first read.
        row = await _own(uow, project, host)
    return await _viewed(uow, row)


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
    return PendingHost(host=host, txt_name=verify.txt_name(host), cname_target=fallback_origin(uow.ctx.config),
                       last_error=row.last_error if row is not None else None)
