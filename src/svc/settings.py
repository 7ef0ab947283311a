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
    """Every SVC_* variable of the foundation and of the components (an area's own rules are in its
    settings class, domains/<area>/settings.py). Grouped by what reads them; each field's comment is
    its line in docs/settings.md (generated: lint/settings_table.py)."""

    model_config = SettingsConfigDict(env_prefix="SVC_", extra="ignore")

    # --- the foundation ---
    # Where svc keeps its files: the SQLite store, blobs, keys, the components' data and logs.
    data_dir: Path = Path("./.svc-data")
    # The state store: a PostgreSQL URL (postgresql+asyncpg://...); unset: SQLite under SVC_DATA_DIR.
    database_url: str | None = None
    # Where people and the CLI reach the API and the dashboard (links, redirects, webhooks).
    public_url: str = "http://localhost:8080"
    # The domain projects' default hostnames are made under (<project>-<org>.<app_domain>).
    app_domain: str = "localhost"
    # The service's name in mails and pages.
    service_name: str = "svc"
    # The dev login (`svc login --dev NAME`): anyone becomes anyone. For a local run only.
    enable_dev_auth: bool = False
    # The people who run this svc, comma-separated: an email, or `provider:subject` (dev:alice) for a
    # login without one. The dashboard's operator pages (the billing inbox) open for them only;
    # `svc admin` on the server needs none of this.
    operators: str = ""
    # How long a dashboard or CLI session lasts, in days.
    session_days: int = Field(default=30, ge=1, le=365)
    # Signs edge cookies and seals secrets at rest. Unset: generated once into
    # SVC_DATA_DIR/secret.key (0600) on first start and reused.
    secret_key: SecretStr | None = None
    # How often the job worker looks for due jobs when nothing woke it, in seconds.
    job_poll_seconds: float = Field(default=0.5, gt=0)
    # How long a job is held by the process running it; a process that dies lets it go after this.
    job_lease_seconds: float = Field(default=60.0, gt=0)
    # Bundles (decisions.md): the compressed size, in bytes.
    max_bundle_bytes: int = 100 * 1024 * 1024
    # Bundles: the unpacked size, in bytes.
    max_unpacked_bytes: int = 500 * 1024 * 1024
    # Bundles: how many files one may hold.
    max_bundle_entries: int = 20_000
    # Plans: how many projects an org on the free plan may have.
    free_project_limit: int = 3
    # Plans: how many projects an org on the pro plan may have.
    pro_project_limit: int = 100

    # --- the identity provider (adapters/idp) ---
    # Identity provider: "github" or "oidc"; unset means no identity-provider login.
    idp_provider: str | None = None
    # The OAuth client svc is at the provider.
    idp_client_id: str | None = None
    # The OAuth client's secret.
    idp_client_secret: SecretStr | None = None
    # For oidc: the issuer (discovery at {issuer}/.well-known/openid-configuration).
    idp_issuer: str | None = None
    # For github: the site's base URL (a fake speaks the same protocol at another address).
    idp_github_url: str = "https://github.com"
    # For github: the API's base URL.
    idp_github_api_url: str = "https://api.github.com"
    # Comma-separated prefixes a login redirect must start with; empty means [public_url].
    idp_redirects: str = ""

    # --- mail (adapters/mail) ---
    # The SMTP server mail goes through (smtp://user:password@host:port, smtps:// for TLS); unset:
    # each message is written as an .eml file under SVC_DATA_DIR/mail (development).
    smtp_url: str | None = None
    # The sender of svc's mails.
    mail_from: str = "svc <no-reply@localhost>"

    # --- the blob store (adapters/blobs) ---
    # Where artifacts are kept: "files" (under SVC_DATA_DIR/blobs) or "s3".
    blob_store: str = "files"
    # S3: the endpoint of an S3-compatible store (unset: AWS's).
    s3_endpoint_url: str | None = None
    # S3: the bucket.
    s3_bucket: str | None = None
    # S3: the prefix of svc's keys in the bucket.
    s3_prefix: str = "svc/"
    # S3: the region.
    s3_region: str = "us-east-1"
    # S3: the access key's id.
    s3_access_key_id: str | None = None
    # S3: the access key's secret.
    s3_secret_access_key: SecretStr | None = None

    # --- the edge (svc/edge: nginx) ---
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

    # --- the worker runtime (adapters/workers: workerd, docs/workers.md) ---
    # How many serving processes (shards) run the projects' workers.
    worker_processes: int = Field(default=2, ge=1, le=64)
    # How long a worker may take to start answering a request before the edge answers 500, in seconds.
    worker_timeout_seconds: int = Field(default=30, ge=1, le=900)
    # One worker isolate's memory (V8 heap), in MB.
    worker_memory_mb: int = Field(default=128, ge=16, le=8192)
    # The workerd to run (a name on PATH or a path); unset: the one on PATH or `make setup`'s.
    workerd_binary: str | None = None
    # Who workerd runs as when svc runs as root.
    worker_user: str = "nobody"

    # --- certificates over ACME (adapters/acme, docs/tls.md) ---
    # The CA's directory URL (unset: no certificates, http only).
    acme_directory_url: str | None = None
    # The ACME account's contact.
    acme_email: str | None = None
    # A CA bundle to trust the directory's own certificate with (a private CA such as pebble).
    acme_ca_bundle: str | None = None
    # The domains a CAA record names to allow the CA (comma-separated), for a CA whose directory does
    # not list them (its caaIdentities): svc reads CAA before ordering and says when it forbids.
    acme_caa_identities: str = ""
    # Who signs the certificates: "acme" (the CA of SVC_ACME_DIRECTORY_URL) or "local" (a CA svc makes
    # and keeps under SVC_DATA_DIR/tls/local-ca, for trying https on one machine: `make run`; never
    # with an ACME directory); unset: acme when SVC_ACME_DIRECTORY_URL is set, else none.
    tls_issuer: Literal["acme", "local"] | None = None

    # --- the projects' databases (adapters/database, docs/database.md) ---
    # Projects may be given a PostgreSQL database; false: none is.
    project_db_enabled: bool = True
    # An administrator's URL of the cluster they live on (postgresql://user:password@host:port/db);
    # unset: a private cluster `svc serve` runs under SVC_DATA_DIR/projectdb when PostgreSQL is installed.
    project_db_admin_url: str | None = None
    # The private cluster's max_connections (a project's own bounds come from its plan).
    project_db_max_connections: int = Field(default=200, ge=20, le=10000)
    # The connections svc keeps for itself (its administrator's pool, dumps and restores) that no
    # project's ceiling may take.
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

    # --- DNS (adapters/nameserver: PowerDNS, docs/dns.md) ---
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
    # How long a zone's delegation check stays fresh: the cycle checks again those older than this.
    delegation_recheck_seconds: float = Field(default=600.0, gt=0)

    # --- custom hostnames and the resolver (adapters/resolver, docs/hostnames.md) ---
    # The name a custom hostname's CNAME points to (absolute, lowercase; unset: "edge.<app_domain>.").
    fallback_origin: str | None = None
    # "host:port" (an IP address; port 53 when left out) of a resolver that stands for the public
    # DNS, which ownership and delegation checks ask; unset: the system resolver (/etc/resolv.conf),
    # or, with SVC_TRUST_OWN_ZONES, the managed PowerDNS when svc runs one.
    dns_resolver: str | None = None
    # How often pending hostnames are checked, in seconds.
    hostname_verify_seconds: float = Field(default=60.0, gt=0)
    # Trust svc's own zones as proof of ownership: a zone counts as delegated, and ownership
    # lookups ask the managed PowerDNS. For a local run on a machine with no public DNS (`make run`
    # sets it); unsafe on a shared server, where any org could claim any name (docs/dns.md).
    trust_own_zones: bool = False

    # --- billing (adapters/billing: Polar, docs/billing.md) ---
    # "off" (plans from `svc admin plan`), "polar" (Polar's API) or "fake" (svc runs a fake Polar
    # itself, for development).
    billing: Literal["off", "polar", "fake"] = "off"
    # Polar's webhook secret; with fake, made for the run when unset.
    billing_webhook_secret: SecretStr | None = None
    # How the secret keys the HMAC: "standard" (Standard Webhooks: `whsec_` + base64, the decoded
    # bytes), "polar" (the whole secret's UTF-8 bytes) or "either" (kit/webhook_signatures.py).
    billing_webhook_secret_form: Literal["standard", "polar", "either"] = "either"
    # Polar's sandbox instead of production.
    billing_sandbox: bool = False
    # How long svc waits for the provider before answering 502 billing_unavailable, in seconds.
    billing_timeout_seconds: float = Field(default=8.0, gt=0, le=60)
    # An organization access token of Polar's.
    polar_access_token: SecretStr | None = None
    # Polar's API at another address than Polar's own (a proxy, or a fake Polar run apart from svc,
    # as the crash tests run one so that it outlives a kill -9 of svc).
    polar_api_url: str | None = None
    # The product that is the pro plan.
    polar_product_id: str | None = None
    # A one-time product for AI credit, its price set per purchase (docs/ai.md): without it, buying
    # credit answers 501 billing_off.
    polar_credit_product_id: str | None = None

    # --- the AI upstreams (adapters/ai, docs/ai.md) ---
    # The frontier lane's upstream: any OpenAI-compatible API's base URL (https://api.openai.com/v1,
    # OpenRouter, a vLLM or Ollama server); a lane without URL and key answers 503 ai_unavailable.
    ai_frontier_url: str | None = None
    # The frontier lane's upstream's key.
    ai_frontier_key: SecretStr | None = None
    # The value lane's upstream's base URL.
    ai_value_url: str | None = None
    # The value lane's upstream's key.
    ai_value_key: SecretStr | None = None
    # How long svc waits for an upstream's answer, in seconds.
    ai_timeout_seconds: float = Field(default=120.0, gt=0, le=600)
    # Development: svc runs a fake OpenAI-compatible upstream itself (its model echoes the last
    # message, a token a word) for each lane without a URL, so env.ai works with no provider.
    ai_fake: bool = False
    # Plans: env.ai calls a minute of an org on the free plan.
    free_ai_calls_per_minute: int = Field(default=20, ge=1)
    # Plans: env.ai calls a minute of an org on the pro plan.
    pro_ai_calls_per_minute: int = Field(default=600, ge=1)

    # --- the registrar (adapters/registrar, docs/domains.md) ---
    # "off" (buying and checking answer 503 registrar_not_configured), "fake" (svc runs a fake
    # registrar itself, for development; or, with SVC_REGISTRAR_URL, talks to one already running)
    # or "dnsimple" (DNSimple's API v2 with SVC_REGISTRAR_TOKEN and SVC_DNSIMPLE_ACCOUNT_ID).
    registrar: Literal["off", "fake", "dnsimple"] = "off"
    # A fake registrar already running (with fake).
    registrar_url: str | None = None
    # The registrar's API token.
    registrar_token: SecretStr | None = None
    # DNSimple's sandbox instead of production.
    registrar_sandbox: bool = False
    # How long svc waits for the registrar, in seconds.
    registrar_timeout_seconds: float = Field(default=15.0, gt=0, le=120)
    # DNSimple's account the domains are bought in.
    dnsimple_account_id: str | None = None

    # --- git hosting (adapters/git, docs/repos.md) ---
    # Repositories under SVC_DATA_DIR/git, served by the git CLI; off (or git not installed): the
    # repository routes answer 503 git_unavailable.
    git_enabled: bool = True
    # The git SSH server's port (0: none, git over HTTPS only).
    ssh_port: int = Field(default=0, ge=0, le=65535)
    # The address the git SSH server binds.
    ssh_host: str = "127.0.0.1"
    # The host named in sshUrl (default: SVC_PUBLIC_URL's host).
    ssh_public_host: str | None = None
    # What one push may send (git's receive.maxInputSize: git stops reading past it), in bytes.
    repo_max_push_bytes: int = Field(default=512 * 1024**2, ge=1)
    # Plans: what an org's repositories on the free plan may hold on disk, in bytes.
    free_repo_storage_bytes: int = Field(default=1024**3, ge=0)
    # Plans: what an org's repositories on the pro plan may hold on disk, in bytes.
    pro_repo_storage_bytes: int = Field(default=25 * 1024**3, ge=0)

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

    def certificate_issuer(self) -> Literal["acme", "local"] | None:
        """Who signs svc's certificates (SVC_TLS_ISSUER, else acme when a directory is set); None: nobody."""
        if self.tls_issuer is not None:
            return self.tls_issuer
        return "acme" if self.acme_directory_url else None

    def edge_scheme(self) -> str:
        """How people reach project hosts: SVC_EDGE_PUBLIC_SCHEME, else https when the edge serves it
        (a TLS port and an issuer; over ACME, an app domain a public CA can prove), else http."""
        if self.edge_public_scheme is not None:
            return self.edge_public_scheme
        issuer = self.certificate_issuer()
        domain = self.app_domain.strip(".").lower()
        provable = "." in domain and domain != "localhost" and not domain.endswith(".localhost")
        on = self.edge_tls_port is not None and (issuer == "local" or (issuer == "acme" and provable))
        return "https" if on else "http"

    def edge_url(self, host: str) -> str:
        """The address people use for a project host, e.g. http://web-alice.localhost:8081 (https and
        the TLS port once the edge serves https)."""
        scheme = self.edge_scheme()
        port = self.edge_public_port
        if port is None:
            port = self.edge_tls_port if scheme == "https" and self.edge_tls_port is not None else self.edge_port
        default = 443 if scheme == "https" else 80
        return f"{scheme}://{host}" + ("" if port == default else f":{port}")

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
