"""The ACME CA svc gets certificates from as a component: its banner line says where https is served."""

from __future__ import annotations

from svc.adapters.acme import acme_factory
from svc.adapters.acme.settings import AcmeSettings
from svc.adapters.edge.settings import EdgeSettings
from svc.kit.hosts import local_address
from svc.settings import Config
from svc.supervisor import host_port
from svc.supervisor.component import Component, Launch, Line


def _banner(config: Config, launch: Launch) -> list[Line]:
    settings, edge = config.settings_of(AcmeSettings), config.settings_of(EdgeSettings)
    if not settings.acme_directory_url or not edge.edge_tls_port:
        return [Line("https", "off: the edge serves http only. To serve https, set SVC_ACME_DIRECTORY_URL (Let's "
                              "Encrypt's, or any ACME CA) and SVC_EDGE_TLS_PORT (or --edge-tls-port), and give svc "
                              "an app domain the CA can reach (docs/tls.md)")]
    return [Line("https", f"on {host_port(local_address(edge.edge_host), edge.edge_tls_port)}, certificates "
                          f"from {settings.acme_directory_url}")]


# pebble, the test CA, runs under the supervisor in the tests only: no process of svc's own.
COMPONENT = Component(name="acme", settings=AcmeSettings, slot="acme", build=acme_factory, banner=_banner)
