"""The edge's settings (nginx in front of the projects: docs/edge.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from svc.adapters.acme.settings import AcmeSettings
from svc.settings import ComponentSettings, Config


class EdgeSettings(ComponentSettings):
    # The edge that serves deployments by Host; off: this process serves none.
    edge_enabled: bool = True
    # The address the edge listens on.
    edge_host: str = "127.0.0.1"
    # The edge's http port (`svc serve --edge-port`).
    edge_port: int = 8081
    # How people reach the edge (every printed project URL, redirects back to a project): its scheme
    # (unset: https when the edge serves https with a certificate issuer, SVC_EDGE_TLS_PORT, else http).
    edge_public_scheme: Literal["http", "https"] | None = None
    # How people reach the edge: its port (unset: SVC_EDGE_TLS_PORT when the scheme is https, else SVC_EDGE_PORT).
    edge_public_port: int | None = None
    # The nginx the edge runs (a name on PATH or a path).
    nginx_binary: str = "nginx"
    # How often the edge compares its routes with the store when nothing told it of a change, in seconds.
    edge_converge_seconds: float = Field(default=2.0, gt=0)
    # How long the edge may reuse an allowed access check (protected projects), in seconds.
    edge_check_cache_seconds: int = Field(default=5, ge=0, le=60)
    # The edge's traffic: every request to a project host counted (the traffic chart) and a sample
    # written as lines (the projects' logs; docs/workers.md); off, no traffic is kept.
    edge_traffic_log: bool = True
    # Where the edge serves https (svc serve --edge-tls-port); None: http only.
    edge_tls_port: int | None = None
    # Strict-Transport-Security on every https answer of the edge, for this many seconds (0: not
    # sent). Once browsers have seen it they refuse http for the name until it runs out: turn it on
    # when https is there to stay.
    edge_hsts_seconds: int = Field(default=0, ge=0, le=63072000)



def edge_scheme(config: Config) -> str:
    """How people reach project hosts: SVC_EDGE_PUBLIC_SCHEME, else https when the edge serves it
    (a TLS port and an issuer; over ACME, an app domain a public CA can prove), else http."""
    edge = config.settings_of(EdgeSettings)
    if edge.edge_public_scheme is not None:
        return edge.edge_public_scheme
    issuer = config.settings_of(AcmeSettings).certificate_issuer()
    domain = config.settings.app_domain.strip(".").lower()
    provable = "." in domain and domain != "localhost" and not domain.endswith(".localhost")
    on = edge.edge_tls_port is not None and (issuer == "local" or (issuer == "acme" and provable))
    return "https" if on else "http"


def edge_url(config: Config, host: str) -> str:
    """The address people use for a project host, e.g. http://web-alice.localhost:8081 (https and
    the TLS port once the edge serves https)."""
    edge = config.settings_of(EdgeSettings)
    scheme = edge_scheme(config)
    port = edge.edge_public_port
    if port is None:
        port = edge.edge_tls_port if scheme == "https" and edge.edge_tls_port is not None else edge.edge_port
    default = 443 if scheme == "https" else 80
    return f"{scheme}://{host}" + ("" if port == default else f":{port}")
