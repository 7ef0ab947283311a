"""The nameserver's settings (PowerDNS: docs/dns.md)."""

from __future__ import annotations

from pydantic import Field, SecretStr, field_validator

from svc.settings import ComponentSettings


class NameserverSettings(ComponentSettings):
    # Zones are served; false: the DNS routes answer 503 dns_not_configured.
    dns_enabled: bool = True
    # An external PowerDNS's API (with SVC_PDNS_API_KEY); unset: `svc serve` runs a private
    # pdns_server under SVC_DATA_DIR/pdns when it is installed.
    pdns_api_url: str | None = None
    # The external PowerDNS's API key.
    pdns_api_key: SecretStr | None = None
    # The pdns_server the private PowerDNS runs.
    pdns_binary: str = "pdns_server"
    # The address the private PowerDNS answers DNS on.
    dns_host: str = "127.0.0.1"
    # The port the private PowerDNS answers DNS on (TCP and UDP).
    dns_port: int = Field(default=5353, ge=1, le=65535)
    # The service's nameservers (absolute names, comma-separated): the apex NS set of every zone,
    # the first one in its SOA.
    nameservers: str = "ns1.svc.localhost.,ns2.svc.localhost."
    # The SOA's mailbox as a name (hostmaster.example.com. = hostmaster@example.com).
    hostmaster: str = "hostmaster.svc.localhost."

    @field_validator("nameservers", "hostmaster")
    @classmethod
    def _absolute_names(cls, v: str) -> str:
        names = [n.strip().lower() for n in v.split(",") if n.strip()]
        if not names:
            raise ValueError("at least one name is needed")
        return ",".join(n if n.endswith(".") else n + "." for n in names)

    @property
    def nameserver_names(self) -> list[str]:
        """SVC_NAMESERVERS as absolute lowercase names ("ns1.svc.localhost.")."""
        return self.nameservers.split(",")
