"""Import, renew, auto-renew, lock, the auth code (never recorded), sync (transferred_out), the
sync cycle's expiry notice, and the 503s."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from sqlalchemy import select

from svc.adapters.registrar import FakeRegistrar
from svc.app import default_adapters
from svc.domains.domain_names import jobs
from svc.jobs.registry import JobRun
from svc.kit.clock import utcnow
from svc.models import Base, Domain, Notification
from svc.settings import Settings
from svc.uow import Tx, unit_of_work
from tests.domains.conftest import CONTACT
from tests.support.api import Svc, assert_error, running_svc
from tests.support.config import configured
from tests.support.team import make_team

D = "/v1/orgs/acme/domains"


async def _dump(svc: Svc) -> str:
    """Every row of every table, as text."""
    said = []
    async with svc.ctx.db.transaction(write=False) as s:
        for table in Base.metadata.sorted_tables:
            said.append(str((await s.execute(select(table))).all()))
    return "\n".join(said)


async def test_import(dsvc: Svc) -> None:
    t = await make_team(dsvc, other_org=True)
    r = await t.alice.client.post(f"{D}/import", json={"name": "Mine.Example."})
    assert r.status_code == 201, r.text
    assert r.json()["source"] == "import" and r.json()["status"] == "active"
    assert (await t.alice.client.post(f"{D}/import", json={"name": "mine.example"})).status_code == 200
    zone = await t.vic.client.get("/v1/orgs/acme/dns/zones/mine.example")
    assert zone.status_code == 200
    assert_error(await t.eve.client.post("/v1/orgs/other/domains/import", json={"name": "mine.example"}), 409,
                 "domain_taken")
    assert_error(await t.bob.client.post(f"{D}/import", json={"name": "b.example"}), 403, "forbidden")
    # The registrar's operations are not for an imported domain.
    assert_error(await t.alice.client.post(f"{D}/mine.example/renew", json={"years": 1}), 400, "domain_imported")
    assert (await t.bob.client.post(f"{D}/mine.example/sync")).json()["status"] == "active"


async def test_manage_a_bought_domain(dsvc: Svc, registrar: FakeRegistrar, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    t = await make_team(dsvc)
    assert (await t.alice.client.post(D, json={"name": "keep.com", "contact": CONTACT})).status_code == 201
    before = (await t.vic.client.get(f"{D}/keep.com")).json()["expiresAt"]

    renewed = await t.alice.client.post(f"{D}/keep.com/renew", json={"years": 2})
    assert renewed.status_code == 200, renewed.text
    assert renewed.json()["expiresAt"] > before
    assert [e["kind"] for e in registrar.ledger() if e["name"] == "keep.com"] == ["charge", "renewal"]
    assert_error(await t.alice.client.post(f"{D}/keep.com/renew", json={"years": 0}), 400)

    off = await t.alice.client.post(f"{D}/keep.com/auto-renew", json={"enabled": False})
    assert off.json()["autoRenew"] is False and "stays on" in off.json()["notice"]
    unlocked = await t.alice.client.post(f"{D}/keep.com/lock", json={"locked": False})
    assert unlocked.json()["locked"] is False
    assert next(d for d in registrar.domains() if d["name"] == "keep.com")["locked"] is False
    assert_error(await t.bob.client.post(f"{D}/keep.com/lock", json={"locked": True}), 403, "forbidden")

    code = (await t.alice.client.post(f"{D}/keep.com/auth-code")).json()["code"]
    assert len(code) >= 8
    stored = await _dump(dsvc)
    assert code not in stored and code not in caplog.text
    history = [h["action"] for h in (await t.vic.client.get(f"{D}/keep.com")).json()["history"]]
    assert {"renew", "auto_renew", "lock", "auth_code"} <= set(history)

    # The registrar is the source of truth: a sync reads expiry and lock back.
    later = utcnow() + timedelta(days=900)
    registrar.expire("keep.com", later)
    synced = (await t.bob.client.post(f"{D}/keep.com/sync")).json()
    assert synced["expiresAt"][:10] == later.date().isoformat()
    registrar.transferred_away("keep.com")
    assert (await t.bob.client.post(f"{D}/keep.com/sync")).json()["status"] == "transferred_out"


async def test_cycle_notices_expiry_without_auto_renew(dsvc: Svc, registrar: FakeRegistrar) -> None:
    t = await make_team(dsvc)
    assert (await t.alice.client.post(D, json={"name": "soon.com", "contact": CONTACT})).status_code == 201
    assert (await t.alice.client.post(f"{D}/soon.com/auto-renew", json={"enabled": False})).status_code == 200
    registrar.expire("soon.com", utcnow() + timedelta(days=10))
    for _ in range(2):  # twice: one notice per expiry date
        async with dsvc.ctx.db.transaction(write=True) as s:  # due for a sync now
            for d in (await s.scalars(select(Domain))).all():
                d.synced_at = None
        async with unit_of_work(dsvc.ctx, Tx.READ_THEN_WRITE) as uow:
            await jobs.sync_cycle(JobRun(ctx=dsvc.ctx, job_id="test", kind="domains.sync_cycle", payload={},
                                         attempt=1, max_attempts=1, uow=uow))
    async with dsvc.ctx.db.transaction(write=False) as s:
        kinds = [n.kind for n in (await s.scalars(select(Notification))).all()]
    assert kinds.count("domain.expiring") == 1


async def test_not_configured(settings: Settings) -> None:
    async with running_svc(settings, default_adapters(settings)) as svc:
        t = await make_team(svc)
        assert_error(await t.bob.client.post(f"{D}/check", json={"names": ["a.com"]}), 503,
                     "registrar_not_configured")
        assert_error(await t.alice.client.post(D, json={"name": "a.com", "contact": CONTACT}), 503,
                     "registrar_not_configured")
        assert_error(await t.alice.client.post(f"{D}/import", json={"name": "a.com"}), 503, "dns_not_configured")


async def test_no_dns_no_purchase(settings: Settings, registrar: FakeRegistrar) -> None:
    """A registrar without svc's DNS: checking works, buying is refused before anything is charged."""
    with_registrar = configured(settings, registrar="fake", registrar_url=registrar.url)
    async with running_svc(with_registrar, default_adapters(with_registrar)) as svc:
        t = await make_team(svc)
        assert (await t.bob.client.post(f"{D}/check", json={"names": ["a.com"]})).status_code == 200
        assert_error(await t.alice.client.post(D, json={"name": "a.com", "contact": CONTACT}), 503,
                     "dns_not_configured")
        assert registrar.ledger() == []
