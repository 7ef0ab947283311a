"""Which key a webhook secret stands for, and the check of a delivery's signature with the
`standardwebhooks` library.

Two readings of one secret are in use. Standard Webhooks says a `whsec_` secret is base64 and keys
the HMAC with its decoded bytes (what an operator pastes from a Standard Webhooks sender). Polar
keys it with the whole secret's UTF-8 bytes, `whsec_` included if there is one (its SDK's
`validate_event`). SVC_BILLING_WEBHOOK_SECRET_FORM picks one, or `either`: a delivery signed under
either reading holds. The Standard reading is only tried on a secret that is one: `whsec_` and then
strict base64 of at least 24 bytes (the spec's least), so a short or free-form secret is never
taken as a few decoded bytes."""

from __future__ import annotations

import base64
import binascii
import secrets
from collections.abc import Mapping
from typing import Any, Literal

from standardwebhooks import Webhook, WebhookVerificationError

SecretForm = Literal["standard", "polar", "either"]

PREFIX = "whsec_"
# Standard Webhooks' secrets are 24 to 64 random bytes.
LEAST_KEY_BYTES = 24

__all__ = ["SecretForm", "WebhookVerificationError", "keys", "made_secret", "signing_key", "verify"]


def standard_key(secret: str) -> bytes | None:
    """The decoded key of a secret in Standard Webhooks' form, None when it is not one."""
    if not secret.startswith(PREFIX):
        return None
    encoded = secret[len(PREFIX):]
    try:
        key = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None
    return key if len(key) >= LEAST_KEY_BYTES else None


def keys(secret: str, form: SecretForm) -> list[bytes]:
    """The HMAC keys a delivery may be signed with, under the secret's form."""
    polar = secret.encode()
    if form == "polar":
        return [polar]
    standard = standard_key(secret)
    if form == "standard":
        if standard is None:
            raise ValueError(f"the webhook secret is not in Standard Webhooks' form ({PREFIX} and base64 "
                             f"of {LEAST_KEY_BYTES} bytes or more)")
        return [standard]
    return [polar] if standard is None else [standard, polar]


def signing_key(secret: str, form: SecretForm) -> bytes:
    """The key a sender of this form signs with (the fake's): the Standard reading when it applies."""
    return keys(secret, form)[0]


def verify(secret: str, form: SecretForm, body: bytes, headers: Mapping[str, str]) -> Any:
    """The delivery's JSON once its signature holds under a key of the secret (and its timestamp is
    within 5 minutes); WebhookVerificationError otherwise."""
    plain = dict(headers)
    refused: WebhookVerificationError | None = None
    for key in keys(secret, form):
        try:
            return Webhook(key).verify(body, plain)
        except WebhookVerificationError as exc:
            refused = exc
    assert refused is not None
    raise refused


def made_secret(form: SecretForm) -> str:
    """A new secret of the form (the fake's, when none is set): Standard Webhooks' `whsec_` and
    base64 of 32 random bytes, or a Polar-style one, which no reading takes for base64."""
    if form == "polar":
        return "polar_whs_" + secrets.token_urlsafe(32)
    return PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()
