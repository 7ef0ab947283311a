"""Mail in (docs/email.md, "Inbound"): real SMTP sessions (smtplib) against svc's SMTP server, SPF
from TXT records the test PowerDNS serves, on both stores."""

from __future__ import annotations

import asyncio
import smtplib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from sqlalchemy import select

from svc.adapters.nameserver.port import RRsetData
from svc.adapters.smtp_server.server import InboundSmtpServer
from svc.app import default_adapters
from svc.models import Job, MailLogEntry
from svc.settings import Config
from tests.email.conftest import MAIL_DOMAIN
from tests.email.smtp_client import HELO, ehlo, message, send
from tests.support.api import Svc, running_svc
from tests.support.config import configured
from tests.support.pdns import PDNS_REQUIRED, Pdns, clear_zones
from tests.support.ports import free_port
from tests.support.team import Team, make_team

pytestmark = PDNS_REQUIRED

E = "/v1/orgs/acme/projects/site/email"
SITE = f"site.acme.{MAIL_DOMAIN}"
# The server's name: the MX host, here SVC_PUBLIC_URL's (the settings fixture's http://svc.test).
HOST = "svc.test"
SENDERS = "senders.test."


@asynccontextmanager
async def inbound_svc(config: Config, pdns: Pdns, **values: Any) -> AsyncIterator[Svc]:
    """svc with a mail domain and its SMTP server on a free port, asking the test PowerDNS (which
    serves the senders' SPF records) as its resolver."""
    await clear_zones(pdns)
    await pdns.nameserver.ensure_zone(SENDERS, nameservers=pdns.names.nameservers.split(","))
    await pdns.nameserver.apply(SENDERS, replace=[
        RRsetData("pass." + SENDERS, "TXT", 60, ('"v=spf1 ip4:127.0.0.1 -all"',)),
        RRsetData("fail." + SENDERS, "TXT", 60, ('"v=spf1 ip4:192.0.2.1 -all"',)),
        RRsetData("soft." + SENDERS, "TXT", 60, ('"v=spf1 ip4:192.0.2.1 ~all"',)),
        RRsetData("plain." + SENDERS, "A", 60, ("192.0.2.7",)),
    ], delete=[])
    config = configured(config, mail_domain=MAIL_DOMAIN, smtp_port=free_port(), **values)
    adapters = default_adapters(config)
    adapters.nameserver = pdns.nameserver
    async with running_svc(config, adapters) as svc:
        yield svc


async def _granted(svc: Svc, *projects: str) -> Team:
    team = await make_team(svc, project="site")
    for name in projects:
        assert (await team.alice.client.post("/v1/orgs/acme/projects", json={"name": name})).status_code == 201
    for name in ("site", *projects):
        assert (await team.bob.client.post(f"/v1/orgs/acme/projects/{name}/email")).status_code == 200
    return team


def _port(svc: Svc) -> int:
    smtp = svc.ctx.adapters.smtp
    assert smtp is not None and smtp.port
    return smtp.port


async def _rows(svc: Svc) -> list[MailLogEntry]:
    async with svc.ctx.db.transaction(write=False) as s:
        return list((await s.scalars(select(MailLogEntry).order_by(MailLogEntry.created_at, MailLogEntry.id))).all())


@pytest.fixture
async def mx(dns_settings: Config, pdns: Pdns) -> AsyncIterator[Svc]:
    async with inbound_svc(dns_settings, pdns, smtp_max_message_bytes=64 * 1024) as svc:
        yield svc


async def test_a_message_to_a_granted_address_is_stored_and_handed_on(mx: Svc) -> None:
    team = await _granted(mx)
    config = (await mx.anon.get("/v1/config")).json()
    assert config["smtpPort"] == _port(mx)
    sent = message(sender="ann@pass.senders.test", to=f"hello@{SITE}", subject="=?utf-8?q?Caf=C3=A9_menu?=",
                   message_id="<abc-1@pass.senders.test>")
    answer = await send(_port(mx), "ann@pass.senders.test", [f"Hello@{SITE}"], sent)
    assert answer.code == 250, answer
    log = (await team.vic.client.get(E + "/log")).json()["entries"]
    assert len(log) == 1
    entry = log[0]
    assert {k: entry[k] for k in ("direction", "from", "to", "subject", "outcome", "spf", "hasRaw")} == {
        "direction": "in", "from": "ann@pass.senders.test", "to": f"Hello@{SITE}", "subject": "Café menu",
        "outcome": "received", "spf": "pass", "hasRaw": True}
    raw = await team.vic.client.get(f"{E}/log/{entry['id']}/raw")
    assert raw.status_code == 200 and raw.headers["content-type"] == "message/rfc822"
    head, _, rest = raw.content.partition(b"\r\nReceived: ")
    assert head == f"Authentication-Results: {HOST};\r\n\tspf=pass smtp.mailfrom=ann@pass.senders.test".encode()
    assert rest.startswith(f"from {HELO} ([127.0.0.1])\r\n\tby {HOST} (svc) with ESMTP\r\n\tfor <Hello@{SITE}>;"
                           .encode())
    assert raw.content.endswith(sent) and entry["size"] == len(raw.content)
    rows = await _rows(mx)
    assert (rows[0].client_ip, rows[0].message_id) == ("127.0.0.1", "abc-1@pass.senders.test")
    # Handed to the project's worker in the same transaction.
    async with mx.ctx.db.transaction(write=False) as s:
        jobs = (await s.scalars(select(Job).where(Job.kind == "email.to_worker"))).all()
    assert [j.payload for j in jobs] == [{"mail_id": entry["id"]}]


async def test_no_auth_and_the_size_limit_is_advertised(mx: Svc) -> None:
    features, auth = await ehlo(_port(mx))
    assert "auth" not in features and features.count("size") == 1
    assert auth == 502


async def test_mail_for_others_is_refused_and_after_revoke(mx: Svc) -> None:
    team = await _granted(mx)
    assert team  # granted: site only
    sent = message(sender="ann@plain.senders.test", to="x@elsewhere.test")
    for rcpt in ("x@elsewhere.test", f"x@other.acme.{MAIL_DOMAIN}", f"x@{MAIL_DOMAIN}", f"x@sub.{SITE}"):
        answer = await send(_port(mx), "ann@plain.senders.test", [rcpt], sent)
        assert (answer.code, answer.stage) == (550, "rcpt"), rcpt
    # One good recipient, one refused: the good one gets it, alone.
    answer = await send(_port(mx), "ann@plain.senders.test", ["x@elsewhere.test", f"a@{SITE}"], sent)
    assert answer.code == 250 and set(answer.refused) == {"x@elsewhere.test"}
    assert [r.to_addr for r in await _rows(mx)] == [f"a@{SITE}"]
    assert (await team.alice.client.delete(E)).status_code == 204
    answer = await send(_port(mx), "ann@plain.senders.test", [f"a@{SITE}"], message(sender="a@b.c", to="d", body="2"))
    assert (answer.code, answer.stage) == (550, "rcpt")
    assert len(await _rows(mx)) == 1


async def test_a_message_over_the_size_limit_is_refused(mx: Svc) -> None:
    await _granted(mx)
    big = message(sender="ann@plain.senders.test", to=f"a@{SITE}", body="x" * 70 * 1024 + "\n")
    # Declared with SIZE at MAIL FROM: refused there; undeclared: at the end of DATA.
    answer = await send(_port(mx), "ann@plain.senders.test", [f"a@{SITE}"], big)
    assert (answer.code, answer.stage) == (552, "mail")
    answer = await send(_port(mx), "ann@plain.senders.test", [f"a@{SITE}"], big, size_option=False)
    assert (answer.code, answer.stage) == (552, "data")
    assert await _rows(mx) == []
    small = message(sender="ann@plain.senders.test", to=f"a@{SITE}", body="x" * 50 * 1024 + "\n")
    assert (await send(_port(mx), "ann@plain.senders.test", [f"a@{SITE}"], small, size_option=False)).code == 250


async def test_spf_results_from_the_senders_records(mx: Svc) -> None:
    await _granted(mx)
    expected = {"pass": "pass", "fail": "fail", "soft": "softfail", "plain": "none", "missing": "none"}
    for label in expected:
        sender = f"ann@{label}.senders.test"
        sent = message(sender=sender, to=f"a@{SITE}", message_id=f"<{label}@x>")
        assert (await send(_port(mx), sender, [f"a@{SITE}"], sent)).code == 250
    rows = await _rows(mx)
    assert {r.from_addr.split("@")[1].split(".")[0]: r.spf for r in rows} == expected
    vic = await mx.login("vic")
    for row in rows:
        raw = (await vic.client.get(f"{E}/log/{row.id}/raw")).content
        assert raw.startswith(f"Authentication-Results: {HOST};\r\n\tspf={row.spf} "
                              f"smtp.mailfrom={row.from_addr}\r\n".encode())


async def test_a_message_sent_again_is_stored_once(mx: Svc) -> None:
    await _granted(mx)
    sent = message(sender="ann@pass.senders.test", to=f"a@{SITE}")
    for _ in range(3):  # the sender never heard the 250 and tries again: answered 250, stored once
        assert (await send(_port(mx), "ann@pass.senders.test", [f"a@{SITE}"], sent)).code == 250
    assert len(await _rows(mx)) == 1
    # Another message (or the same to another recipient) is another row.
    assert (await send(_port(mx), "ann@pass.senders.test", [f"b@{SITE}"], sent)).code == 250
    other = message(sender="ann@pass.senders.test", to=f"a@{SITE}", message_id="<m2@sender.example>")
    assert (await send(_port(mx), "ann@pass.senders.test", [f"a@{SITE}"], other)).code == 250
    assert len(await _rows(mx)) == 3


async def test_one_message_to_two_projects_is_one_row_each(mx: Svc) -> None:
    await _granted(mx, "shop")
    shop = f"shop.acme.{MAIL_DOMAIN}"
    sent = message(sender="ann@pass.senders.test", to=f"a@{SITE}")
    rcpts = [f"a@{SITE}", f"orders@{shop}", f"b@{SITE}"]
    assert (await send(_port(mx), "ann@pass.senders.test", rcpts, sent)).code == 250
    rows = await _rows(mx)
    assert sorted(r.to_addr for r in rows) == [f"a@{SITE},b@{SITE}", f"orders@{shop}"]
    assert len({r.project_id for r in rows}) == 2 and len({r.raw_key for r in rows}) == 2
    for row in rows:
        path = mx.ctx.settings.tmp_dir() / f"{row.id}.check"
        await mx.ctx.blobs.get_to_file(row.raw_key or "", path)
        assert path.read_bytes().endswith(sent)
        path.unlink()


async def test_a_message_svc_cannot_store_is_deferred_then_stored(mx: Svc, monkeypatch: pytest.MonkeyPatch) -> None:
    await _granted(mx)
    blobs = mx.ctx.blobs

    async def broken(key: str, path: Any) -> None:
        raise OSError("the blob store is down")

    monkeypatch.setattr(blobs, "put_file", broken)
    sent = message(sender="ann@pass.senders.test", to=f"a@{SITE}")
    answer = await send(_port(mx), "ann@pass.senders.test", [f"a@{SITE}"], sent)
    assert (answer.code, answer.stage) == (451, "data")
    assert await _rows(mx) == []
    monkeypatch.undo()
    assert (await send(_port(mx), "ann@pass.senders.test", [f"a@{SITE}"], sent)).code == 250
    assert len(await _rows(mx)) == 1


async def test_a_flood_is_bounded_per_address_and_per_client(dns_settings: Config, pdns: Pdns) -> None:
    async with inbound_svc(dns_settings, pdns, smtp_rate_per_ip=5, smtp_rate_per_address=3) as svc:
        await _granted(svc, "shop")
        port, shop = _port(svc), f"shop.acme.{MAIL_DOMAIN}"
        server = svc.ctx.adapters.smtp
        assert isinstance(server, InboundSmtpServer)
        # The buckets' clock stopped: however slow this machine, nothing refills meanwhile.
        server.per_ip.clock = server.per_address.clock = lambda: 1.0

        def numbered(i: int) -> bytes:
            return message(sender="ann@pass.senders.test", to="x", message_id=f"<n{i}@x>")

        for i in range(3):  # any local part counts against the project's address
            assert (await send(port, "ann@pass.senders.test", [f"u{i}@{SITE}"], numbered(i))).code == 250
        answer = await send(port, "ann@pass.senders.test", [f"u9@{SITE}"], numbered(3))
        assert (answer.code, answer.stage) == (451, "rcpt")
        # Another project's address is not held back by the first one's flood ...
        assert (await send(port, "ann@pass.senders.test", [f"a@{shop}"], numbered(4))).code == 250
        # ... but this client has sent its five a minute.
        answer = await send(port, "ann@pass.senders.test", [f"b@{shop}"], numbered(5))
        assert (answer.code, answer.stage) == (451, "mail")
        assert len(await _rows(svc)) == 4


async def test_open_sessions_are_bounded_per_client(dns_settings: Config, pdns: Pdns) -> None:
    async with inbound_svc(dns_settings, pdns, smtp_connections_per_ip=2) as svc:
        await _granted(svc)
        port = _port(svc)

        def session() -> smtplib.SMTP:
            return smtplib.SMTP("127.0.0.1", port, local_hostname=HELO, timeout=60)

        held = [await asyncio.to_thread(session) for _ in range(2)]
        with pytest.raises(smtplib.SMTPConnectError) as refused:
            await asyncio.to_thread(session)
        assert refused.value.smtp_code == 421
        # One of them ends: there is room again, and the others still work.
        await asyncio.to_thread(held.pop().quit)
        third = await asyncio.to_thread(session)
        sent = message(sender="ann@pass.senders.test", to=f"a@{SITE}")
        await asyncio.to_thread(third.sendmail, "ann@pass.senders.test", [f"a@{SITE}"], sent)
        for s in (third, *held):
            await asyncio.to_thread(s.quit)
        assert len(await _rows(svc)) == 1


async def test_without_a_port_there_is_no_smtp_server(svc: Svc) -> None:
    assert svc.ctx.adapters.smtp is None and svc.ctx.adapters.off["smtp"]
    assert "smtpPort" not in (await svc.anon.get("/v1/config")).json()


async def test_results_in_svcs_name_that_the_sender_wrote_are_renamed(mx: Svc) -> None:
    await _granted(mx)
    forged = (b"Authentication-Results: " + HOST.upper().encode() + b"; spf=pass smtp.mailfrom=ceo@bank.test\r\n"
              b"Authentication-Results: other.example; dkim=pass\r\n")
    sent = forged + message(sender="ann@fail.senders.test", to=f"a@{SITE}")
    assert (await send(_port(mx), "ann@fail.senders.test", [f"a@{SITE}"], sent)).code == 250
    [row] = await _rows(mx)
    path = mx.ctx.settings.tmp_dir() / "forged.eml"
    await mx.ctx.blobs.get_to_file(row.raw_key or "", path)
    raw = path.read_bytes()
    head = raw.split(b"\r\n\r\n")[0]
    assert head.count(b"\nAuthentication-Results: " + HOST.encode()) == 0 and raw.startswith(
        f"Authentication-Results: {HOST};\r\n\tspf=fail ".encode())
    assert b"\nX-Original-Authentication-Results: " + HOST.upper().encode() + b"; spf=pass" in head
    # Another receiver's results are kept as they were.
    assert b"\r\nAuthentication-Results: other.example; dkim=pass" in head
    assert b"X-Original-Authentication-Results: other.example" not in head
