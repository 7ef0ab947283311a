"""Certificates over ACME (port.py): the acme library's client (client.py), and pebble, the test CA
svc can run through its supervisor (pebble.py)."""

from __future__ import annotations

from svc.adapters.acme.client import AcmeClient
from svc.adapters.acme.port import Acme, AcmeFactory
from svc.adapters.acme.settings import AcmeSettings
from svc.settings import Config

__all__ = ["acme_factory"]


def acme_factory(config: Config) -> AcmeFactory | None:
    """The ACME client of SVC_ACME_DIRECTORY_URL for a stored account key; None when it is unset."""
    settings = config.settings_of(AcmeSettings)
    url = settings.acme_directory_url
    if not url:
        return None

    # One client per account key for the process: it reads the directory and finds the account
    # once, not at every order.
    clients: dict[str, AcmeClient] = {}

    def make(account_key_pem: str | None) -> Acme:
        if account_key_pem is not None and account_key_pem in clients:
            return clients[account_key_pem]
        client = AcmeClient(url, account_key_pem=account_key_pem, email=settings.acme_email,
                            ca_bundle=settings.acme_ca_bundle)
        clients[client.account_key_pem()] = client
        return client

    return make
