"""Certificates svc holds, got from a real ACME server (pebble) whose DNS-01 checks svc's own
PowerDNS answers: the app domain's wildcard is issued and kept (its key sealed, its renewal
planned), an active custom hostname gets an order and nothing else does, a failed order is said in
words and tried again later (never in a loop), a hostname that goes takes its certificate along."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest
from cryptography import x509
from sqlalchemy import select

from svc.adapters.acme.pebble import Pebble
from svc.adapters.nameserver.port import RRsetData
from svc.adapters.nameserver.settings import NameserverSettings
from svc.adapters.resolver.dns import DnsResolver
from svc.adapters.resolver.port import Lookup, Outcome
from svc.app import default_adapters
from svc.domains.certificates import caa, jobs
from svc.kit.clock import utcnow
from svc.models import AcmeAccount, Certificate, Hostname, Project
from svc.settings import Settings
from svc.uow import Tx, unit_of_work
from tests.support.acme import PEBBLE_REQUIRED, running_pebble
from tests.support.api import Svc, run_due_jobs, running_svc
from tests.support.config import configured
from tests.support.pdns import Pdns
from tests.support.team import make_team

pytestmark = PEBBLE_REQUIRED


@pytest.fixture
async def pebble(pdns: Pdns, tmp_path: Path) -> AsyncIterator[Pebble]:
    async with running_pebble(tmp_path / "pebble", pdns.port) as running:
        yield running


@pytest.fixture
async def tls_svc(dns_settings: Settings, pdns: Pdns, pebble: Pebble) -> AsyncIterator[Svc]:
    settings = configured(dns_settings, app_domain="apps.test", acme_directory_url=pebble.directory_url,
                          acme_ca_bundle=pebble.ca_bundle, acme_email="ops@apps.test")
    adapters = default_adapters(settings)
    adapters.nameserver = pdns.nameserver
    try:
        async with running_svc(settings, adapters, run_workers=False) as svc:
            yield svc
    finally:
        await pdns.nameserver.delete_zone("apps.test.")


async def _converge(svc: Svc) -> int:
    async with unit_of_work(svc.ctx, Tx.WRITE) as uow:
        return await jobs.converge(uow)


async def _rows(svc: Svc) -> dict[str, Certificate]:
    async with svc.ctx.db.transaction(write=False) as s:
        rows = (await s.scalars(select(Certificate))).all()
        for row in rows:
            s.expunge(row)
        return {row.name: row for row in rows}


async def test_the_wildcard_is_issued_kept_and_planned_for_renewal(tls_svc: Svc, pebble: Pebble) -> None:
    assert await _converge(tls_svc) == 1
    await run_due_jobs(tls_svc)
    row = (await _rows(tls_svc))["*.apps.test"]
    assert (row.kind, row.status, row.last_error, row.failures) == ("wildcard", "active", None, 0)
    assert row.fullchain is not None and row.sealed_key is not None and b"PRIVATE KEY" not in row.sealed_key
    leaf, *chain = x509.load_pem_x509_certificates(row.fullchain.encode())
    store = x509.verification.Store(x509.load_pem_x509_certificates((await pebble.root_pem()).encode()))
    x509.verification.PolicyBuilder().store(store).build_server_verifier(
        x509.DNSName("web-acme.apps.test")).verify(leaf, chain)
    assert row.not_before is not None and row.not_after is not None and row.renew_at is not None
    assert row.not_before < row.renew_at < row.not_after
    async with tls_svc.ctx.db.transaction(write=False) as s:
        account = (await s.scalars(select(AcmeAccount))).one()
        assert b"PRIVATE KEY" not in account.sealed_key
    # Nothing due: the next turn orders nothing.
    assert await _converge(tls_svc) == 0


async def test_custom_hostnames_get_an_order_failures_back_off_and_a_gone_host_loses_its_row(tls_svc: Svc) -> None:
    alice = (await make_team(tls_svc, project="web")).alice
    async with tls_svc.ctx.db.transaction() as s:
        project = (await s.scalars(select(Project).where(Project.name == "web"))).one()
        s.add(Hostname(host="shop.example.net", project_id=project.id, kind="custom", status="active",
                       created_at=utcnow(), proven_by="txt"))
        s.add(Hostname(host="later.example.net", project_id=project.id, kind="custom", status="pending_dns",
                       created_at=utcnow()))
    assert await _converge(tls_svc) == 2  # the wildcard and the active host; never the pending one
    await run_due_jobs(tls_svc)
    rows = await _rows(tls_svc)
    assert set(rows) == {"*.apps.test", "shop.example.net"}
    shop = rows["shop.example.net"]
    # Nobody answers the CA's HTTP-01 check here (the edge's part comes next): refused in words,
    # tried again after a backoff, not by the next turn.
    assert (shop.status, shop.failures) == ("failed", 1) and shop.last_error
    assert shop.renew_at is not None and shop.renew_at > utcnow() + timedelta(minutes=4)
    assert await _converge(tls_svc) == 0
    # The hostname goes: so does its certificate row.
    assert (await alice.client.delete("/v1/orgs/acme/projects/web/hostnames/shop.example.net")).status_code == 204
    await _converge(tls_svc)
    assert set(await _rows(tls_svc)) == {"*.apps.test"}


async def test_the_edge_answers_http01_from_the_store(tls_svc: Svc) -> None:
    from svc.models import AcmeChallenge

    async with tls_svc.ctx.db.transaction() as s:
        s.add(AcmeChallenge(token="tok_en-1", host="shop.example.net", key_authorization="tok_en-1.thumb",
                            created_at=utcnow()))
    r = await tls_svc.anon.get("/v1/edge/acme-challenge/tok_en-1")
    assert r.status_code == 200 and r.text == "tok_en-1.thumb"
    assert (await tls_svc.anon.get("/v1/edge/acme-challenge/unknown")).status_code == 404
    assert (await tls_svc.anon.get("/v1/edge/acme-challenge/bad%20token")).status_code in (400, 404)


async def test_operators_list_the_certificates(tls_svc: Svc, tmp_path: Path) -> None:
    """`svc certs list` on the server, against its store: what svc holds, never a key."""
    from tests.cli.conftest import clean_env, run_in_process

    assert await _converge(tls_svc) == 1
    await run_due_jobs(tls_svc)
    env = clean_env() | {"SVC_DATA_DIR": str(tls_svc.ctx.settings.data_dir)}
    if tls_svc.ctx.settings.database_url:
        env["SVC_DATABASE_URL"] = tls_svc.ctx.settings.database_url
    # (In a thread: the command runs its own event loop, as on the server.)
    listed = await asyncio.to_thread(run_in_process, ["certs", "list", "--json"], env)
    assert listed.code == 0, listed.err
    [cert] = listed.json()["certificates"]
    assert (cert["name"], cert["kind"], cert["status"], cert["failures"]) == ("*.apps.test", "wildcard", "active", 0)
    assert cert["notAfter"] and cert["renewAt"] and "PRIVATE" not in listed.out
    table = await asyncio.to_thread(run_in_process, ["admin", "certs", "list"], env)
    assert "*.apps.test" in table.out and "active" in table.out


async def test_a_caa_record_that_forbids_the_ca_is_read_before_ordering(dns_settings: Settings, pdns: Pdns,
                                                                         pebble: Pebble) -> None:
    """The name's CAA allows another CA: no order, the reason in words (where, who is allowed,
    the record that would allow svc's CA), tried again later; allowed, the order goes ahead."""
    settings = configured(dns_settings, app_domain="apps.test", acme_directory_url=pebble.directory_url,
                          acme_ca_bundle=pebble.ca_bundle, acme_caa_identities="pebble.example")
    adapters = default_adapters(settings)
    adapters.nameserver = pdns.nameserver
    adapters.resolver = DnsResolver.at("127.0.0.1", pdns.port)
    zone = "caa-shop.test."
    await pdns.nameserver.ensure_zone(zone, nameservers=settings.settings_of(NameserverSettings).nameserver_names)
    try:
        await pdns.nameserver.apply(zone, replace=[RRsetData(zone, "CAA", 60, ('0 issue "letsencrypt.org"',))],
                                    delete=[])
        async with running_svc(settings, adapters, run_workers=False) as svc:
            await make_team(svc, project="web")
            async with svc.ctx.db.transaction() as s:
                project = (await s.scalars(select(Project).where(Project.name == "web"))).one()
                s.add(Hostname(host="www.caa-shop.test", project_id=project.id, kind="custom", status="active",
                               created_at=utcnow(), proven_by="txt"))
            await _converge(svc)
            await run_due_jobs(svc)
            row = (await _rows(svc))["www.caa-shop.test"]
            assert (row.status, row.failures) == ("failed", 1)
            assert row.last_error is not None and row.last_error.startswith(
                "a CAA record at caa-shop.test (issue) allows letsencrypt.org to issue certificates for "
                "www.caa-shop.test, not this CA (pebble.example)"), row.last_error
            assert row.renew_at is not None and row.renew_at > utcnow() + timedelta(minutes=4)
            # The owner allows svc's CA: the next order is made (and fails here for another reason:
            # nothing answers HTTP-01 without an edge).
            await pdns.nameserver.apply(zone, replace=[RRsetData(zone, "CAA", 60, ('0 issue "pebble.example"',))],
                                        delete=[])
            async with svc.ctx.db.transaction() as s:
                (await s.get(Certificate, "www.caa-shop.test")).renew_at = utcnow()  # type: ignore[union-attr]
            await _converge(svc)
            await run_due_jobs(svc)
            row = (await _rows(svc))["www.caa-shop.test"]
            assert row.failures == 2 and row.last_error is not None and "CAA" not in row.last_error
    finally:
        for name in (zone, "apps.test."):
            with contextlib.suppress(Exception):
                await pdns.nameserver.delete_zone(name)


class _Records:
    """CAA records by owner name, as a Resolver answers them."""

    def __init__(self, records: dict[str, tuple[str, ...]]) -> None:
        self.records = records
        self.description = "test records"

    async def caa(self, name: str) -> Lookup:
        found = self.records.get(name.rstrip("."))
        return Lookup(Outcome.found, found) if found else Lookup(Outcome.no_answer)


async def test_caa_rules() -> None:
    ids = ("pebble.example",)

    async def refused(records: dict[str, tuple[str, ...]], name: str) -> str | None:
        return await caa.refusal(_Records(records), name, ids)  # type: ignore[arg-type]

    assert await refused({}, "www.shop.test") is None  # no CAA anywhere: every CA
    assert await refused({"shop.test": ("iodef mailto:a@shop.test",)}, "www.shop.test") is None
    assert await refused({"shop.test": ("issue pebble.example; accounturi=x",)}, "www.shop.test") is None
    # The closest set decides: the name's own set allows, whatever its parent says.
    assert await refused({"www.shop.test": ("issue pebble.example",), "shop.test": ("issue ;",)},
                         "www.shop.test") is None
    assert "allows no CA" in (await refused({"shop.test": ("issue ;",)}, "www.shop.test") or "")
    # A wildcard: issuewild decides when the set has one.
    assert await refused({"apps.test": ("issue other.example", "issuewild pebble.example")}, "*.apps.test") is None
    said = await refused({"apps.test": ("issue pebble.example", "issuewild other.example")}, "*.apps.test")
    assert said is not None and "(issuewild) allows other.example" in said
    # Unanswered: svc cannot tell, the CA decides.

    class _Down(_Records):
        async def caa(self, name: str) -> Lookup:
            return Lookup(Outcome.timeout)

    assert await caa.refusal(_Down({}), "www.shop.test", ids) is None  # type: ignore[arg-type]


async def test_a_failing_renewal_near_expiry_is_told_to_the_org_once(tls_svc: Svc) -> None:
    alice = (await make_team(tls_svc, project="web")).alice
    now = utcnow()
    async with tls_svc.ctx.db.transaction() as s:
        project = (await s.scalars(select(Project).where(Project.name == "web"))).one()
        s.add(Hostname(host="old.example.net", project_id=project.id, kind="custom", status="active",
                       created_at=now, proven_by="txt"))
        # Held, and due: its renewal will fail (nothing answers HTTP-01 here) with 10 days left.
        s.add(Certificate(name="old.example.net", kind="host", status="active", fullchain="(a chain)",
                          not_before=now - timedelta(days=80), not_after=now + timedelta(days=10, hours=1),
                          issuer="Pebble", failures=0, renew_at=now, created_at=now, updated_at=now))
    await _converge(tls_svc)
    await run_due_jobs(tls_svc)
    row = (await _rows(tls_svc))["old.example.net"]
    # Still served with the certificate it has; the reason beside it.
    assert (row.status, row.failures) == ("active", 1) and row.last_error and row.warned_at is not None

    async def told() -> list[dict[str, object]]:
        listed = (await alice.client.get("/v1/orgs/acme/notifications")).json()["notifications"]
        return [n for n in listed if n["kind"] == "certificate.expiring"]

    [note] = await told()
    assert note["project"] == "web" and "old.example.net runs out in 10 days" in str(note["message"])
    assert row.last_error in str(note["message"])
    # The next failure says nothing new.
    async with tls_svc.ctx.db.transaction() as s:
        (await s.get(Certificate, "old.example.net")).renew_at = utcnow()  # type: ignore[union-attr]
    await _converge(tls_svc)
    await run_due_jobs(tls_svc)
    assert (await _rows(tls_svc))["old.example.net"].failures == 2
    assert len(await told()) == 1


async def test_a_rate_limited_order_waits_for_the_time_the_ca_says(tls_svc: Svc) -> None:
    """Let's Encrypt says when its limit lifts in the error's words: the next try is not before."""
    from acme import messages
    from svc.adapters.acme.client import _acme_error
    from svc.domains.certificates import service

    error = _acme_error(messages.Error(typ="urn:ietf:params:acme:error:rateLimited",
                                       detail="too many certificates (5) already issued for this exact set of "
                                              "domains in the last 168h0m0s, retry after 2099-01-02 03:04:05 UTC: "
                                              "see https://letsencrypt.org/docs/rate-limits/"))
    assert error.kind == "rate_limited" and error.message.startswith("the CA's rate limit: too many certificates")
    assert error.retry_after is not None and error.retry_after.isoformat() == "2099-01-02T03:04:05+00:00"
    now = utcnow()
    async with tls_svc.ctx.db.transaction() as s:
        s.add(Certificate(name="*.apps.test", kind="wildcard", status="issuing", failures=0, created_at=now,
                          updated_at=now, renew_at=now))
    async with unit_of_work(tls_svc.ctx, Tx.WRITE) as uow:
        await service.record_failure(uow, "*.apps.test", error)
    row = (await _rows(tls_svc))["*.apps.test"]
    assert row.renew_at is not None and row.renew_at.isoformat() == "2099-01-02T03:04:05+00:00"
    assert row.status == "failed" and row.last_error == error.message
    assert await _converge(tls_svc) == 0  # not asked again before then
