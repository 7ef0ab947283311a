"""svc with billing against the fake Polar (a real HTTP server in this process, its webhooks
delivered to svc's in-process client): shared by the billing and AI credit tests."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import httpx
from pydantic import SecretStr

from svc.adapters.billing.fake import FakePolar
from svc.adapters.billing.polar import PolarBilling
from svc.app import default_adapters
from svc.kit.webhook_signatures import SecretForm
from svc.settings import Settings
from tests.support.api import Svc, running_svc
from tests.support.config import configured

SECRET = "whsec_test-secret-of-the-suite"


@contextlib.asynccontextmanager
async def billed_svc(settings: Settings, *, secret: str = SECRET,
                     form: SecretForm = "either") -> AsyncIterator[tuple[Svc, FakePolar]]:
    """svc reading its webhook secret as `form` says, and the fake signing with that secret as that
    form reads it."""
    settings = configured(settings, billing="polar", billing_webhook_secret=SecretStr(secret),
                          billing_webhook_secret_form=form, billing_timeout_seconds=2.0)
    adapters = default_adapters(settings)
    fake: FakePolar | None = None
    try:
        async with running_svc(settings, adapters) as svc:
            fake = FakePolar(webhook_secret=secret, secret_form=form, hook_url="/v1/hooks/polar", http=svc.anon)
            await fake.start()
            adapters.billing = PolarBilling(access_token=fake.access_token, product_id=fake.product_id,
                                            credit_product_id=fake.credit_product_id, sandbox=True,
                                            base_url=fake.url, timeout_seconds=2.0)
            yield svc, fake
    finally:
        # Once the svc and its job workers have stopped, so no job meets a closed client.
        if adapters.billing is not None:
            await adapters.billing.aclose()
        if fake is not None:
            await fake.stop()


async def pay(url: str, card: str = "4242 4242 4242 4242", *, price: str = "$20") -> httpx.Response:
    """A person on the fake's checkout page, paying (the browser journeys do it in Chromium)."""
    async with httpx.AsyncClient(timeout=10) as browser:
        page = await browser.get(url)
        assert page.status_code == 200 and f"Pay {price}" in page.text
        return await browser.post(url, data={"email": "ada@example.com", "card": card})
