"""Billing as a component: Polar (built from the settings), or, with SVC_BILLING=fake, a fake Polar
the serving process runs itself, its webhooks sent back to this API."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from svc.adapters.billing import (
    build_billing,
    forget_fake_billing,
    off_reason,
    running_fake_billing,
    start_fake_billing,
)
from svc.adapters.billing.settings import BillingProviderSettings
from svc.settings import Config
from svc.supervisor.component import Component, Launch, Line, holding


@contextlib.asynccontextmanager
async def _start(ctx: Any, launch: Launch) -> AsyncIterator[None]:
    config: Config = ctx.config
    if config.settings_of(BillingProviderSettings).billing != "fake" or ctx.adapters.billing is not None:
        yield
        return
    fake, client = await start_fake_billing(config, launch.api_url.rstrip("/") + "/v1/hooks/polar")

    async def stop() -> None:
        await client.aclose()
        forget_fake_billing(config)
        await fake.stop()

    async with holding(ctx, "billing", client, stop):
        yield


@contextlib.asynccontextmanager
async def _beside(config: Config, adapters: Any) -> AsyncIterator[None]:
    """The fake Polar of the `svc serve` beside this command, asked as Polar would be."""
    if config.settings_of(BillingProviderSettings).billing != "fake":
        yield
        return
    adapters.billing, why = running_fake_billing(config)
    if why is not None:
        adapters.off["billing"] = why
    try:
        yield
    finally:
        if adapters.billing is not None:
            await adapters.billing.aclose()


def _preflight(config: Config) -> str | None:
    """An empty webhook secret (`SVC_BILLING_WEBHOOK_SECRET=`) keys no signature: said in one line
    rather than a start that fails in the fake's signer, or a Polar whose webhooks all fail."""
    settings = config.settings_of(BillingProviderSettings)
    secret = settings.billing_webhook_secret
    if settings.billing == "off" or secret is None or secret.get_secret_value().strip():
        return None
    made = " (with SVC_BILLING=fake, unset it and svc makes one for the run)" if settings.billing == "fake" else ""
    return f"SVC_BILLING_WEBHOOK_SECRET is set but empty: give it the provider's webhook secret{made}"


def _banner(config: Config, launch: Launch) -> list[Line]:
    reason = off_reason(config)
    settings = config.settings_of(BillingProviderSettings)
    if reason is not None:
        return [Line("billing", reason)]
    if settings.billing == "fake":
        return [Line("billing", "a fake Polar in this process (development; test card 4242 4242 4242 4242), its "
                                f"webhooks at {launch.api_url}/v1/hooks/polar")]
    where = "Polar's sandbox" if settings.billing_sandbox else "Polar"
    return [Line("billing", f"{where}, product {settings.polar_product_id}; webhooks at "
                            f"{config.settings.public_url}/v1/hooks/polar")]


COMPONENT = Component(name="billing", settings=BillingProviderSettings, slot="billing", build=build_billing,
                      off=off_reason, start=_start, beside=_beside, preflight=_preflight, banner=_banner)
