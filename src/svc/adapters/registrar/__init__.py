"""The registrar (port.py): DNSimple's API v2 (dnsimple.py), and a fake registrar that is a real
HTTP server with its own state (fake.py, spoken to by client.py), which `svc serve` runs itself
with SVC_REGISTRAR=fake unless SVC_REGISTRAR_URL names one already running."""

from __future__ import annotations

from svc.adapters.registrar.client import RegistrarClient
from svc.adapters.registrar.dnsimple import DnsimpleRegistrar
from svc.adapters.registrar.fake import FakeRegistrar
from svc.adapters.registrar.port import Registrar
from svc.adapters.registrar.settings import RegistrarSettings
from svc.settings import Config

__all__ = ["FakeRegistrar", "build_registrar", "off_reason", "start_fake_registrar"]


def build_registrar(config: Config) -> Registrar | None:
    """DNSimple, or a fake registrar already running at SVC_REGISTRAR_URL; None otherwise (off, or
    the fake `svc serve` starts itself)."""
    settings = config.settings_of(RegistrarSettings)
    timeout = settings.registrar_timeout_seconds
    token = settings.registrar_token.get_secret_value() if settings.registrar_token else None
    if settings.registrar == "dnsimple" and off_reason(config) is None:
        assert token is not None and settings.dnsimple_account_id is not None
        return DnsimpleRegistrar(token=token, account_id=settings.dnsimple_account_id,
                                 sandbox=settings.registrar_sandbox, timeout_seconds=timeout)
    if settings.registrar == "fake" and settings.registrar_url:
        return RegistrarClient(settings.registrar_url, token or FakeRegistrar.DEFAULT_KEY, timeout_seconds=timeout)
    return None


def off_reason(config: Config) -> str | None:
    """Why no registrar is configured, in the banner's words (None: there is one)."""
    settings = config.settings_of(RegistrarSettings)
    if settings.registrar == "off":
        return "off (SVC_REGISTRAR=off): domains can be imported, not bought"
    if settings.registrar == "dnsimple" and (settings.registrar_token is None or not settings.dnsimple_account_id):
        return "off: SVC_REGISTRAR=dnsimple needs SVC_REGISTRAR_TOKEN and SVC_DNSIMPLE_ACCOUNT_ID"
    return None


async def start_fake_registrar(config: Config) -> tuple[FakeRegistrar, Registrar]:
    """The fake registrar on a free port of this process, and a client of it."""
    settings = config.settings_of(RegistrarSettings)
    fake = FakeRegistrar()
    await fake.start()
    return fake, RegistrarClient(fake.url, fake.api_key, timeout_seconds=settings.registrar_timeout_seconds)
