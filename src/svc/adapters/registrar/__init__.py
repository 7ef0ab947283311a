"""The registrar (port.py): DNSimple's API v2 (dnsimple.py), and a fake registrar that is a real
HTTP server with its own state (fake.py, spoken to by client.py), which `svc serve` runs itself
with SVC_REGISTRAR=fake unless SVC_REGISTRAR_URL names one already running."""

from __future__ import annotations

from svc.adapters.registrar.client import RegistrarClient
from svc.adapters.registrar.dnsimple import DnsimpleRegistrar
from svc.adapters.registrar.fake import FakeRegistrar
from svc.adapters.registrar.port import Registrar
from svc.settings import Settings

__all__ = ["FakeRegistrar", "build_registrar", "off_reason", "start_fake_registrar"]


def build_registrar(settings: Settings) -> Registrar | None:
    """DNSimple, or a fake registrar already running at SVC_REGISTRAR_URL; None otherwise (off, or
    the fake `svc serve` starts itself)."""
    timeout = settings.registrar_timeout_seconds
    token = settings.registrar_token.get_secret_value() if settings.registrar_token else None
    if settings.registrar == "dnsimple" and off_reason(settings) is None:
        assert token is not None and settings.dnsimple_account_id is not None
        return DnsimpleRegistrar(token=token, account_id=settings.dnsimple_account_id,
                                 sandbox=settings.registrar_sandbox, timeout_seconds=timeout)
    if settings.registrar == "fake" and settings.registrar_url:
        return RegistrarClient(settings.registrar_url, token or FakeRegistrar.DEFAULT_KEY, timeout_seconds=timeout)
    return None


def off_reason(settings: Settings) -> str | None:
    """Why no registrar is configured, in the banner's words (None: there is one)."""
    if settings.registrar == "off":
        return "off (SVC_REGISTRAR=off): domains can be imported, not bought"
    if settings.registrar == "dnsimple" and (settings.registrar_token is None or not settings.dnsimple_account_id):
        return "off: SVC_REGISTRAR=dnsimple needs SVC_REGISTRAR_TOKEN and SVC_DNSIMPLE_ACCOUNT_ID"
    return None


async def start_fake_registrar(settings: Settings) -> tuple[FakeRegistrar, Registrar]:
    """The fake registrar on a free port of this process, and a client of it."""
    fake = FakeRegistrar()
    await fake.start()
    return fake, RegistrarClient(fake.url, fake.api_key, timeout_seconds=settings.registrar_timeout_seconds)
