"""The ACME CA svc gets certificates from as a component: its banner line says where https is served."""

from __future__ import annotations

from svc.adapters.acme import acme_factory
from svc.kit.hosts import local_address
from svc.settings import Settings
from svc.supervisor import host_port
from svc.supervisor.component import Component, Launch, Line


def _banner(settings: Settings, launch: Launch) -> list[Line]:
    if not settings.acme_directory_url or not settings.edge_tls_port:
        return [Line("https", "off: the edge serves http only. To serve https, set SVC_ACME_DIRECTORY_URL (Let's "
                              "Encrypt's, or any ACME CA) and SVC_EDGE_TLS_PORT (or --edge-tls-port), and give svc "
                              "an app domain the CA can reach (docs/tls.md)")]
    return [Line("https", f"on {host_port(local_address(settings.edge_host), settings.edge_tls_port)}, certificates "
                          f"from {settings.acme_directory_url}")]


# pebble, the test CA, runs under the supervisor in the tests only: no process of svc's own.
COMPONENT = Component(name="acme", slot="acme", build=acme_factory, banner=_banner)
