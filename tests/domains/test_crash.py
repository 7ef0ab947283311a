"""kill -9 of `svc serve` between the purchase's steps, then a restart and the same request: the
domain ends active, charged exactly once. Each kill lands while the fake registrar holds the answer
of a call it has carried out (the charge taken, the name registered, the NS set), so svc never
learns of it before it dies: the worst moment for a saga."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from svc.adapters.registrar import FakeRegistrar
from tests.domains.conftest import CONTACT
from tests.support.serve import svc_serve
from tests.support.wait import WAIT_SECONDS

NAME = "crash-proof.com"
BUY = {"name": NAME, "contact": CONTACT}


async def _until(check: Callable[[], bool], what: str, seconds: float = WAIT_SECONDS) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not check():
        if loop.time() > deadline:
            raise AssertionError(f"{what}: not within {seconds:g}s")
        await asyncio.sleep(0.05)


async def test_kill_9_between_every_two_steps(tmp_path: Path) -> None:
    fake = FakeRegistrar()
    await fake.start()
    settings = {"SVC_REGISTRAR": "fake", "SVC_REGISTRAR_URL": fake.url, "SVC_REGISTRAR_TOKEN": fake.api_key,
                # svc must still be waiting for the held answer when it is killed.
                "SVC_REGISTRAR_TIMEOUT_SECONDS": "90"}

    def charged() -> bool:
        return any(e["kind"] == "charge" and e["name"] == NAME for e in fake.ledger())

    def registered() -> bool:
        return any(d["name"] == NAME for d in fake.domains())

    def delegated() -> bool:
        return any(d["name"] == NAME and "fake-registrar" not in str(d["nameservers"]) for d in fake.domains())

    try:
        for step, done in (("charge", charged), ("register", registered), ("nameservers", delegated)):
            fake.fail(step, "lost")
            async with svc_serve(tmp_path, **settings) as server:
                async with httpx.AsyncClient(base_url=server.api, timeout=120) as http:
                    token = (await http.post("/v1/auth/dev/login", json={"subject": "crash"})).json()["token"]
                    http.headers["authorization"] = f"Bearer {token}"
                    buying = asyncio.create_task(http.post("/v1/orgs/crash/domains", json=BUY))
                    await _until(done, f"the registrar to carry out the {step}")
                    assert server.pgid is not None
                    os.killpg(server.pgid, signal.SIGKILL)
                    with contextlib.suppress(httpx.HTTPError):
                        await buying
            fake.release()
        # Restarted once more on the same data: the same request finishes the purchase.
        async with svc_serve(tmp_path, **settings) as server:
            async with httpx.AsyncClient(base_url=server.api, timeout=60) as http:
                token = (await http.post("/v1/auth/dev/login", json={"subject": "crash"})).json()["token"]
                http.headers["authorization"] = f"Bearer {token}"
                r = await http.post("/v1/orgs/crash/domains", json=BUY)
                assert r.status_code == 200 and r.json()["status"] == "active", r.text
                history = [h["action"] for h in (await http.get(f"/v1/orgs/crash/domains/{NAME}")).json()["history"]]
                assert history.count("payment") == 1 and history.count("registered") == 1
        lines = [e for e in fake.ledger() if e["name"] == NAME]
        assert [(e["kind"], e["amountCents"]) for e in lines] == [("charge", 1200)]
        assert len([d for d in fake.domains() if d["name"] == NAME]) == 1
    finally:
        await fake.stop()


async def _serve_and(tmp_path: Path, settings: dict[str, str], act: Callable[[httpx.AsyncClient], Any],
                     done: Callable[[], bool], what: str) -> None:
    """`svc serve` started, `act` sent, and the server killed -9 once the registrar did `what` (its
    answer held: svc never learns of it)."""
    async with svc_serve(tmp_path, **settings) as server:
        async with httpx.AsyncClient(base_url=server.api, timeout=120) as http:
            await _login(http)
            sent = asyncio.create_task(act(http))
            await _until(done, f"the registrar to carry out {what}")
            assert server.pgid is not None
            os.killpg(server.pgid, signal.SIGKILL)
            with contextlib.suppress(httpx.HTTPError):
                await sent


async def _login(http: httpx.AsyncClient) -> None:
    token = (await http.post("/v1/auth/dev/login", json={"subject": "crash"})).json()["token"]
    http.headers["authorization"] = f"Bearer {token}"


async def _audited(http: httpx.AsyncClient, action: str) -> list[dict[str, Any]]:
    r = await http.get("/v1/orgs/crash/audit", params={"action": action, "limit": 100})
    assert r.status_code == 200, r.text
    return [e["payload"] for e in r.json()["events"]]


async def test_kill_9_between_the_refund_and_its_record(tmp_path: Path) -> None:
    """The registration refused, the refund made, svc killed before it wrote so: the resend does the
    refund (the registrar gives a charge back once), records it once, and registers nothing."""
    fake = FakeRegistrar()
    await fake.start()
    settings = {"SVC_REGISTRAR": "fake", "SVC_REGISTRAR_URL": fake.url, "SVC_REGISTRAR_TOKEN": fake.api_key,
                "SVC_REGISTRAR_TIMEOUT_SECONDS": "90"}
    try:
        fake.fail("register", "reject", field="contact.street")
        fake.fail("refund", "lost")
        await _serve_and(tmp_path, settings, lambda http: http.post("/v1/orgs/crash/domains", json=BUY),
                         lambda: any(e["kind"] == "refund" for e in fake.ledger()), "the refund")
        fake.release()
        async with svc_serve(tmp_path, **settings) as server:
            async with httpx.AsyncClient(base_url=server.api, timeout=60) as http:
                await _login(http)
                r = await http.post("/v1/orgs/crash/domains", json=BUY)
                assert r.status_code == 422 and r.json()["code"] == "registrar_rejected", r.text
                assert "refunded" in r.json()["message"]
                shown = (await http.get(f"/v1/orgs/crash/domains/{NAME}")).json()
                assert shown["status"] == "pending_payment"
                assert [h["action"] for h in shown["history"]].count("refund") == 1
                assert [p["priceCents"] for p in await _audited(http, "domain.refund")] == [1200]
        assert [(e["kind"], e["amountCents"]) for e in fake.ledger()] == [("charge", 1200), ("refund", 1200)]
        assert len(fake.calls("register")) == 1 and fake.domains() == []
    finally:
        await fake.stop()


async def test_kill_9_between_the_renewal_and_its_record(tmp_path: Path) -> None:
    """A renewal charged, svc killed before it wrote so: the same renew again continues that renewal
    (the registrar's key is the pending renewal's), charged once, one event with its price."""
    fake = FakeRegistrar()
    await fake.start()
    settings = {"SVC_REGISTRAR": "fake", "SVC_REGISTRAR_URL": fake.url, "SVC_REGISTRAR_TOKEN": fake.api_key,
                "SVC_REGISTRAR_TIMEOUT_SECONDS": "90"}
    renew = f"/v1/orgs/crash/domains/{NAME}/renew"
    try:
        async with svc_serve(tmp_path, **settings) as server:
            async with httpx.AsyncClient(base_url=server.api, timeout=60) as http:
                await _login(http)
                assert (await http.post("/v1/orgs/crash/domains", json=BUY)).status_code == 201
        fake.fail("renew", "lost")
        await _serve_and(tmp_path, settings, lambda http: http.post(renew, json={"years": 1}),
                         lambda: any(e["kind"] == "renewal" for e in fake.ledger()), "the renewal")
        fake.release()
        async with svc_serve(tmp_path, **settings) as server:
            async with httpx.AsyncClient(base_url=server.api, timeout=60) as http:
                await _login(http)
                r = await http.post(renew, json={"years": 1})
                assert r.status_code == 200, r.text
                expires = next(d for d in fake.domains() if d["name"] == NAME)["expiresAt"]
                assert r.json()["expiresAt"][:19] == expires[:19]
                assert await _audited(http, "domain.renew") == [{"name": NAME, "years": 1, "priceCents": 1400}]
        assert [(e["kind"], e["amountCents"]) for e in fake.ledger()] == [("charge", 1200), ("renewal", 1400)]
    finally:
        await fake.stop()
