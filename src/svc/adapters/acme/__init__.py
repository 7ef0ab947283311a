"""Certificates over ACME (port.py): the acme library's client (client.py), pebble, the test CA
svc can run through its supervisor (pebble.py), and svc's local CA for trying https on one machine
(local.py, SVC_TLS_ISSUER=local)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from svc.adapters.acme.local import LocalCa, load_or_make
from svc.adapters.acme.port import Acme, AcmeFactory
from svc.adapters.acme.settings import AcmeSettings
from svc.settings import Config

if TYPE_CHECKING:
    from svc.adapters.acme.client import AcmeClient

__all__ = ["acme_factory"]


def acme_factory(config: Config, *, edge_serves_https: bool) -> AcmeFactory | None:
    """The ACME client of SVC_ACME_DIRECTORY_URL for a stored account key; svc's local CA when
    SVC_TLS_ISSUER=local and the edge serves https (SVC_EDGE_TLS_PORT); None: no certificates."""
    settings = config.settings_of(AcmeSettings)
    issuer = settings.certificate_issuer()
    if issuer == "local":
        if not edge_serves_https:
            return None
        data_dir, app_domain = config.settings.data_dir, config.settings.app_domain
        local = LocalCa(data_dir, app_domain)
        load_or_make(data_dir, app_domain)  # at start: people trust it before the first order
        return lambda _account_key_pem: local
    url = settings.acme_directory_url
    if issuer is None or not url:
        return None
    # The acme library (and requests under it) loads when svc orders over ACME, not with this module.
    from svc.adapters.acme.client import AcmeClient

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
