"""The registrar's settings (DNSimple, or a fake one: docs/domains.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr

from svc.settings import ComponentSettings


class RegistrarSettings(ComponentSettings):
    # "off" (buying and checking answer 503 registrar_not_configured), "fake" (svc runs a fake
    # registrar itself, for development; or, with SVC_REGISTRAR_URL, talks to one already running)
    # or "dnsimple" (DNSimple's API v2 with SVC_REGISTRAR_TOKEN and SVC_DNSIMPLE_ACCOUNT_ID).
    registrar: Literal["off", "fake", "dnsimple"] = "off"
    # A fake registrar already running (with fake).
    registrar_url: str | None = None
    # The registrar's API token.
    registrar_token: SecretStr | None = None
    # DNSimple's sandbox instead of production.
    registrar_sandbox: bool = False
    # How long svc waits for the registrar, in seconds.
    registrar_timeout_seconds: float = Field(default=15.0, gt=0, le=120)
    # DNSimple's account the domains are bought in.
    dnsimple_account_id: str | None = None
