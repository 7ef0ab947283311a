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
