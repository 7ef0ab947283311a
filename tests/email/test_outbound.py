"""Outbound mail (docs/email.md "Outbound"): POST .../email/send signs the message with the mail
domain's DKIM key, stores it, and the email.send job hands it to the relay (a real aiosmtpd sink)."""

from __future__ import annotations

from typing import Any

import dkim
import pytest
from sqlalchemy import func, select

from svc.domains.email.dkim import SELECTOR, record_text
from svc.models import Job, MailDomainKey, MailLogEntry
from tests.email.conftest import MAIL_DOMAIN
from tests.support.api import Svc, assert_error, job_runner
from tests.support.smtp import SmtpSink
from tests.support.team import Team, make_team

E = "/v1/orgs/acme/projects/site/email"
ADDRESS = f"site.acme.{MAIL_DOMAIN}"


async def granted_team(svc: Svc) -> Team:
    team = await make_team(svc, project="site")
    assert (await team.bob.client.post(E)).status_code == 200
    return team


async def deliver(svc: Svc) -> None:
    runner = job_runner(svc)
    while await runner.run_once():
        pass


async def dns_txt(svc: Svc) -> Any:
    """A resolver for dkim.verify that knows only the stored key's record."""
    async with svc.ctx.db.transaction(write=False) as s:
        key = (await s.scalars(select(MailDomainKey))).one()

    def txt(name: bytes, timeout: int = 5) -> bytes | None:
        wanted = f"{key.selector}._domainkey.{key.domain}."
        return record_text(key.public_key).encode() if name.decode().rstrip(".") + "." == wanted else None

    return txt


async def test_a_sent_message_reaches_the_relay_signed(out_svc: Svc, sink: SmtpSink) -> None:
    team = await granted_team(out_svc)
    r = await team.bob.client.post(E + "/send", json={
        "to": ["Carol@Example.com", "dan@example.org"], "subject": "Hello", "text": "Hi there.\n",
        "html": "<p>Hi there.</p>", "from": "news", "replyTo": "help@example.com"})
    assert r.status_code == 202, r.text
    entry = r.json()
    assert entry["direction"] == "out" and entry["outcome"] == "queued" and entry["hasRaw"] is True
    assert entry["from"] == f"news@{ADDRESS}" and entry["to"] == "Carol@example.com, dan@example.org"
    assert sink.messages == [], "nothing goes out before the job runs"

    await deliver(out_svc)
    [got] = await sink.wait_for(1)
    assert got.mail_from == f"news@{ADDRESS}"
    assert sorted(got.rcpt_tos) == ["Carol@example.com", "dan@example.org"]
    assert got.message["Message-ID"] == f"<{entry['id']}@{ADDRESS}>"
    assert got.message["Reply-To"] == "help@example.com" and got.message["Subject"] == "Hello"
    assert got.text == "Hi there.\n"
    signature = str(got.message["DKIM-Signature"])
    assert f"d={MAIL_DOMAIN}" in signature and f"s={SELECTOR}" in signature
    raw = got.message.as_bytes()
    assert dkim.verify(raw, dnsfunc=await dns_txt(out_svc))
    # A body changed on the way no longer verifies: the signature covers it.
    assert not dkim.verify(raw.replace(b"Hi there.", b"Hi thera."), dnsfunc=await dns_txt(out_svc))

    after = (await team.vic.client.get(f"{E}/log/{entry['id']}")).json()
    assert after["outcome"] == "sent"
    async with out_svc.ctx.db.transaction(write=False) as s:
        row = await s.get(MailLogEntry, entry["id"])
        assert row is not None and row.provider_id == "Message accepted for delivery" and row.attempts == 1
        assert row.message_id == f"{entry['id']}@{ADDRESS}"
    # The raw download is what the relay was given.
    stored = (await team.vic.client.get(f"{E}/log/{entry['id']}/raw")).content
    assert dkim.verify(stored, dnsfunc=await dns_txt(out_svc))


async def test_sending_without_a_grant_is_refused(out_svc: Svc, sink: SmtpSink) -> None:
    team = await make_team(out_svc, project="site")
    body = {"to": ["carol@example.com"], "subject": "Hi", "text": "x"}
    assert_error(await team.bob.client.post(E + "/send", json=body), 403, "email_not_granted")
    assert (await team.bob.client.post(E)).status_code == 200
    assert_error(await team.vic.client.post(E + "/send", json=body), 403, "forbidden")
    assert (await team.alice.client.delete(E)).status_code == 204
    assert_error(await team.bob.client.post(E + "/send", json=body), 403, "email_not_granted")
    async with out_svc.ctx.db.transaction(write=False) as s:
        assert await s.scalar(select(func.count()).select_from(MailLogEntry)) == 0
        assert await s.scalar(select(func.count()).select_from(Job).where(Job.kind == "email.send")) == 0


@pytest.mark.parametrize(("body", "field"), [
    ({"to": ["not an address"], "subject": "Hi", "text": "x"}, "to"),
    ({"to": ["jörg@example.com"], "subject": "Hi", "text": "x"}, "to"),
    ({"to": [], "subject": "Hi", "text": "x"}, "to"),
    ({"to": [f"u{i}@example.com" for i in range(51)], "subject": "Hi", "text": "x"}, "to"),
    ({"to": ["carol@example.com"], "subject": "Hi"}, None),
    ({"to": ["carol@example.com"], "subject": "Hi\r\nBcc: eve@example.com", "text": "x"}, "subject"),
    ({"to": ["carol@example.com"], "subject": "Hi", "text": "x", "from": "a@b"}, "from"),
    ({"to": ["carol@example.com"], "subject": "Hi", "text": "x", "replyTo": "nope"}, "replyTo"),
    ({"to": ["carol@example.com"], "subject": "Hi", "text": "x", "bcc": ["x@example.com"]}, None),
])
async def test_bad_input_is_refused_with_nothing_changed(out_svc: Svc, body: dict[str, Any],
                                                         field: str | None) -> None:
    team = await granted_team(out_svc)
    err = assert_error(await team.bob.client.post(E + "/send", json=body), 400, "bad_request")
    if field is not None:
        # A list's item is named by its index (to.0).
        assert field in {e["field"].split(".")[0] for e in err["details"]["errors"]}, err
    async with out_svc.ctx.db.transaction(write=False) as s:
        assert await s.scalar(select(func.count()).select_from(MailLogEntry)) == 0
        assert await s.scalar(select(func.count()).select_from(Job).where(Job.kind == "email.send")) == 0


def test_the_signature_is_dkimpys_own() -> None:
    """svc signs through OpenSSL (dkim.py's _rsa_sign) in place of dkimpy's pure-Python RSA:
    PKCS#1 v1.5 is deterministic, so the header must be byte for byte what dkimpy makes alone."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from svc.domains.email import dkim as svc_dkim

    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption())
    raw = b"From: a@site.acme.mail.svc.test\r\nTo: b@example.com\r\nSubject: x\r\n\r\nHello.\r\n"
    ours = svc_dkim.sign(raw, svc_dkim.SigningKey(domain=MAIL_DOMAIN, selector="svc1", private_pem=pem))
    assert dkim.RSASSA_PKCS1_v1_5_sign is not svc_dkim.PURE_PYTHON_SIGN  # type: ignore[attr-defined]
    try:
        dkim.RSASSA_PKCS1_v1_5_sign = svc_dkim.PURE_PYTHON_SIGN  # type: ignore[attr-defined]
        theirs = svc_dkim.sign(raw, svc_dkim.SigningKey(domain=MAIL_DOMAIN, selector="svc1", private_pem=pem))
    finally:
        dkim.RSASSA_PKCS1_v1_5_sign = svc_dkim._rsa_sign  # type: ignore[attr-defined]
    assert ours == theirs
