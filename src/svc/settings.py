"""The one typed Settings object. Built once at start (in main or by a test), never at import time."""

from __future__ import annotations

import hashlib
import ipaddress
import os
import re
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SVC_", extra="ignore")

    data_dir: Path = Path("./.svc-data")
    database_url: str | None = None
    public_url: str = "http://localhost:8080"
    app_domain: str = "localhost"
    service_name: str = "svc"

    enable_dev_auth: bool = False
    # The people who run this svc, comma-separated: an email, or `provider:subject` (dev:alice) for a
    # login without one. The dashboard's operator pages (the billing inbox) open for them only;
    # `svc admin` on the server needs none of this.
    operators: str = ""
    session_days: int = Field(default=30, ge=1, le=365)

    # Identity provider: "github" or "oidc"; unset means no identity-provider login.
    idp_provider: str | None = None
    idp_client_id: str | None = None
    idp_client_secret: SecretStr | None = None
    # For oidc: the issuer (discovery at {issuer}/.well-known/openid-configuration).
    idp_issuer: str | None = None
    # For github: the site and API base URLs (a fake speaks the same protocol at another address).
    idp_github_url: str = "https://github.com"
    idp_github_api_url: str = "https://api.github.com"
    # Comma-separated prefixes a login redirect must start with; empty means [public_url].
    idp_redirects: str = ""

    smtp_url: str | None = None
    mail_from: str = "svc <no-reply@localhost>"

    job_poll_seconds: float = Field(default=0.5, gt=0)
    job_lease_seconds: float = Field(default=60.0, gt=0)

    # Signs edge cookies and seals secrets at rest. Unset: generated once into
    # SVC_DATA_DIR/secret.key (0600) on first start and reused.
    secret_key: SecretStr | None = None

    # The edge (nginx) that serves deployments by Host. `svc serve --edge-port` sets the port.
    edge_enabled: bool = True
    edge_host: str = "127.0.0.1"
    edge_port: int = 8081
    # How people reach the edge (for redirects back to a project): scheme and port; None = edge_port.
    edge_public_scheme: str = "http"
    edge_public_port: int | None = None
    nginx_binary: str = "nginx"
    edge_converge_seconds: float = Field(default=2.0, gt=0)
    # How long the edge may reuse an allowed access check (protected projects), in seconds.
    edge_check_cache_seconds: int = Field(default=5, ge=0, le=60)
    # The edge's traffic: every request to a project host counted (the traffic chart) and a sample
    # written as lines (the projects' logs; docs/workers.md); off, no traffic is kept.
    edge_traffic_log: bool = True
    # The worker runtime (docs/workers.md): its serving processes, and how long a worker may take
    # to start answering a request before the edge answers 500 for it.
    worker_processes: int = Field(default=2, ge=1, le=64)
    worker_timeout_seconds: int = Field(default=30, ge=1, le=900)
    # One worker isolate's memory (V8 heap), in MB.
    worker_memory_mb: int = Field(default=128, ge=16, le=8192)
    workerd_binary: str | None = None
    # Who workerd runs as when svc runs as root.
    worker_user: str = "nobody"

    # The projects' databases (docs/database.md): on the PostgreSQL cluster of
    # SVC_PROJECT_DB_ADMIN_URL (an administrator's URL: postgresql://user:password@host:port/db),
    # else on a private cluster `svc serve` runs under SVC_DATA_DIR/projectdb when PostgreSQL's
    # server is installed. SVC_PROJECT_DB_ENABLED=false turns both off.
    # Certificates over ACME (docs/tls.md): the CA's directory (unset: no certificates, http only),
    # the account's contact, and a CA bundle to trust the directory's own certificate with (a
    # private CA such as pebble).
    acme_directory_url: str | None = None
    # Where the edge serves https (svc serve --edge-tls-port); None: http only.
    edge_tls_port: int | None = None
    # Strict-Transport-Security on every https answer of the edge, for this many seconds (0: not
    # sent). Once browsers have seen it they refuse http for the name until it runs out: turn it on
    # when https is there to stay.
    edge_hsts_seconds: int = Field(default=0, ge=0, le=63072000)
    acme_email: str | None = None
    acme_ca_bundle: str | None = None
    # The domains a CAA record names to allow the CA (comma-separated), for a CA whose directory does
    # not list them (its caaIdentities): svc reads CAA before ordering and says when it forbids.
    acme_caa_identities: str = ""
    project_db_enabled: bool = True
    project_db_admin_url: str | None = None
    # A project's connections and bounds come from its plan (domains/orgs/plans.py); these say what
    # the cluster holds: the private cluster's max_connections, and the connections svc keeps for
    # itself (its administrator's pool, dumps and restores) that no project's ceiling may take.
    project_db_max_connections: int = Field(default=200, ge=20, le=10000)
    project_db_svc_connections: int = Field(default=10, ge=4, le=1000)
    # Who the private cluster runs as when svc runs as root (PostgreSQL refuses root).
    project_db_user: str = "postgres"
    # Where the private cluster lives: SVC_DATA_DIR/projectdb, or, when svc runs as root, a
    # directory of /var/lib/svc named by the data dir (svc keeps SVC_DATA_DIR its own, 0700, and
    # the postgres user must pass through every directory above its cluster).
    project_db_dir: Path | None = None

    def private_cluster_dir(self) -> Path:
        if self.project_db_dir is not None:
            return self.project_db_dir
        if os.geteuid() != 0:
            return self.data_dir / "projectdb"
        digest = hashlib.sha256(str(self.data_dir.resolve()).encode()).hexdigest()[:16]
        return Path("/var/lib/svc") / f"projectdb-{digest}"

    # DNS (docs/dns.md): zones are served by PowerDNS. With SVC_PDNS_API_URL and SVC_PDNS_API_KEY
    # svc drives that (external) PowerDNS; without them `svc serve` runs a private pdns_server under
    # SVC_DATA_DIR/pdns answering DNS on dns_host:dns_port. SVC_DNS_ENABLED=false turns both off.
    dns_enabled: bool = True
    pdns_api_url: str | None = None
    pdns_api_key: SecretStr | None = None
    pdns_binary: str = "pdns_server"
    dns_host: str = "127.0.0.1"
    dns_port: int = Field(default=5353, ge=1, le=65535)
    # The service's nameservers (absolute names, comma-separated): the apex NS set of every zone,
    # the first one in its SOA.
    nameservers: str = "ns1.svc.localhost.,ns2.svc.localhost."
    # The SOA's mailbox as a name (hostmaster.example.com. = hostmaster@example.com).
    hostmaster: str = "hostmaster.svc.localhost."

    # Custom hostnames (docs/hostnames.md). fallback_origin: the name a custom hostname's CNAME
    # points to (absolute, lowercase; unset: "edge.<app_domain>."). dns_resolver: "host:port" (an IP
    # address; port 53 when left out) of a resolver that stands for the public DNS, which ownership
    # checks and zones' delegation checks ask; unset: the system resolver (/etc/resolv.conf), or,
    # with trust_own_zones, the managed PowerDNS's dns_host:dns_port when svc runs one.
    # hostname_verify_seconds: how often pending hostnames are checked.
    fallback_origin: str | None = None
    dns_resolver: str | None = None
    hostname_verify_seconds: float = Field(default=60.0, gt=0)
    # Trust svc's own zones as proof of ownership: a zone counts as delegated, and ownership
    # lookups ask the managed PowerDNS. For a local run on a machine with no public DNS (`make run`
    # sets it); unsafe on a shared server, where any org could claim any name (docs/dns.md).
    trust_own_zones: bool = False
    # How long a zone's delegation check stays fresh: the cycle checks again those older than this.
    delegation_recheck_seconds: float = Field(default=600.0, gt=0)

    # Bundles (decisions.md): compressed, unpacked and entry-count bounds.
    max_bundle_bytes: int = 100 * 1024 * 1024
    max_unpacked_bytes: int = 500 * 1024 * 1024
    max_bundle_entries: int = 20_000

    # Where artifacts are kept: "files" (under SVC_DATA_DIR/blobs) or "s3".
    blob_store: str = "files"
    s3_endpoint_url: str | None = None
    s3_bucket: str | None = None
    s3_prefix: str = "svc/"
    s3_region: str = "us-east-1"
    s3_access_key_id: str | None = None
    s3_secret_access_key: SecretStr | None = None

    free_project_limit: int = 3
    pro_project_limit: int = 100
    # A project's env.ai calls a minute at most, by plan (docs/ai.md).
    free_ai_calls_per_minute: int = Field(default=20, ge=1)
    pro_ai_calls_per_minute: int = Field(default=600, ge=1)

    # Billing (docs/billing.md): "off", "polar" (Polar's API with SVC_POLAR_ACCESS_TOKEN and the pro
    # plan's SVC_POLAR_PRODUCT_ID; SVC_BILLING_SANDBOX for Polar's sandbox) or "fake" (svc runs a fake
    # Polar itself, for development). Webhooks are checked against SVC_BILLING_WEBHOOK_SECRET, read
    # as Standard Webhooks reads it (`whsec_` + base64: the decoded bytes are the key), as Polar
    # does (the whole secret's UTF-8 bytes), or either (adapters/billing/signatures.py).
    billing: Literal["off", "polar", "fake"] = "off"
    billing_webhook_secret: SecretStr | None = None
    billing_webhook_secret_form: Literal["standard", "polar", "either"] = "either"
    billing_sandbox: bool = False
    billing_timeout_seconds: float = Field(default=8.0, gt=0, le=60)
    polar_access_token: SecretStr | None = None
    # Polar's API at another address than Polar's own (a proxy, or a fake Polar run apart from svc,
    # as the crash tests run one so that it outlives a kill -9 of svc).
    polar_api_url: str | None = None
    # The AI upstream of each lane of the catalog: any OpenAI-compatible API's base URL
    # (https://api.openai.com/v1, OpenRouter, a vLLM or Ollama server) and its key. A lane without
    # both answers env.ai's calls 503 ai_unavailable.
    ai_frontier_url: str | None = None
    ai_frontier_key: SecretStr | None = None
    ai_value_url: str | None = None
    ai_value_key: SecretStr | None = None
    ai_timeout_seconds: float = Field(default=120.0, gt=0, le=600)
    # Development: svc runs a fake OpenAI-compatible upstream itself (its model echoes the last
    # message, a token a word) for each lane without a URL, so env.ai works with no provider.
    ai_fake: bool = False
    polar_product_id: str | None = None
    # The registrar domains are bought through (docs/domains.md): "off" (buying and checking answer
    # 503 registrar_not_configured), "fake" (svc runs a fake registrar itself, for development; or,
    # with SVC_REGISTRAR_URL, talks to one already running) or "dnsimple" (DNSimple's API v2 with
    # SVC_REGISTRAR_TOKEN and SVC_DNSIMPLE_ACCOUNT_ID; SVC_REGISTRAR_SANDBOX for its sandbox).
    registrar: Literal["off", "fake", "dnsimple"] = "off"
    registrar_url: str | None = None
    registrar_token: SecretStr | None = None
    registrar_sandbox: bool = False
    registrar_timeout_seconds: float = Field(default=15.0, gt=0, le=120)

    # Git hosting (docs/repos.md): repositories under SVC_DATA_DIR/git, served by the git CLI; off
    # (or git not installed): the repository routes answer 503 git_unavailable.
    git_enabled: bool = True
    # The git SSH server's port (0: none, git over HTTPS only) and the address it binds; the host
    # named in sshUrl (default: SVC_PUBLIC_URL's host).
    ssh_port: int = Field(default=0, ge=0, le=65535)
    ssh_host: str = "127.0.0.1"
    ssh_public_host: str | None = None
    # What one push may send (git's receive.maxInputSize: git stops reading past it, before a byte
    # more reaches the disk), and what an org's repositories may hold on disk, by plan (docs/repos.md).
    repo_max_push_bytes: int = Field(default=512 * 1024**2, ge=1)
    free_repo_storage_bytes: int = Field(default=1024**3, ge=0)
    pro_repo_storage_bytes: int = Field(default=25 * 1024**3, ge=0)
    dnsimple_account_id: str | None = None
    # A one-time product for AI credit, its price set per purchase (docs/ai.md): without it, buying
    # credit answers 501 billing_off.
    polar_credit_product_id: str | None = None

    @field_validator("public_url")
    @classmethod
    def _strip_slash(cls, v: str) -> str:
        return v.rstrip("/")

    @field_validator("nameservers", "hostmaster")
    @classmethod
    def _absolute_names(cls, v: str) -> str:
        names = [n.strip().lower() for n in v.split(",") if n.strip()]
        if not names:
            raise ValueError("at least one name is needed")
        return ",".join(n if n.endswith(".") else n + "." for n in names)

    @field_validator("fallback_origin")
    @classmethod
    def _absolute_origin(cls, v: str | None) -> str | None:
        if v is None or not v.strip():
            return None
        v = v.strip().lower().rstrip(".")
        label = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
        if len(v) > 253 or not re.fullmatch(rf"{label}(\.{label})+", v):
            raise ValueError("the fallback origin must be a host name such as edge.svc.example.net")
        return v + "."

    @field_validator("dns_resolver")
    @classmethod
    def _resolver_address(cls, v: str | None) -> str | None:
        if v is None or not v.strip():
            return None
        _resolver_host_port(v)
        return v.strip()

    @property
    def fallback_origin_name(self) -> str:
        """SVC_FALLBACK_ORIGIN, else edge.<app_domain>. (absolute, lowercase)."""
        return self.fallback_origin or f"edge.{self.app_domain.strip().lower().rstrip('.')}."

    @property
    def dns_resolver_address(self) -> tuple[str, int] | None:
        """(ip, port) of SVC_DNS_RESOLVER, or None when unset."""
        return _resolver_host_port(self.dns_resolver) if self.dns_resolver else None

    def tmp_dir(self) -> Path:
        """SVC_DATA_DIR/tmp: files being written (uploads, dumps), swept at start when a killed
        process left them."""
        return self.data_dir / "tmp"

    @property
    def nameserver_names(self) -> list[str]:
        """SVC_NAMESERVERS as absolute lowercase names ("ns1.svc.localhost.")."""
        return self.nameservers.split(",")

    @property
    def sqlalchemy_url(self) -> str:
        """The async driver URL of the state store."""
        if not self.database_url:
            return f"sqlite+aiosqlite:///{(self.data_dir / 'svc.sqlite3').resolve()}"
        url = self.database_url
        for prefix in ("postgresql+asyncpg://", "postgresql://", "postgres://"):
            if url.startswith(prefix):
                return "postgresql+asyncpg://" + url[len(prefix) :]
        return url

    @property
    def is_sqlite(self) -> bool:
        return self.sqlalchemy_url.startswith("sqlite")

    @property
    def redirect_allowlist(self) -> list[str]:
        items = [p.strip() for p in self.idp_redirects.split(",") if p.strip()]
        return items or [self.public_url]

    def mail_dir(self) -> Path:
        return self.data_dir / "mail"

    def edge_url(self, host: str) -> str:
        """The address people use for a project host, e.g. http://web-alice.localhost:8081."""
        port = self.edge_public_port if self.edge_public_port is not None else self.edge_port
        default = 443 if self.edge_public_scheme == "https" else 80
        return f"{self.edge_public_scheme}://{host}" + ("" if port == default else f":{port}")

    def is_operator(self, *, email: str | None, provider: str, subject: str) -> bool:
        """Whether a signed-in person is one of SVC_OPERATORS: by email (case-insensitive), or by
        provider and subject (a subject alone would match the same name at another provider)."""
        named = {name.strip() for name in self.operators.split(",") if name.strip()}
        emails = {name.lower() for name in named if "@" in name}
        return (email or "").lower() in emails or f"{provider}:{subject}" in named

    def console_host(self) -> str | None:
        """SVC_PUBLIC_URL's host when it is https:// on a DNS name (not localhost, not an address):
        the edge then fronts the dashboard and API under it, with a certificate svc gets for it
        (docs/tls.md). None: people reach the API's own address."""
        url = urlsplit(self.public_url)
        host = (url.hostname or "").lower().rstrip(".")
        if url.scheme != "https" or "." not in host or host == "localhost" or host.endswith(".localhost"):
            return None
        try:
            ipaddress.ip_address(host)
        except ValueError:
            return host
        return None


def _resolver_host_port(text: str) -> tuple[str, int]:
    """"127.0.0.1:5353", "[::1]:53", "192.0.2.1" (port 53) -> (ip, port); ValueError otherwise."""
    value = text.strip()
    host, port = value, "53"
    if value.startswith("["):
        host, _, rest = value[1:].partition("]")
        port = rest.removeprefix(":") or "53"
    elif value.count(":") == 1:
        host, port = value.split(":")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        raise ValueError("the DNS resolver must be an IP address with an optional port, such as "
                         "127.0.0.1:5353 or [::1]:53") from None
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError("the DNS resolver's port must be a number from 1 to 65535")
    return host, int(port)


class AreaSettings(BaseSettings):
    """An area's own settings (domains/<area>/settings.py, named in its manifest): SVC_* variables
    too, read once when svc starts (svc.app) and checked then: a bad value stops `svc serve` with one
    line naming the variable. The foundation's settings above are the ones every area shares."""

    model_config = SettingsConfigDict(env_prefix="SVC_", extra="ignore")
