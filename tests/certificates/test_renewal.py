"""Renewal: when a certificate is renewed (two thirds of its lifetime, or the CA's window when it
lies within it), svc's background cycle renewing one by itself against a real pebble that issues
certificates of a minute and hands back valid authorizations (as Let's Encrypt does), an expired
certificate leaving the edge (a real nginx: http served, no redirect, no expired certificate
shown), and the operators and the project's admins told once per threshold when one is not
renewed."""

from __future__ import annotations

import asyncio
import datetime
import socket
import ssl
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from sqlalchemy import select

from svc.adapters.acme.pebble import Pebble
from svc.adapters.acme.port import Issued
from svc.adapters.edge.port import ServedCertificate
from svc.adapters.edge.settings import EdgeSettings
from svc.app import default_adapters
from svc.domains.certificates import jobs, service
from svc.domains.certificates.service import EdgeCertificates
from svc.edge import NginxEdge, tls
from svc.edge.component import EdgeRouting
from svc.kit.clock import utcnow
from svc.models import Certificate, Hostname, Notification, OutboundMail, Project
from svc.settings import Settings
from svc.uow import Tx, unit_of_work
from tests.edge.conftest import NGINX, edge_settings
from tests.edge.helpers import EdgeHttp, create_project, deploy
from tests.support.acme import PEBBLE_REQUIRED, running_pebble
from tests.support.api import Svc, running_svc
from tests.support.config import configured
from tests.support.pdns import Pdns
from tests.support.ports import free_port
from tests.support.team import make_team

WAIT_SECONDS = 180.0  # a bound on conditions that follow a clock of a minute, on a busy machine
NGINX_REQUIRED = pytest.mark.skipif(NGINX is None, reason="nginx is not installed (make test installs it)")


def test_the_renewal_point() -> None:
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    end = start + timedelta(days=90)
    two_thirds = start + timedelta(days=60)
    assert service.renewal_point(start, end, None) == two_thirds
    # The CA's window (ARI) decides when it lies within the lifetime, earlier or later than 2/3.
    assert service.renewal_point(start, end, start + timedelta(days=45)) == start + timedelta(days=45)
    assert service.renewal_point(start, end, start + timedelta(days=80)) == start + timedelta(days=80)
    # A window at or past notAfter, or before notBefore, is not taken: the certificate would run out first.
    assert service.renewal_point(start, end, end) == two_thirds
    assert service.renewal_point(start, end, end + timedelta(days=5)) == two_thirds
    assert service.renewal_point(start, end, start - timedelta(seconds=1)) == two_thirds
    short = start + timedelta(seconds=60)
    assert service.renewal_point(start, short, None) == start + timedelta(seconds=40)


@pytest.fixture
async def short_pebble(pdns: Pdns, tmp_path: Path) -> AsyncIterator[Pebble]:
    async with running_pebble(tmp_path / "pebble", pdns.port, authz_reuse=100, validity_seconds=60) as running:
        yield running


async def _row(svc: Svc, name: str) -> Certificate | None:
    async with svc.ctx.db.transaction(write=False) as s:
        row = await s.get(Certificate, name)
        if row is not None:
            s.expunge(row)
        return row


async def _wait_for(what: str, check: object) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_SECONDS
    while loop.time() < deadline:
        if await check():  # type: ignore[operator]
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"{what}: not within {WAIT_SECONDS:.0f} s")


@PEBBLE_REQUIRED
@pytest.mark.parametrize("store", ["postgres"])  # the long one: on the store svc runs on for real
async def test_the_background_cycle_renews_a_due_certificate(dns_settings: Settings, pdns: Pdns,
                                                             short_pebble: Pebble,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The app domain's wildcard, valid for 60 s, is renewed at 40 s by svc's own cycle and jobs
    (no call by hand), though pebble hands the renewal's order an authorization already valid."""
    monkeypatch.setenv("SVC_CERTIFICATE_CHECK_SECONDS", "1")
    settings = configured(dns_settings, app_domain="apps.test", acme_directory_url=short_pebble.directory_url,
                          acme_ca_bundle=short_pebble.ca_bundle, job_poll_seconds=0.2)
    adapters = default_adapters(settings)
    adapters.nameserver = pdns.nameserver
    try:
        async with running_svc(settings, adapters, run_workers=True) as svc:
            async def issued() -> bool:
                row = await _row(svc, "*.apps.test")
                return row is not None and row.fullchain is not None

            await _wait_for("the wildcard issued", issued)
            first = await _row(svc, "*.apps.test")
            assert first is not None and first.not_before is not None and first.not_after is not None
            assert first.not_after - first.not_before <= timedelta(seconds=61)  # pebble's validity, as asked
            # pebble offers no ARI: two thirds of the lifetime.
            assert first.renew_at is not None
            expected = first.not_before + (first.not_after - first.not_before) * 2 / 3
            assert abs(first.renew_at - expected) < timedelta(seconds=1), (first.renew_at, expected)

            async def renewed() -> bool:
                row = await _row(svc, "*.apps.test")
                assert row is not None
                assert row.failures == 0, row.last_error  # a failed renewal is the bug, not a wait
                return row.fullchain != first.fullchain

            await _wait_for("the wildcard renewed by the cycle", renewed)
            second = await _row(svc, "*.apps.test")
            assert second is not None and second.not_after is not None and second.not_after > first.not_after
            assert (second.status, second.last_error, second.failures) == ("active", None, 0)
            # Renewed at its renewal point (not before), while the first was still valid.
            assert first.renew_at <= second.updated_at < first.not_after
    finally:
        await pdns.nameserver.delete_zone("apps.test.")


def _short_lived(name: str, seconds: int) -> tuple[str, str, datetime.datetime]:
    """(chain, key, notAfter) of a self-signed certificate for `name` that runs out in `seconds`."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    not_after = now + timedelta(seconds=seconds)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - timedelta(hours=1))
            .not_valid_after(not_after)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .sign(key, hashes.SHA256()))
    return (cert.public_bytes(serialization.Encoding.PEM).decode(),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()).decode(), not_after)


def _handshake(port: int, name: str) -> bytes:
    """The leaf (DER) the edge shows a client asking for `name`; ssl.SSLError when it shows none."""
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
            ctx.wrap_socket(raw, server_hostname=name) as conn:
        der = conn.getpeercert(binary_form=True)
    assert der is not None
    return der


async def _no_handshake(port: int, name: str) -> bool:
    try:
        await asyncio.to_thread(_handshake, port, name)
    except (ssl.SSLError, ConnectionError):
        return True
    return False


@NGINX_REQUIRED
async def test_an_expired_certificate_leaves_the_edge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A wildcard that runs out (its renewal failing): until then http goes to https; from then on
    the project's http answers 200 with no redirect, no handshake shows the expired certificate,
    svc's table drops it, and nginx drops it at notAfter even from a table that still has it.
    The background cycle tells the operators that it ran out."""
    monkeypatch.setenv("SVC_CERTIFICATE_CHECK_SECONDS", "1")
    tls_port = free_port()
    settings = edge_settings(tmp_path / "data", edge_tls_port=tls_port, app_domain="apps.test",
                             operators="ops@svc.test")
    chain, key, not_after = _short_lived("*.apps.test", 30)
    async with running_svc(settings) as svc:
        alice = await svc.login("alice")
        site = await create_project(alice, "web")
        assert site.host.endswith(".apps.test")
        await deploy(svc.ctx, site, {"index.html": b"<h1>plain http</h1>"})
        now = utcnow()
        async with unit_of_work(svc.ctx, Tx.WRITE) as uow:
            uow.session.add(Certificate(name="*.apps.test", kind="wildcard", status="issuing", failures=0,
                                        created_at=now, updated_at=now))
        async with unit_of_work(svc.ctx, Tx.WRITE) as uow:
            await service.record_issued(uow, "*.apps.test", Issued(
                fullchain_pem=chain, key_pem=key, not_before=now - timedelta(hours=1), not_after=not_after,
                issuer="test", names=("*.apps.test",)), now + timedelta(days=1))
        assert NGINX is not None
        edge = NginxEdge(configured(settings), EdgeRouting(svc.ctx), api_url="http://127.0.0.1:9", binary=NGINX,
                         certificates=EdgeCertificates(svc.ctx))
        await edge.start()
        http = EdgeHttp(settings.settings_of(EdgeSettings).edge_port)
        try:
            moved = await http.get(site.host)
            assert moved.status_code == 308 and moved.headers["location"].startswith(f"https://{site.host}:")
            assert await asyncio.to_thread(_handshake, tls_port, site.host)

            async def plain() -> bool:
                r = await http.get(site.host)
                return r.status_code == 200

            await _wait_for("http served once the certificate ran out", plain)
            assert utcnow() >= not_after - timedelta(seconds=1)
            served = await http.get(site.host)
            assert served.text == "<h1>plain http</h1>" and "location" not in served.headers
            assert await _no_handshake(tls_port, site.host)

            async def dropped() -> bool:
                return "*.apps.test" not in (edge.layout.certs / tls.TABLE).read_text()

            await _wait_for("svc's table without the expired certificate", dropped)
            # nginx itself: a table that still has the expired line (svc's `del` not come yet) serves it not.
            await edge.process.send_certificates(
                [tls.line(ServedCertificate(name="*.apps.test", fullchain_pem=chain, key_pem=key))],
                edge.options.control_token)
            assert (await http.get(site.host)).status_code == 200
            assert await _no_handshake(tls_port, site.host)

            async def operators_told() -> bool:
                async with svc.ctx.db.transaction(write=False) as s:
                    mails = (await s.scalars(select(OutboundMail).where(OutboundMail.to_addr == "ops@svc.test"))).all()
                return any("ran out" in m.subject for m in mails)

            await _wait_for("the operators told by the cycle", operators_told)
        finally:
            await http.aclose()
            await edge.stop()


async def test_a_certificate_not_renewed_is_told_once_per_threshold(settings: Settings) -> None:
    """14, 7 and 1 days before its expiry, and once it has run out: one notification to the
    project's org (with a mail to its admins) and one mail to the operators, each once."""
    settings = settings.model_copy(update={"operators": "ops@svc.test, github:42"})
    async with running_svc(settings, run_workers=False) as svc:
        await make_team(svc, project="web")
        now = utcnow()
        async with svc.ctx.db.transaction() as s:
            project = (await s.scalars(select(Project).where(Project.name == "web"))).one()
            s.add(Hostname(host="late.example.net", project_id=project.id, kind="custom", status="active",
                           created_at=now, proven_by="txt"))
            # Its renewal point (two thirds) long past and still this certificate.
            s.add(Certificate(name="late.example.net", kind="host", status="active", fullchain="(a chain)",
                              not_before=now - timedelta(days=80), not_after=now + timedelta(days=10, hours=1),
                              issuer="Pebble", failures=1, last_error="the CA could not validate late.example.net",
                              renew_at=now + timedelta(hours=6), created_at=now, updated_at=now))
            s.add(Hostname(host="young.example.net", project_id=project.id, kind="custom", status="active",
                           created_at=now, proven_by="txt"))
            # A younger one (renewal point at two thirds: 7 days 16 hours from now, 4 days 8 hours left).
            s.add(Certificate(name="young.example.net", kind="host", status="active", fullchain="(a chain)",
                              not_before=now - timedelta(days=1), not_after=now + timedelta(days=12),
                              issuer="Pebble", failures=0, renew_at=now + timedelta(days=7), created_at=now,
                              updated_at=now))

        async def turn(at: datetime.datetime) -> None:
            async with unit_of_work(svc.ctx, Tx.WRITE) as uow:
                await jobs.warn_expiring(uow, now=at)

        async def told(host: str) -> tuple[list[str], list[str]]:
            async with svc.ctx.db.transaction(write=False) as s:
                notes = (await s.scalars(select(Notification).where(Notification.kind == "certificate.expiring")
                                         .order_by(Notification.created_at))).all()
                ops = (await s.scalars(select(OutboundMail).where(OutboundMail.to_addr == "ops@svc.test")
                                       .order_by(OutboundMail.created_at))).all()
                return ([n.message for n in notes if f"certificate of {host} " in n.message],
                        [m.body for m in ops if f"certificate of {host} " in m.body])

        steps = [(now, "runs out in 10 days"), (now + timedelta(days=4), "runs out in 6 days"),
                 (now + timedelta(days=9, hours=12), "runs out in less than a day"),
                 (now + timedelta(days=10, hours=2), "ran out at")]
        for n, (at, words) in enumerate(steps, start=1):
            await turn(at)
            await turn(at)  # the same threshold: said once
            await turn(at + timedelta(minutes=30))
            notes, ops = await told("late.example.net")
            assert len(notes) == len(ops) == n, (notes, ops)
            assert words in notes[-1] and "the CA could not validate late.example.net" in notes[-1]
            assert notes[-1] in ops[-1]
            # The younger one, within 14 then 7 days of its expiry but not past its renewal point
            # (nor failing): nothing to say until then.
            assert (await told("young.example.net")) == ([], []) or at >= now + timedelta(days=7, hours=16)
        notes, ops = await told("young.example.net")
        assert len(notes) == len(ops) == 1 and "runs out in 2 days" in notes[0]
        assert "svc has not renewed it yet" in notes[0]
        # Renewed: the new certificate is told of anew, at its own thresholds only.
        later = now + timedelta(days=11)
        async with unit_of_work(svc.ctx, Tx.WRITE) as uow:
            await service.record_issued(uow, "late.example.net", Issued(
                fullchain_pem="(a new chain)", key_pem="(key)", not_before=later, not_after=later + timedelta(days=90),
                issuer="Pebble", names=("late.example.net",)), later + timedelta(days=60))
        await turn(later)
        assert len((await told("late.example.net"))[0]) == 4
