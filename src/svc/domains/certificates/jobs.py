"""The certificates area's jobs: the cycle that compares what certificates svc holds with what it
should hold (the app domain's wildcard, each active custom hostname), asks for the missing and
the due ones, and tells of those nearing expiry without a renewal; and one order
(`certificate.issue`), run with nothing of the store held."""

from __future__ import annotations

from datetime import datetime, timedelta

from svc.adapters.acme.port import AcmeError, AcmeErrorKind, Method
from svc.adapters.acme.settings import AcmeSettings
from svc.adapters.edge.settings import EdgeSettings
from svc.domains.certificates import ocsp, queries, service
from svc.domains.certificates.kinds import CertificateJob
from svc.domains.certificates.settings import CertificateSettings
from svc.jobs.registry import JobRegistry, JobRun
from svc.kit.clock import utcnow
from svc.models import Certificate, CertificateKind, CertificateStatus
from svc.settings import Config
from svc.uow import Tx, UnitOfWork, use_case

ORDER_LEASE = service.ORDER_LEASE
NAMESERVER_WAIT = timedelta(seconds=1)


# svc's local CA signs at once: its cycle runs this often at least, so that a project just made has
# its default hostname's certificate (where each has its own) within seconds.
LOCAL_CHECK_SECONDS = 2.0


def register(registry: JobRegistry, config: Config) -> None:
    seconds = CertificateSettings().certificate_check_seconds
    if config.settings_of(AcmeSettings).certificate_issuer() == "local" and \
            config.settings_of(EdgeSettings).edge_tls_port is not None:
        seconds = min(seconds, LOCAL_CHECK_SECONDS)
    registry.cycle(CertificateJob.cycle, seconds, cycle)
    registry.handler(CertificateJob.issue, issue)
    registry.handler(CertificateJob.ocsp, staple)


@use_case(Tx.WRITE)
async def cycle(run: JobRun) -> None:
    await schedule_ocsp(run.uow)
    await converge(run.uow)
    await warn_expiring(run.uow, now=utcnow())


async def warn_expiring(uow: UnitOfWork, *, now: datetime) -> int:
    """Tell of each certificate nearing its expiry (or past it) without a renewal, once per
    threshold (service.warn_if_due); how many were told."""
    told = 0
    for row in await queries.expiring(uow.session, now + service.WARN_BEFORE[0]):
        told += await service.warn_if_due(uow, row, now=now)
    return told


async def schedule_ocsp(uow: UnitOfWork) -> int:
    """A job for each certificate whose OCSP answer is due (its row leased meanwhile)."""
    now = utcnow()
    due = await queries.ocsp_due(uow.session, now)
    for row in due:
        row.ocsp_refresh_at = now + ORDER_LEASE
        uow.enqueue(CertificateJob.ocsp, {"name": row.name})
    return len(due)


@use_case(Tx.READ_THEN_WRITE)  # the responder is asked with nothing of the store held
async def staple(run: JobRun) -> None:
    name = str(run.payload["name"])
    row = await queries.certificate(run.session, name)
    if row is None or row.fullchain is None:
        return
    fullchain = row.fullchain
    await run.uow.close_reads()
    try:
        stapled, error = await ocsp.fetch(fullchain, now=utcnow()), None
    except ocsp.OcspError as exc:
        stapled, error = None, exc
    await run.uow.begin_write()
    await service.record_ocsp(run.uow, name, fullchain, stapled, error)


async def converge(uow: UnitOfWork) -> int:
    """Rows for the names svc should hold, none for the others, an order for each missing or due
    one; how many orders it asked for. (svc's local CA where the app domain is bare: each default
    hostname's own instead of the wildcard.)"""
    ctx = uow.ctx
    if ctx.adapters.acme is None:
        return 0
    session = uow.session
    now = utcnow()
    wanted = {host: CertificateKind.host for host in await queries.active_custom_hosts(session)}
    if service.default_hosts_own(ctx.config):
        wanted.update({host: CertificateKind.default for host in await queries.default_hosts(session)})
    wildcard = service.wildcard_name(ctx.config)
    if wildcard is not None:
        wanted[wildcard] = CertificateKind.wildcard
    console = service.console_name(ctx.config)
    if console is not None:
        wanted[console] = CertificateKind.console
    held = {row.name: row for row in await queries.certificates(session)}
    for name, row in held.items():
        if name not in wanted:
            await session.delete(row)  # its hostname is gone or no longer active: never ordered again
    asked = 0
    for name, kind in sorted(wanted.items()):
        row = held.get(name) or Certificate(name=name, kind=kind.value, status=CertificateStatus.issuing,
                                            failures=0, created_at=now, updated_at=now, renew_at=now)
        if name not in held:
            session.add(row)
        if row.renew_at is not None and row.renew_at <= now:
            row.renew_at = now + ORDER_LEASE
            uow.enqueue(CertificateJob.issue, {"name": name})
            asked += 1
    return asked


@use_case(Tx.READ_THEN_WRITE)  # the order runs with nothing of the store held
async def issue(run: JobRun) -> None:
    name = str(run.payload["name"])
    row = await queries.certificate(run.session, name)
    if row is None:
        return
    if row.kind == CertificateKind.host and not await queries.is_active_custom_host(run.session, name):
        return  # the hostname is not active (any more): no order for it, ever
    method = service.method_of(row)
    if method is Method.dns01 and run.ctx.adapters.nameserver is None and "nameserver" not in run.ctx.adapters.off:
        # svc's own nameserver is still starting (the job worker runs while the components start):
        # the order waits for it, with no failure counted (a failure would back off for 5 minutes).
        await run.uow.begin_write()
        run.uow.enqueue(CertificateJob.issue, {"name": name}, run_at=utcnow() + NAMESERVER_WAIT)
        return
    await run.uow.close_reads()
    acme = await service.acme_for(run.ctx)
    if acme is None:
        return
    forbidden = await service.caa_refusal(run.ctx, acme, name)
    if forbidden is not None:
        await run.uow.begin_write()
        await service.record_failure(run.uow, name, AcmeError(AcmeErrorKind.caa, forbidden))
        return
    try:
        issued = await acme.issue([name], method, service.StoreSolver(run.ctx))
        try:
            suggested = await acme.renewal_time(issued.fullchain_pem)
        except AcmeError:
            suggested = None
    except AcmeError as exc:
        await run.uow.begin_write()
        await service.record_failure(run.uow, name, exc)
        return
    await run.uow.begin_write()
    renew_at = service.renewal_point(issued.not_before, issued.not_after, suggested)
    await service.record_issued(run.uow, name, issued, renew_at)
