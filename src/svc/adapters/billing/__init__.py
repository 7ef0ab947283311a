"""Billing (port.py): Polar through its SDK (polar.py), and a fake Polar that is a real HTTP server
(fake.py), which `svc serve` runs itself with SVC_BILLING=fake."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import SecretStr

from svc.adapters.billing.port import BillingProvider
from svc.adapters.billing.settings import BillingProviderSettings
from svc.kit.webhook_signatures import made_secret, standard_key
from svc.settings import Config

if TYPE_CHECKING:
    from svc.adapters.billing.fake import FakePolar
    from svc.adapters.billing.polar import PolarBilling

# polar-sdk is imported where a client or the fake is made, not with this module: importing it
# costs about a second of CPU (its models), which every `svc admin` command and every start with
# billing off would otherwise pay (bench/cli.py, `svc admin`).

__all__ = ["build_billing", "forget_fake_billing", "off_reason", "running_fake_billing",
           "start_fake_billing"]

# Where `svc serve` with SVC_BILLING=fake says where its fake Polar answers (under SVC_DATA_DIR), so
# that `svc admin billing ...` beside it asks that fake, as it would ask Polar.
FAKE_ADDRESS = "fake-polar.json"


def build_billing(config: Config) -> BillingProvider | None:
    """Polar with SVC_BILLING=polar and its token and product; None otherwise (fake: started later)."""
    settings = config.settings_of(BillingProviderSettings)
    if settings.billing != "polar" or off_reason(config) is not None:
        return None
    assert settings.polar_access_token is not None and settings.polar_product_id is not None
    from svc.adapters.billing.polar import PolarBilling

    return PolarBilling(access_token=settings.polar_access_token.get_secret_value(),
                        product_id=settings.polar_product_id, sandbox=settings.billing_sandbox,
                        base_url=settings.polar_api_url,
                        timeout_seconds=settings.billing_timeout_seconds,
                        credit_product_id=settings.polar_credit_product_id)


def off_reason(config: Config) -> str | None:
    """Why billing is off, in the banner's words (None: it is on)."""
    settings = config.settings_of(BillingProviderSettings)
    if settings.billing == "off":
        return "off (SVC_BILLING=off): plans are set by the operator with `svc admin plan`"
    if settings.billing_webhook_secret is None and settings.billing == "polar":
        return "off: SVC_BILLING=polar needs SVC_BILLING_WEBHOOK_SECRET (Polar's webhook secret)"
    secret = settings.billing_webhook_secret
    if (settings.billing_webhook_secret_form == "standard" and secret is not None
            and standard_key(secret.get_secret_value()) is None):
        return ("off: SVC_BILLING_WEBHOOK_SECRET_FORM=standard needs a secret in Standard Webhooks' form "
                "(whsec_ and base64 of 24 bytes or more)")
    if settings.billing == "polar" and (settings.polar_access_token is None or not settings.polar_product_id):
        return "off: SVC_BILLING=polar needs SVC_POLAR_ACCESS_TOKEN and SVC_POLAR_PRODUCT_ID"
    return None


async def start_fake_billing(config: Config, hook_url: str) -> tuple[FakePolar, PolarBilling]:
    """The fake Polar on a free port, and svc's Polar client pointed at it, which knows the secret
    the fake signs its webhooks with (SVC_BILLING_WEBHOOK_SECRET, else one made for this run, of
    the form it signs with)."""
    settings = config.settings_of(BillingProviderSettings)
    form = settings.billing_webhook_secret_form
    secret = settings.billing_webhook_secret or SecretStr(made_secret(form))
    from svc.adapters.billing.fake import FakePolar
    from svc.adapters.billing.polar import PolarBilling

    fake = FakePolar(webhook_secret=secret.get_secret_value(), secret_form=form, hook_url=hook_url)
    await fake.start()
    client = PolarBilling(access_token=fake.access_token, product_id=fake.product_id, sandbox=True,
                          base_url=fake.url, timeout_seconds=settings.billing_timeout_seconds,
                          credit_product_id=fake.credit_product_id, webhook_secret=secret)
    _fake_address(config.settings.data_dir).write_text(json.dumps({
        "url": fake.url, "accessToken": fake.access_token, "productId": fake.product_id,
        "creditProductId": fake.credit_product_id}))
    return fake, client


def _fake_address(data_dir: Path) -> Path:
    return data_dir / FAKE_ADDRESS


def forget_fake_billing(config: Config) -> None:
    """The fake stopped: nothing may ask it any more."""
    _fake_address(config.settings.data_dir).unlink(missing_ok=True)


def running_fake_billing(config: Config) -> tuple[PolarBilling | None, str | None]:
    """A client of the fake Polar that `svc serve` runs on this data directory (SVC_BILLING=fake),
    or why there is none, in the banner's words."""
    data_dir = config.settings.data_dir
    try:
        found = json.loads(_fake_address(data_dir).read_text())
    except (OSError, ValueError):
        return None, ("off here: with SVC_BILLING=fake the fake Polar runs inside `svc serve`, and none runs "
                      f"on {data_dir} (start svc serve first)")
    timeout = config.settings_of(BillingProviderSettings).billing_timeout_seconds
    from svc.adapters.billing.polar import PolarBilling

    return PolarBilling(access_token=found["accessToken"], product_id=found["productId"], sandbox=True,
                        base_url=found["url"], timeout_seconds=timeout,
                        credit_product_id=found.get("creditProductId")), None
