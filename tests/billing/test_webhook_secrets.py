"""The billing webhook's secret read in both conventions (issue 42, 8): a secret in Standard
Webhooks' form (`whsec_` + base64) keys the HMAC with its decoded bytes, as Standard Webhooks says;
Polar's own convention (the whole secret's UTF-8 bytes) keeps working; a wrong secret is refused.
SVC_BILLING_WEBHOOK_SECRET_FORM picks one reading or either. Signatures here are made by the
`standardwebhooks` library given the key outright, so a test does not lean on svc's own reading."""

from __future__ import annotations

import base64
import json
import secrets
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import SecretStr
from sqlalchemy import select
from standardwebhooks import Webhook

from svc.adapters.billing import off_reason, start_fake_billing
from svc.kit.webhook_signatures import SecretForm, made_secret
from svc.models import Org
from svc.settings import Settings
from tests.support.api import Svc
from tests.support.billing import SECRET, billed_svc
from tests.support.config import configured
from tests.support.team import make_team

HOOK = "/v1/hooks/polar"
# What svc does not act on: answered 200 once its signature holds, 403 otherwise.
IGNORED = json.dumps({"type": "benefit.created", "data": {"id": "benefit_1"}})


@pytest.fixture
def store() -> str:
    """A signature is read before any store is: one store is enough here."""
    return "sqlite"


def _standard(secret: str) -> bytes:
    """The key Standard Webhooks takes a `whsec_` secret for: its base64 decoded."""
    return base64.b64decode(secret.removeprefix("whsec_"), validate=True)


def _signed(body: str, key: bytes, webhook_id: str | None = None) -> dict[str, str]:
    webhook_id = webhook_id or f"msg_{secrets.token_hex(6)}"
    now = datetime.now(UTC)
    return {"webhook-id": webhook_id, "webhook-timestamp": str(int(now.timestamp())),
            "webhook-signature": Webhook(key).sign(webhook_id, now, body), "content-type": "application/json"}


async def _plan(svc: Svc) -> str:
    async with svc.ctx.db.transaction(write=False) as s:
        return str((await s.scalars(select(Org.plan).where(Org.slug == "acme"))).one())


@pytest.mark.parametrize("form", ["either", "standard"])
async def test_a_standard_webhooks_secret_keys_with_its_decoded_bytes(settings: Settings, form: SecretForm) -> None:
    secret = made_secret("standard")
    async with billed_svc(settings, secret=secret, form=form) as (svc, fake):
        await make_team(svc)
        # The fake signs as a Standard Webhooks sender does: the plan follows its deliveries.
        fake.subscribe("acme", None, {"orgSlug": "acme"})
        await fake.drain()
        assert {d.status for d in fake.state.deliveries.values()} == {200}
        assert await _plan(svc) == "pro"
        # A delivery keyed with the decoded bytes, by the library's own reading of the secret too.
        [sub] = fake.state.subscriptions.values()
        body = json.dumps({"type": "subscription.revoked", "data": fake._subscription_json(sub) | {
            "status": "canceled", "modified_at": "2099-01-01T00:00:00Z"}})
        r = await svc.anon.post(HOOK, content=body, headers=_signed(body, _standard(secret)))
        assert r.status_code == 200 and r.json() == {"applied": True}, r.text
        assert await _plan(svc) == "free"
        library = Webhook(secret)
        now = datetime.now(UTC)
        headers = {"webhook-id": "msg_library", "webhook-timestamp": str(int(now.timestamp())),
                   "webhook-signature": library.sign("msg_library", now, IGNORED)}
        assert (await svc.anon.post(HOOK, content=IGNORED, headers=headers)).status_code == 200


# Fixed ids: the secrets are made at import, differently in each xdist worker.
@pytest.mark.parametrize(("form", "secret"), [
    ("either", SECRET),  # `whsec_` but not base64: only Polar's reading is possible
    ("polar", SECRET),
    ("either", "polar_whs_" + secrets.token_urlsafe(32)),
    # A secret that is both: Polar's reading still holds under either.
    ("either", made_secret("standard")),
    ("polar", made_secret("standard")),
], ids=["either-whsec-text", "polar-whsec-text", "either-polar_whs", "either-whsec-base64", "polar-whsec-base64"])
async def test_polar_s_form_keeps_working(settings: Settings, form: SecretForm, secret: str) -> None:
    async with billed_svc(settings, secret=secret, form=form) as (svc, fake):
        await make_team(svc)
        r = await svc.anon.post(HOOK, content=IGNORED, headers=_signed(IGNORED, secret.encode()))
        assert r.status_code == 200 and r.json() == {"applied": False}, r.text
        fake.subscribe("acme", None, {"orgSlug": "acme"})
        await fake.drain()
        assert {d.status for d in fake.state.deliveries.values()} == {200}
        assert await _plan(svc) == "pro"


async def test_a_wrong_secret_or_the_other_reading_is_refused(settings: Settings) -> None:
    secret = made_secret("standard")
    short = "whsec_" + base64.b64encode(secrets.token_bytes(16)).decode()  # under Standard Webhooks' 24 bytes

    async def refused(svc: Svc, key: bytes) -> None:
        r = await svc.anon.post(HOOK, content=IGNORED, headers=_signed(IGNORED, key))
        assert r.status_code == 403 and r.json()["code"] == "bad_signature", r.text

    async with billed_svc(settings, secret=secret) as (svc, _):
        await refused(svc, _standard(made_secret("standard")))  # another Standard secret
        await refused(svc, made_secret("standard").encode())  # another secret, Polar's reading
        # Near the key is not the key: its last byte changed, not dropped (HMAC pads a key with
        # zero bytes, so a key ending in 0x00 signs as the key without it: 1 run in 256).
        key = _standard(secret)
        await refused(svc, key[:-1] + bytes([key[-1] ^ 1]))
    async with billed_svc(settings, secret=secret, form="standard") as (svc, _):
        await refused(svc, secret.encode())  # Polar's reading, where only Standard's is allowed
    async with billed_svc(settings, secret=secret, form="polar") as (svc, _):
        await refused(svc, _standard(secret))  # and the other way round
    async with billed_svc(settings, secret=short) as (svc, _):
        await refused(svc, _standard(short))  # a few decoded bytes are never taken for a key
        r = await svc.anon.post(HOOK, content=IGNORED, headers=_signed(IGNORED, short.encode()))
        assert r.status_code == 200

    # A secret that cannot be read as the operator said leaves billing off, in words.
    said = configured(Settings(data_dir=Path("/nonexistent")), billing="polar",
                      billing_webhook_secret=SecretStr(SECRET), billing_webhook_secret_form="standard",
                      polar_access_token=SecretStr("t"), polar_product_id="p")
    assert "Standard Webhooks' form" in str(off_reason(said))


@pytest.mark.parametrize("form", ["either", "standard", "polar"])
async def test_the_fake_makes_a_secret_of_the_form_it_signs_with(tmp_path: Path, form: SecretForm) -> None:
    settings = configured(Settings(data_dir=tmp_path), billing="fake", billing_webhook_secret_form=form)
    fake, client = await start_fake_billing(configured(settings), HOOK)
    try:
        assert client.webhook_secret is not None
        secret = client.webhook_secret.get_secret_value()
        key = secret.encode() if form == "polar" else _standard(secret)
        if form == "polar":
            assert not secret.startswith("whsec_")
        else:
            assert secret.startswith("whsec_") and len(key) >= 24
        now = datetime.now(UTC)
        assert fake.webhook.sign("msg_1", now, IGNORED) == Webhook(key).sign("msg_1", now, IGNORED)
    finally:
        await client.aclose()
        await fake.stop()
