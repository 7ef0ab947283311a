"""Certificates svc holds and how it gets them (docs/tls.md). Services flush, never commit.

What svc holds a certificate for is decided by the store alone: the wildcard of the app domain
(`*.<SVC_APP_DOMAIN>`, one certificate for every project's default hostname, proven by DNS-01 on
svc's own nameserver) and each active custom hostname (HTTP-01, answered by the edge from the
store). Nothing else is ever ordered. A certificate's key is sealed with the keyring; the account
key too (made once per ACME directory).

An order runs with nothing of the store held; its outcome is written after. A failure keeps the
certificate the name had (the host stays served with it, or over http) and tries again later with
a growing, jittered backoff, never in a tight loop; the CA's rate limits and CAA refusals are said
in words on the row."""

from __future__ import annotations

import logging
import random
from datetime import datetime, timedelta

from svc.adapters.acme.port import Acme, AcmeError, AcmeErrorKind, Issued, Method
from svc.adapters.acme.settings import AcmeSettings
from svc.adapters.edge.port import ServedCertificate
from svc.adapters.nameserver.port import RRsetData
from svc.adapters.nameserver.settings import NameserverSettings
from svc.context import AppContext
from svc.domains.certificates import caa, ocsp, queries
from svc.domains.certificates.kinds import CertificateJob
from svc.domains.certificates.schemas import CertificateSummary, CertificateView
from svc.domains.notifications import service as notifications
from svc.kit.clock import utcnow
from svc.kit.store_session import StoreSession
from svc.models import AcmeAccount, AcmeChallenge, Certificate, CertificateKind, CertificateStatus
from svc.settings import Config
from svc.uow import Tx, UnitOfWork, unit_of_work

log = logging.getLogger("svc.certificates")

RENEW_FRACTION = 2 / 3  # of the lifetime, when the CA gives no renewal window
BACKOFF = (timedelta(minutes=5), timedelta(minutes=30), timedelta(hours=2), timedelta(hours=6), timedelta(hours=24))
CHALLENGE_TTL = 60
# A certificate's order is asked for once: its renew_at moves this far ahead until the order's
# outcome sets the real one (a slow order is not asked for again by the next check).
ORDER_LEASE = timedelta(minutes=15)
# A certificate not renewed this close to its expiry is said to the operators and its owner, once
# per threshold, and once more when it has run out (WARN_BEFORE[-1] is the expiry itself).
WARN_BEFORE = (timedelta(days=14), timedelta(days=7), timedelta(days=1), timedelta(0))
# Past its renewal point by this much with no failure said yet, a certificate still not renewed is
# told of too (its orders never finish); a renewal under way (short certificates reach a threshold
# before their renewal point) is not.
WARN_GRACE = timedelta(hours=1)


def wildcard_name(config: Config) -> str | None:
    """`*.<SVC_APP_DOMAIN>`, or None: a bare name (`*.localhost`: no TLS client takes a wildcard one
    label under the root), or over ACME a name no public CA could prove (under localhost)."""
    domain = config.settings.app_domain.strip(".").lower()
    if "." not in domain:
        return None
    local = config.settings_of(AcmeSettings).certificate_issuer() == "local"
    if not local and (domain == "localhost" or domain.endswith(".localhost")):
        return None
    return f"*.{domain}"


def default_hosts_own(config: Config) -> bool:
    """Each project's default hostname gets a certificate of its own: svc's local CA where the app
    domain has no wildcard a client takes (`localhost`, `make run`'s)."""
    return config.settings_of(AcmeSettings).certificate_issuer() == "local" and wildcard_name(config) is None


def console_name(config: Config) -> str | None:
    """SVC_PUBLIC_URL's host when it needs a certificate of its own (the edge fronts the dashboard
    there, and the app domain's wildcard does not cover it)."""
    host = config.settings.console_host()
    wildcard = wildcard_name(config)
    if host is None or (wildcard is not None and host.partition(".")[2] == wildcard[2:]):
        return None
    return host


def seal_context(name: str) -> str:
    return f"certificate/{name}"


async def acme_for(ctx: AppContext) -> Acme | None:
    """The ACME client with the account's key (made and sealed on first use); None: ACME is off."""
    make = ctx.adapters.acme
    url = ctx.settings_of(AcmeSettings).acme_directory_url
    if make is None:
        return None
    if url is None or ctx.settings_of(AcmeSettings).certificate_issuer() == "local":
        return make(None)  # svc's local CA: no account
    async with unit_of_work(ctx, Tx.READ) as uow:
        row = await queries.account(uow.session, url)
        if row is not None:
            return make(ctx.keys.unseal(row.sealed_key, context=f"acme/{url}").decode())
    acme = make(None)
    async with unit_of_work(ctx, Tx.WRITE) as uow:
        row = await queries.account(uow.session, url)
        if row is not None:  # made meanwhile by another process: its key is the account's
            return make(ctx.keys.unseal(row.sealed_key, context=f"acme/{url}").decode())
        uow.session.add(AcmeAccount(directory_url=url, created_at=utcnow(),
                                    sealed_key=ctx.keys.seal(acme.account_key_pem().encode(), context=f"acme/{url}")))
    return acme


async def caa_refusal(ctx: AppContext, acme: Acme, name: str) -> str | None:
    """Why the CAA records of `name` forbid svc's CA (caa.py), read before ordering; None: go on."""
    resolver = ctx.adapters.resolver
    if resolver is None or ctx.settings_of(AcmeSettings).certificate_issuer() == "local":
        return None  # svc's local CA: no CAA names it
    identities = [i.strip().lower() for i in ctx.settings_of(AcmeSettings).acme_caa_identities.split(",") if i.strip()]
    try:
        identities += [i for i in await acme.caa_identities() if i not in identities]
    except AcmeError:
        pass  # the CA does not answer: the order will say so
    return await caa.refusal(resolver, name, tuple(identities))


class StoreSolver:
    """Publishes challenges where the CA looks: DNS-01 as a TXT record on svc's nameserver (in the
    app domain's zone there), HTTP-01 as a row the edge answers from."""

    def __init__(self, ctx: AppContext) -> None:
        self.ctx = ctx

    def _zone(self) -> str:
        return self.ctx.settings.app_domain.strip(".").lower() + "."

    async def publish(self, method: Method, name: str, token: str, value: str) -> None:
        if method is Method.dns01:
            nameserver = self.ctx.adapters.nameserver
            if nameserver is None:
                raise AcmeError(AcmeErrorKind.rejected, "DNS-01 needs svc's nameserver, and DNS is off here")
            ours = self.ctx.settings_of(NameserverSettings).nameserver_names
            await nameserver.ensure_zone(self._zone(), nameservers=ours)
            await nameserver.apply(self._zone(), replace=[RRsetData(name.rstrip(".") + ".", "TXT", CHALLENGE_TTL,
                                                                    (f'"{value}"',))], delete=[])
            return
        async with unit_of_work(self.ctx, Tx.WRITE) as uow:
            uow.session.add(AcmeChallenge(token=token, host=name, key_authorization=value, created_at=utcnow()))

    async def withdraw(self, method: Method, name: str, token: str, value: str) -> None:
        if method is Method.dns01:
            nameserver = self.ctx.adapters.nameserver
            if nameserver is not None:
                await nameserver.apply(self._zone(), replace=[], delete=[(name.rstrip(".") + ".", "TXT")])
            return
        async with unit_of_work(self.ctx, Tx.WRITE) as uow:
            await queries.drop_challenge(uow.session, token)


async def challenge_answer(uow: UnitOfWork, token: str) -> str | None:
    """What the edge answers at /.well-known/acme-challenge/<token> (None: 404)."""
    row = await queries.challenge(uow.session, token)
    return row.key_authorization if row is not None else None


def backoff(failures: int, *, now: datetime) -> datetime:
    """When to try again after `failures` failures in a row: 5 min, 30 min, 2 h, 6 h, then daily,
    each with a fifth of jitter so that many names failing together do not retry together."""
    step = BACKOFF[min(failures, len(BACKOFF)) - 1]
    return now + step * random.uniform(0.9, 1.1)


def renewal_point(not_before: datetime, not_after: datetime, suggested: datetime | None) -> datetime:
    """When to renew: the time the CA suggests (ARI) when it lies within the certificate's lifetime
    (a window past notAfter would let the certificate run out first), else two thirds of the
    lifetime."""
    if suggested is not None and not_before <= suggested < not_after:
        return suggested
    return not_before + (not_after - not_before) * RENEW_FRACTION


async def record_issued(uow: UnitOfWork, name: str, issued: Issued, renew_at: datetime) -> None:
    row = await queries.certificate(uow.session, name, lock=True)
    if row is None:
        return  # not wanted any more (its hostname went meanwhile)
    row.fullchain = issued.fullchain_pem
    row.sealed_key = uow.ctx.keys.seal(issued.key_pem.encode(), context=seal_context(name))
    row.not_before, row.not_after, row.issuer = issued.not_before, issued.not_after, issued.issuer[:200]
    row.status = CertificateStatus.active
    row.last_error = None
    row.failures = 0
    row.warned_at = None
    row.renew_at = renew_at
    # A new certificate: the old one's OCSP answer is not its; ask its responder, if it names one.
    row.ocsp_response = row.ocsp_valid_until = None
    row.ocsp_refresh_at = utcnow() if ocsp.responder(issued.fullchain_pem) else None
    row.updated_at = utcnow()
    log.info("certificate for %s issued by %s, valid until %s", name, issued.issuer, issued.not_after.isoformat())


async def record_failure(uow: UnitOfWork, name: str, error: AcmeError) -> None:
    row = await queries.certificate(uow.session, name, lock=True)
    if row is None:
        return
    now = utcnow()
    row.failures += 1
    row.last_error = error.message[:1000]
    # A certificate still valid keeps serving: the row stays active with the reason beside it.
    if row.fullchain is None or (row.not_after is not None and row.not_after <= now):
        row.status = CertificateStatus.failed
    row.renew_at = max(error.retry_after or now, backoff(row.failures, now=now))
    row.updated_at = now
    log.warning("certificate for %s: %s (next try %s)", name, error.message, row.renew_at.isoformat())
    await warn_if_due(uow, row, now=now)


def warn_level(row: Certificate, at: datetime) -> int:
    """How many of WARN_BEFORE's thresholds the certificate has passed at `at` (0: none)."""
    assert row.not_after is not None
    left = row.not_after - at
    return sum(1 for before in WARN_BEFORE if left <= before)


async def warn_if_due(uow: UnitOfWork, row: Certificate, *, now: datetime) -> bool:
    """Tell the operators and the owner that the certificate has not been renewed, once per
    threshold it passes (14, 7 and 1 days before its expiry, and at it), when its renewal failed or
    its renewal point passed over an hour ago (at its expiry, whatever the reason). The threshold
    told last is the one `warned_at` had passed; a new certificate clears it. Whether it told."""
    if row.fullchain is None or row.not_before is None or row.not_after is None:
        return False
    overdue = (row.failures > 0 or row.not_after <= now
               or now >= renewal_point(row.not_before, row.not_after, None) + WARN_GRACE)
    level = warn_level(row, now)
    if not overdue or level == 0 or (row.warned_at is not None and warn_level(row, row.warned_at) >= level):
        return False
    row.warned_at = now
    await _warn(uow, row, now)
    return True


async def _warn(uow: UnitOfWork, row: Certificate, now: datetime) -> None:
    """The operators (SVC_OPERATORS' addresses, and the log) for every certificate; for a custom
    hostname also its org (a notification and a mail to its admins)."""
    assert row.not_after is not None
    why = f"svc could not renew it: {row.last_error}" if row.last_error else "svc has not renewed it yet"
    if row.not_after <= now:
        message = (f"The certificate of {row.name} ran out at {row.not_after:%Y-%m-%d %H:%M} UTC and {why}. "
                   f"The edge no longer serves it: {row.name} is served over http only until svc renews it.")
        subject = f"the certificate of {row.name} ran out"
    else:
        days = (row.not_after - now).days
        left = f"{days} days" if days >= 1 else "less than a day"
        message = (f"The certificate of {row.name} runs out in {left} ({row.not_after:%Y-%m-%d %H:%M} UTC) and "
                   f"{why}. svc keeps trying; once it runs out, {row.name} is served over http only.")
        subject = f"the certificate of {row.name} is not renewing"
    log.error("%s", message)
    settings = uow.ctx.settings
    await notifications.operators_mailed(uow, subject=subject, message=message, settings=settings)
    owner = await queries.host_owner(uow.session, row.name) if row.kind == CertificateKind.host else None
    if owner is None:
        return
    org, project = owner
    await notifications.mailed(uow, org, kind="certificate.expiring", project=project, message=message,
                               subject=subject, settings=settings,
                               data={"host": row.name, "notAfter": row.not_after.isoformat()})


def key_pem(ctx: AppContext, row: Certificate) -> str:
    """The certificate's private key, for the edge only (never a response, a log line or an audit row)."""
    assert row.sealed_key is not None
    return ctx.keys.unseal(row.sealed_key, context=seal_context(row.name)).decode()


def method_of(row: Certificate) -> Method:
    return Method.dns01 if row.kind == CertificateKind.wildcard else Method.http01  # host, console


class EdgeCertificates:
    """What the edge serves over TLS (adapters/edge/port.py CertificateSource; svc.app hands it in):
    every certificate svc holds a chain for, with its key unsealed for the edge's files alone."""

    def __init__(self, ctx: AppContext) -> None:
        self.ctx = ctx

    async def version(self) -> str:
        async with unit_of_work(self.ctx, Tx.READ) as uow:
            return await queries.served_version(uow.session, utcnow())

    async def certificates(self) -> list[ServedCertificate]:
        """The ones not past notAfter (an expired certificate is no better than none: its host is
        served over http, not sent to https to meet a browser's refusal)."""
        now = utcnow()
        async with unit_of_work(self.ctx, Tx.READ) as uow:
            rows = await queries.served(uow.session, now)
        return [ServedCertificate(name=row.name, fullchain_pem=row.fullchain or "", key_pem=key_pem(self.ctx, row),
                                  ocsp_der=row.ocsp_response if row.ocsp_valid_until and row.ocsp_valid_until > now
                                  else None, not_after=row.not_after)
                for row in rows]


async def record_ocsp(uow: UnitOfWork, name: str, fullchain: str, stapled: ocsp.Stapled | None,
                      error: ocsp.OcspError | None) -> None:
    """The responder's answer for the certificate `name` still has (`fullchain`): kept to staple
    (the edge follows), or why there is none, tried again in an hour (an answer still valid stays).
    Revoked: no answer stapled any more, and a new certificate ordered at once."""
    row = await queries.certificate(uow.session, name, lock=True)
    if row is None or row.fullchain != fullchain:
        return  # gone or renewed meanwhile: the new one asks for its own
    now = utcnow()
    if stapled is not None:
        row.ocsp_response, row.ocsp_valid_until = stapled.der, stapled.valid_until
        row.ocsp_refresh_at = stapled.refresh_at
        row.updated_at = now  # the edge's version moves: it sends the answer to nginx
        return
    log.warning("certificate for %s: no OCSP answer to staple: %s", name, error)
    row.ocsp_refresh_at = now + ocsp.RETRY
    if error is not None and error.revoked:
        row.ocsp_response = row.ocsp_valid_until = None
        row.renew_at = now
        row.last_error = str(error)[:1000]
        row.updated_at = now


# --- for the hostnames area ---


def _view(row: Certificate) -> CertificateView:
    return CertificateView(status=row.status, not_after=row.not_after, issuer=row.issuer, last_error=row.last_error)


async def for_hosts(session: StoreSession, config: Config, hosts: list[tuple[str, str]]) -> \
        dict[str, CertificateView]:
    """The certificate each of (host, kind) is served with, where svc holds one: a default
    hostname's is the app domain's wildcard (its own where default_hosts_own), a custom one's its own."""
    wildcard = None if default_hosts_own(config) else wildcard_name(config)
    names = {host for host, kind in hosts if kind != "default" or wildcard is None}
    names |= {wildcard} if wildcard else set()
    rows = {row.name: row for row in await queries.named(session, sorted(names))}
    found: dict[str, CertificateView] = {}
    for host, kind in hosts:
        row = rows.get(wildcard) if kind == "default" and wildcard else rows.get(host)
        if row is not None:
            found[host] = _view(row)
    return found


async def order_now(uow: UnitOfWork, hosts: list[str], kind: CertificateKind = CertificateKind.host) -> None:
    """Hostnames just turned active (or default hostnames just made, where each has its own
    certificate): their certificates are ordered now, not at the next check (when svc gets
    certificates at all)."""
    if uow.ctx.adapters.acme is None or not hosts:
        return
    if kind == CertificateKind.default and not default_hosts_own(uow.ctx.config):
        return  # the wildcard covers them
    now = utcnow()
    for host in hosts:
        row = await queries.certificate(uow.session, host)
        if row is None:
            uow.session.add(Certificate(name=host, kind=kind, status=CertificateStatus.issuing,
                                        failures=0, created_at=now, updated_at=now, renew_at=now + ORDER_LEASE))
        elif row.renew_at is None or row.renew_at > now + ORDER_LEASE:
            continue  # held and not due, or backing off after a failure: nothing to order now
        else:
            row.renew_at = now + ORDER_LEASE
        uow.enqueue(CertificateJob.issue, {"name": host})


# --- for operators (svc admin certs) ---


async def list_all(uow: UnitOfWork) -> list[CertificateSummary]:
    return [CertificateSummary(name=row.name, kind=row.kind, status=row.status, not_after=row.not_after,
                               issuer=row.issuer, last_error=row.last_error, renew_at=row.renew_at,
                               failures=row.failures)
            for row in await queries.certificates(uow.session)]
