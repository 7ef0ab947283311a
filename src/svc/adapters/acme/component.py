"""The ACME CA svc gets certificates from as a component (or svc's local CA, SVC_TLS_ISSUER=local):
its banner line says where https is served, and with the local CA how to trust it."""

from __future__ import annotations

from svc.adapters.acme import acme_factory
from svc.adapters.acme.local import root_path
from svc.adapters.acme.port import AcmeFactory
from svc.adapters.acme.settings import AcmeSettings
from svc.adapters.edge.settings import EdgeSettings
from svc.kit.hosts import local_address
from svc.settings import Config
from svc.supervisor import host_port
from svc.supervisor.component import Component, Launch, Line


def _build(config: Config) -> AcmeFactory | None:
    return acme_factory(config, edge_serves_https=config.settings_of(EdgeSettings).edge_tls_port is not None)


def _preflight(config: Config) -> str | None:
    """The local CA is for one machine: never beside an ACME directory (docs/security.md)."""
    settings = config.settings_of(AcmeSettings)
    if settings.tls_issuer == "local" and settings.acme_directory_url:
        return ("SVC_TLS_ISSUER=local and SVC_ACME_DIRECTORY_URL are both set: svc's local CA is for trying https "
                "on one machine and is never used where an ACME CA is configured; unset one of them")
    if settings.tls_issuer == "acme" and not settings.acme_directory_url:
        return "SVC_TLS_ISSUER=acme needs SVC_ACME_DIRECTORY_URL (Let's Encrypt's, or any ACME CA's directory)"
    return None


def _banner(config: Config, launch: Launch) -> list[Line]:
    settings, edge = config.settings_of(AcmeSettings), config.settings_of(EdgeSettings)
    issuer = settings.certificate_issuer()
    if issuer == "local" and edge.edge_tls_port:
        return [Line("https", f"on {host_port(local_address(edge.edge_host), edge.edge_tls_port)}, certificates "
                              f"from svc's local CA {root_path(config.settings.data_dir)}: trust it once with "
                              f"`svc certs trust` (curl, Chromium; docs/tls.md)")]
    if issuer is None or not edge.edge_tls_port:
        return [Line("https", "off: the edge serves http only. To try https on this machine, start with "
                              "SVC_TLS_ISSUER=local and SVC_EDGE_TLS_PORT (`make run EDGE_TLS_PORT=8443`); to serve "
                              "it, set SVC_ACME_DIRECTORY_URL (Let's Encrypt's, or any ACME CA) and "
                              "SVC_EDGE_TLS_PORT (or --edge-tls-port), and give svc an app domain the CA can reach "
                              "(docs/tls.md)")]
    return [Line("https", f"on {host_port(local_address(edge.edge_host), edge.edge_tls_port)}, certificates "
                          f"from {settings.acme_directory_url}")]


# pebble, the test CA, runs under the supervisor in the tests only: no process of svc's own.
COMPONENT = Component(name="acme", settings=AcmeSettings, slot="acme", build=_build, banner=_banner,
                      preflight=_preflight)
