"""Certificates svc holds, got from a real ACME server (pebble) whose DNS-01 checks svc's own
PowerDNS answers: the app domain's wildcard is issued and kept (its key sealed, its renewal
planned), an active custom hostname gets an order and nothing else does, a failed order is said in
words and tried again later (never in a loop), a hostname that goes takes its certificate along."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest
from cryptography import x509
from sqlalchemy import select

from svc.adapters.acme.pebble import Pebble
from svc.app import default_adapters
from svc.domains.certificates import jobs
from svc.kit.clock import utcnow
from svc.models import AcmeAccount, Certificate, Hostname, Project
from svc.settings import Settings
from svc.uow import Tx, unit_of_work
from tests.support.acme import PEBBLE_REQUIRED, running_pebble
from tests.support.api import Svc, run_due_jobs, running_svc
from tests.support.pdns import Pdns
from tests.support.team import make_team

pytestmark = PEBBLE_REQUIRED


@pytest.fixture
async def pebble(pdns: Pdns, tmp_path: Path) -> AsyncIterator[Pebble]:
    async with running_pebble(tmp_path / "pebble", pdns.port) as running:
        yield running


@pytest.fixture
async def tls_svc(dns_settings: Settings, pdns: Pdns, pebble: Pebble) -> AsyncIterator[Svc]:
    settings = dns_settings.model_copy(update={"app_domain": "apps.test", "acme_directory_url": pebble.directory_url,
                                               "acme_ca_bundle": pebble.ca_bundle, "acme_email": "ops@apps.test"})
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
    """`svc admin certs` on the server, against its store: what svc holds, never a key."""
    from tests.cli.conftest import clean_env, run_in_process

    assert await _converge(tls_svc) == 1
    await run_due_jobs(tls_svc)
    env = clean_env() | {"SVC_DATA_DIR": str(tls_svc.ctx.settings.data_dir)}
    if tls_svc.ctx.settings.database_url:
        env["SVC_DATABASE_URL"] = tls_svc.ctx.settings.database_url
    # (In a thread: the command runs its own event loop, as on the server.)
    listed = await asyncio.to_thread(run_in_process, ["admin", "certs", "--json"], env)
    assert listed.code == 0, listed.err
    [cert] = listed.json()["certificates"]
    assert (cert["name"], cert["kind"], cert["status"], cert["failures"]) == ("*.apps.test", "wildcard", "active", 0)
    assert cert["notAfter"] and cert["renewAt"] and "PRIVATE" not in listed.out
    table = await asyncio.to_thread(run_in_process, ["admin", "certs"], env)
    assert "*.apps.test" in table.out and "active" in table.out
