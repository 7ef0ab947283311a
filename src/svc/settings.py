"""The one typed Settings object. Built once at start (in main or by a test), never at import time."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """The shared SVC_* variables: the foundation every part reads (where svc keeps its files, where
    people reach it, who runs it, the job worker). A component's settings are beside its adapter
    and an area's rules in the area (OwnSettings below); each field's comment is its line in
    docs/settings.md (generated: lint/settings_table.py)."""

    model_config = SettingsConfigDict(env_prefix="SVC_", extra="forbid")

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
    # Signs edge cookies and seals secrets at rest. Unset: generated once into
    # SVC_DATA_DIR/secret.key (0600) on first start and reused.
    secret_key: SecretStr | None = None
    # How often the job worker looks for due jobs when nothing woke it, in seconds.
    job_poll_seconds: float = Field(default=0.5, gt=0)
    # How long a job is held by the process running it; a process that dies lets it go after this.
    job_lease_seconds: float = Field(default=60.0, gt=0)

    @field_validator("public_url")
    @classmethod
    def _strip_slash(cls, v: str) -> str:
        return v.rstrip("/")

    def tmp_dir(self) -> Path:
        """SVC_DATA_DIR/tmp: files being written (uploads, dumps), swept at start when a killed
        process left them."""
        return self.data_dir / "tmp"

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

    def mail_dir(self) -> Path:
        return self.data_dir / "mail"

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


class OwnSettings(BaseSettings):
    """A part's own settings: an area's rules (domains/<area>/settings.py, named in its manifest) or
    a component's (settings.py beside its adapter, named in its component.py). SVC_* variables too,
    read once when svc starts (svc.running) and checked then: a bad value stops `svc serve` with one
    line naming the variable. The shared Settings above are the ones every part may read."""

    model_config = SettingsConfigDict(env_prefix="SVC_", extra="forbid")


class BadSettings(ValueError):
    """Settings that cannot be read as given, every class's refusals together (so `svc serve` names
    every wrong variable at once, not the first class's)."""

    def __init__(self, refused: list[ValidationError]) -> None:
        super().__init__("; ".join(str(e) for e in refused))
        self.refused = refused

    def errors(self) -> list[Any]:
        return [error for refusal in self.refused for error in refusal.errors()]


class AreaSettings(OwnSettings):
    """An area's own rules (domains/<area>/settings.py)."""


class ComponentSettings(OwnSettings):
    """A component's own settings (settings.py beside its adapter): how the adapter is built and
    what it starts."""


Own = TypeVar("Own", bound=OwnSettings)


@dataclass(frozen=True)
class Config:
    """What svc runs with: the shared settings and each part's own, by class (read at start; a part
    a test left out is read from the environment at its first use, as `svc serve` would)."""

    settings: Settings
    own: dict[type[OwnSettings], OwnSettings] = field(default_factory=dict)

    def updated(self, **values: object) -> Config:
        """A copy with `values` (by field name, as SVC_* names them) set where each is defined: the
        shared settings or a part's own (svc serve's options, a test's). Checked as at start."""
        parts: list[BaseSettings] = [self.settings, *self.own.values()]
        own = dict(self.own)
        shared = self.settings
        for part in parts:
            given = {name: values.pop(name) for name in list(values) if name in type(part).model_fields}
            if not given:
                continue
            if isinstance(part, Settings):
                shared = Settings.model_validate(part.model_dump() | given)
            elif isinstance(part, OwnSettings):
                own[type(part)] = type(part).model_validate(part.model_dump() | given)
        if values:
            raise TypeError(f"no settings class defines {', '.join(sorted(values))}")
        return Config(shared, own)

    def settings_of(self, kind: type[Own]) -> Own:
        return own_settings(self.own, kind)


def own_settings(own: dict[type[OwnSettings], OwnSettings], kind: type[Own]) -> Own:
    """`kind` of the parts' own settings read at start (one a test left out: read from the
    environment now, as `svc serve` would have)."""
    found = own.get(kind)
    if found is None:
        found = own[kind] = kind()
    if not isinstance(found, kind):
        raise TypeError(f"{kind.__name__} was given a {type(found).__name__}")
    return found
