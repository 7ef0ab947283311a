"""kill -9 of `svc serve` between the provider's answer and svc's record, for each two-step use of
the billing provider: a checkout, an auto top-up's charge, a cancel. The fake Polar runs in this
process, apart from svc (SVC_POLAR_API_URL), so it outlives each kill; it carries out the call and
withholds its answer until svc is dead, and the webhook that would have told svc is lost too: svc
restarted on the same data must end right from what it kept, never charging twice."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx

from svc.adapters.billing.fake import FakePolar
from tests.support.billing import pay
from tests.support.serve import Server, svc_serve
from tests.support.wait import WAIT_SECONDS, until

SECRET = "polar-webhook-secret-of-the-crash-test"
ORG = "crash"
FIVE = 500_000_000  # $5 of AI credit, in micro-cents


def _settings(fake: FakePolar) -> dict[str, str]:
    return {"SVC_BILLING": "polar", "SVC_POLAR_API_URL": fake.url, "SVC_POLAR_ACCESS_TOKEN": fake.access_token,
            "SVC_POLAR_PRODUCT_ID": fake.product_id, "SVC_POLAR_CREDIT_PRODUCT_ID": fake.credit_product_id,
            "SVC_BILLING_WEBHOOK_SECRET": SECRET, "SVC_BILLING_WEBHOOK_SECRET_FORM": "polar",
            # svc must still be waiting for the withheld answer when it is killed; a job a killed
            # svc held is taken over soon after the restart.
            "SVC_BILLING_TIMEOUT_SECONDS": "60", "SVC_JOB_LEASE_SECONDS": "2"}


@contextlib.asynccontextmanager
async def _serving(tmp_path: Path, fake: FakePolar) -> AsyncIterator[tuple[Server, httpx.AsyncClient]]:
    async with svc_serve(tmp_path, **_settings(fake)) as server:
        fake.hook_url = f"{server.api}/v1/hooks/polar"
        async with httpx.AsyncClient(base_url=server.api, timeout=90) as http:
            token = (await http.post("/v1/auth/dev/login", json={"subject": ORG})).json()["token"]
            http.headers["authorization"] = f"Bearer {token}"
            yield server, http


def _kill(server: Server) -> None:
    assert server.pgid is not None
    os.killpg(server.pgid, signal.SIGKILL)


async def _killed_while_waiting(server: Server, call: asyncio.Task[Any], done: Callable[[], bool], what: str) -> None:
    """Once the provider has carried out `what` (its answer withheld), svc dies."""
    def carried_out() -> bool:
        if call.done() and call.exception() is not None:
            raise AssertionError(f"{what}: the call failed before the provider carried it out") from call.exception()
        return done()

    await until(carried_out, what=f"the provider to carry out {what}")
    _kill(server)
    with contextlib.suppress(httpx.HTTPError):
        await call


def _admin(server: Server, fake: FakePolar, *args: str) -> dict[str, Any]:
    """`svc admin ...` (its --json among `args`) beside the server, on its data."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    env.update(_settings(fake), SVC_DATA_DIR=str(server.data_dir))
    svc = shutil.which("svc", path=str(Path(sys.executable).parent)) or "svc"
    done = subprocess.run([svc, "admin", *args], env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return dict(json.loads(done.stdout))


def _paid_orders(fake: FakePolar, *, auto: bool) -> list[dict[str, Any]]:
    return [o for o in fake.state.orders.values()
            if o["status"] == "paid" and bool(o["metadata"].get("autoTopup")) is auto]


async def _balance(http: httpx.AsyncClient) -> int:
    return int((await http.get(f"/v1/orgs/{ORG}/ai/credit")).json()["balanceMicroCents"])


async def test_kill_9_between_the_providers_answer_and_svcs_record(tmp_path: Path) -> None:
    fake = FakePolar(webhook_secret=SECRET, secret_form="polar", hook_url="")
    await fake.start()
    try:
        # 1. A checkout made at the provider, svc killed before it kept it: nobody saw its page.
        fake.withhold("checkout")
        async with _serving(tmp_path, fake) as (server, http):
            back = f"{server.api}/{ORG}/billing"
            call = asyncio.create_task(http.post(f"/v1/orgs/{ORG}/billing/checkout", json={"returnTo": back}))
            await _killed_while_waiting(server, call, lambda: len(fake.state.checkouts) == 1, "the checkout")
        fake.answer()

        # 2. The retry pays one subscription; then AI credit is bought, and the auto top-up's charge
        # is carried out while its answer and its order.paid never reach svc.
        async with _serving(tmp_path, fake) as (server, http):
            back = f"{server.api}/{ORG}/billing"
            r = await http.post(f"/v1/orgs/{ORG}/billing/checkout", json={"returnTo": back})
            assert r.status_code == 200, r.text
            assert (await pay(r.json()["url"])).status_code == 303

            async def pro() -> bool:
                return (await http.get(f"/v1/orgs/{ORG}/billing")).json()["plan"] == "pro"

            await until(pro, what="the org on the pro plan")
            r = await http.post(f"/v1/orgs/{ORG}/ai/credit/checkout", json={"microCents": FIVE, "returnTo": back})
            assert r.status_code == 200, r.text
            assert (await pay(r.json()["url"], price="$5")).status_code == 303

            async def bought() -> bool:
                return await _balance(http) == FIVE

            await until(bought, what="the credit bought")
            on = {"enabled": True, "thresholdMicroCents": 200_000_000, "amountMicroCents": FIVE}
            assert (await http.put(f"/v1/orgs/{ORG}/ai/autotopup", json=on)).status_code == 200
            fake.state.lose_next += 1  # its order.paid
            fake.withhold("finalize")
            spent = asyncio.create_task(asyncio.to_thread(_admin, server, fake, "credit", "--json", "--reason",
                                                          "spent", ORG, "--", "-$4"))
            await _killed_while_waiting(server, spent, lambda: len(_paid_orders(fake, auto=True)) == 1,
                                        "the auto top-up's charge")
            assert (await spent)["balanceMicroCents"] == FIVE - 400_000_000
        fake.answer()

        # 3. Restarted: the job the killed svc held runs again, finds its order at the provider and
        # credits it; no second charge. Then a cancel is carried out and svc killed before its record.
        async with _serving(tmp_path, fake) as (server, http):
            async def topped_up() -> bool:
                return await _balance(http) == FIVE - 400_000_000 + FIVE

            await until(topped_up, timeout=WAIT_SECONDS, what="the auto top-up credited after the restart")
            assert len(_paid_orders(fake, auto=True)) == 1
            ledger = (await http.get(f"/v1/orgs/{ORG}/ai/ledger")).json()["entries"]
            assert [e["kind"] for e in ledger] == ["autotopup", "adjust", "topup"]

            fake.state.lose_next += 2  # its subscription.updated and subscription.canceled
            fake.withhold("cancel")
            cancel = asyncio.create_task(http.post(f"/v1/orgs/{ORG}/billing/cancel", json={"cancel": True}))
            await _killed_while_waiting(
                server, cancel, lambda: any(s["cancel_at_period_end"] for s in fake.state.subscriptions.values()),
                "the cancel")
        fake.answer()

        # 4. Restarted: the org still reads as renewing until the reconcile reads the provider; the
        # same request again is answered as the provider has it.
        async with _serving(tmp_path, fake) as (server, http):
            assert (await http.get(f"/v1/orgs/{ORG}/billing")).json()["cancelAtPeriodEnd"] is False
            repaired = await asyncio.to_thread(_admin, server, fake, "billing", "reconcile", ORG, "--json")
            assert repaired["plan"] == "pro" and repaired["changed"] is True, repaired
            status = (await http.get(f"/v1/orgs/{ORG}/billing")).json()
            assert status["plan"] == "pro" and status["cancelAtPeriodEnd"] is True, status
            r = await http.post(f"/v1/orgs/{ORG}/billing/cancel", json={"cancel": True})
            assert r.status_code == 200 and r.json()["cancelAtPeriodEnd"] is True
            assert await _balance(http) == FIVE - 400_000_000 + FIVE
        # At the provider: one subscription, one order of credit bought, one charged automatically.
        assert len(fake.state.subscriptions) == 1
        assert len(_paid_orders(fake, auto=False)) == 1 and len(_paid_orders(fake, auto=True)) == 1
    finally:
        await fake.stop()
