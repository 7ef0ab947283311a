"""STARTTLS on svc's SMTP server: with the edge's certificate for the server's name when svc holds
one, or with the files SVC_SMTP_TLS_CERT and SVC_SMTP_TLS_KEY name; AUTH is never offered, TLS or
not (docs/email.md, "Inbound")."""

from __future__ import annotations

import asyncio
import datetime
import smtplib
import ssl
from datetime import timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from sqlalchemy import select

from svc.domains.certificates.service import seal_context
from svc.kit.clock import utcnow
from svc.models import Certificate, MailLogEntry
from svc.settings import Settings
from tests.email.conftest import MAIL_DOMAIN
from tests.email.smtp_client import HELO, message
from tests.support.api import Svc, running_svc
from tests.support.config import configured
from tests.support.ports import free_port
from tests.support.team import make_team

SITE = f"site.acme.{MAIL_DOMAIN}"
# The server's name: the MX host, here SVC_PUBLIC_URL's (the settings fixture's http://svc.test).
HOST = "svc.test"


def _self_signed(name: str) -> tuple[str, str]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - timedelta(hours=1))
            .not_valid_after(now + timedelta(days=30))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return (cert.public_bytes(serialization.Encoding.PEM).decode(),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()).decode())


def _send_over_tls(port: int, chain: str, rcpt: str) -> tuple[list[str], list[str]]:
    """The EHLO extensions before and after STARTTLS, the server's certificate verified as `chain`
    for the MX host; the message sent over TLS."""
    trust = ssl.create_default_context(cadata=chain)
    with smtplib.SMTP("127.0.0.1", port, local_hostname=HELO, timeout=60) as smtp:
        smtp.ehlo()
        before = list(smtp.esmtp_features)
        smtp._host = HOST  # the name the certificate is checked against (smtplib uses the host it dialled)
        smtp.starttls(context=trust)
        smtp.ehlo()
        after = list(smtp.esmtp_features)
        smtp.sendmail("ann@sender.example", [rcpt], message(sender="ann@sender.example", to=rcpt))
    return before, after


async def _grant(svc: Svc) -> None:
    team = await make_team(svc, project="site")
    assert (await team.bob.client.post("/v1/orgs/acme/projects/site/email")).status_code == 200


def _port(svc: Svc) -> int:
    assert svc.ctx.adapters.smtp is not None and svc.ctx.adapters.smtp.port
    return svc.ctx.adapters.smtp.port


async def test_starttls_with_the_edges_certificate(settings: Settings) -> None:
    config = configured(settings, mail_domain=MAIL_DOMAIN, smtp_port=free_port())
    chain, key = _self_signed(HOST)
    async with running_svc(config) as svc:
        await _grant(svc)
        # No certificate for its name yet: no STARTTLS.
        assert not svc.ctx.adapters.smtp.tls  # type: ignore[union-attr]
        async with svc.ctx.db.transaction(write=True) as s:
            now = utcnow()
            s.add(Certificate(name=HOST, kind="host", status="active", fullchain=chain,
                              sealed_key=svc.ctx.keys.seal(key.encode(), context=seal_context(HOST)),
                              not_before=now - timedelta(hours=1), not_after=now + timedelta(days=30), issuer="test",
                              failures=0, created_at=now, updated_at=now))
    # Started again: the edge's certificate for the MX host is the SMTP server's.
    async with running_svc(config) as svc:
        before, after = await asyncio.to_thread(_send_over_tls, _port(svc), chain, f"a@{SITE}")
        assert "starttls" in before and "starttls" not in after
        assert "auth" not in before and "auth" not in after
        await _received_over_tls(svc)


async def test_starttls_with_the_configured_files(settings: Settings, tmp_path: Path) -> None:
    chain, key = _self_signed(HOST)
    (tmp_path / "chain.pem").write_text(chain)
    (tmp_path / "key.pem").write_text(key)
    config = configured(settings, mail_domain=MAIL_DOMAIN, smtp_port=free_port(),
                        smtp_tls_cert=tmp_path / "chain.pem", smtp_tls_key=tmp_path / "key.pem")
    async with running_svc(config) as svc:
        await _grant(svc)
        before, after = await asyncio.to_thread(_send_over_tls, _port(svc), chain, f"a@{SITE}")
        assert "starttls" in before and "auth" not in after
        await _received_over_tls(svc)


async def _received_over_tls(svc: Svc) -> None:
    async with svc.ctx.db.transaction(write=False) as s:
        row = (await s.scalars(select(MailLogEntry))).one()
    path = svc.ctx.settings.tmp_dir() / "check.eml"
    await svc.ctx.blobs.get_to_file(row.raw_key or "", path)
    assert b" (svc) with ESMTPS\r\n" in path.read_bytes()
    path.unlink()
