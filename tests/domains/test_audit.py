"""The audit rows of a bought domain's registrar-side changes (issue 42, 9): renew, auto-renew,
lock and the auth code each write one, by whom, on what, with what was asked; the auth code's row
says it was asked for, never what it is; a refused change writes none."""

from __future__ import annotations

from typing import Any

from svc.adapters.registrar import FakeRegistrar
from tests.domains.conftest import CONTACT
from tests.support.api import Svc, User, assert_error
from tests.support.team import make_team

D = "/v1/orgs/acme/domains"


async def _domain_events(admin: User) -> list[dict[str, Any]]:
    r = await admin.client.get("/v1/orgs/acme/audit", params={"action": "domain.", "limit": 200})
    assert r.status_code == 200, r.text
    return list(reversed(r.json()["events"]))  # oldest first


async def test_renew_lock_and_auth_code_are_audited(dsvc: Svc, registrar: FakeRegistrar) -> None:
    t = await make_team(dsvc)
    assert (await t.alice.client.post(D, json={"name": "keep.com", "contact": CONTACT})).status_code == 201
    before = {e["id"] for e in await _domain_events(t.alice)}

    assert (await t.alice.client.post(f"{D}/keep.com/renew", json={"years": 2})).status_code == 200
    assert (await t.alice.client.post(f"{D}/keep.com/auto-renew", json={"enabled": False})).status_code == 200
    assert (await t.alice.client.post(f"{D}/keep.com/lock", json={"locked": False})).status_code == 200
    code = (await t.alice.client.post(f"{D}/keep.com/auth-code")).json()["code"]
    # Refused (a member is not an admin; no such renewal length): nothing to audit.
    assert_error(await t.bob.client.post(f"{D}/keep.com/lock", json={"locked": True}), 403, "forbidden")
    assert_error(await t.bob.client.post(f"{D}/keep.com/auth-code"), 403, "forbidden")
    assert_error(await t.alice.client.post(f"{D}/keep.com/renew", json={"years": 0}), 400)

    events = [e for e in await _domain_events(t.alice) if e["id"] not in before]
    assert [(e["action"], e["actor"], e["target"], e["payload"]) for e in events] == [
        ("domain.renew", "dev:alice", "keep.com", {"name": "keep.com", "years": 2, "priceCents": 2800}),
        ("domain.auto_renew", "dev:alice", "keep.com", {"name": "keep.com", "enabled": False}),
        ("domain.lock", "dev:alice", "keep.com", {"name": "keep.com", "locked": False}),
        ("domain.auth_code", "dev:alice", "keep.com", {"name": "keep.com"}),
    ]
    assert len(code) >= 8 and code not in str(events)
