"""The one typed Settings object. Built once at start (in main or by a test), never at import time."""

from __future__ import annotations

from pathlib import Path

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

    invite_days: int = 7
    pending_invite_cap: int = 50
    free_project_limit: int = 3
    pro_project_limit: int = 100

    @field_validator("public_url")
    @classmethod
    def _strip_slash(cls, v: str) -> str:
        return v.rstrip("/")

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
