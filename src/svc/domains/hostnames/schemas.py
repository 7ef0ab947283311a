"""Request and response bodies of the hostname routes, named as decisions.md spells them."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from svc import models
from svc.domains.certificates.schemas import CertificateView
from svc.kit.api import ApiInput, ApiModel, Timestamp


class HostnameAdd(ApiInput):
    # The 253-character bound of a DNS name is checked on the name as encoded (punycode), with the
    # other shape rules (names.py); max_length only keeps the body's size sane. The document states
    # the shape as the `idn-hostname` format, for clients: names.py decides and words the refusal
    # (it is stricter: two labels or more, no service domain; and takes surrounding whitespace).
    name: Annotated[str, StringConstraints(min_length=1, max_length=1024)] = Field(
        json_schema_extra={"format": "idn-hostname"},
        description="The host name, such as www.example.com: two labels or more, no wildcard, not under "
        "svc's own domains; internationalized names are stored as lowercase punycode (UTS-46, IDNA 2008)")


class Verification(ApiModel):
    type: str = Field(description='"TXT"')
    name: str = Field(description="The record's name: _svc-verify.<host>")
    value: str = Field(description="What the TXT record must hold (this hostname's own token)")


class Hostname(ApiModel):
    host: str = Field(description="Lowercase punycode, no trailing dot")
    kind: str = Field(description="default (issued with the project) or custom")
    status: str = Field(description="pending_dns (ownership not proven yet) or active (routed by the edge)")
    verification: Verification | None = Field(
        description="The TXT record that proves ownership; null for the default hostname")
    cname_target: str | None = Field(
        description="The fallback origin: a CNAME from the host to it also proves ownership and routes "
        "the host to the edge; null for the default hostname")
    last_error: str | None = Field(
        description="What the last ownership check saw, in words; null once active")
    last_checked_at: Timestamp | None = Field(
        description="When ownership was last checked (the minute's cycle, Check now, or the add itself); "
                    "null before the first check and for the default hostname")
    certificate: CertificateView | None = Field(
        default=None, description="The certificate it is served with over https (a default hostname: the app "
                                  "domain's wildcard); null while svc holds none (https off, or not ordered yet)")

    @classmethod
    def of(cls, row: models.Hostname, *, txt_name: str, cname_target: str,
           certificate: CertificateView | None = None) -> Hostname:
        """A hostname as the API shows it; a custom one with the records that prove it (`txt_name`
        holding its verification value, or a CNAME to `cname_target`)."""
        if row.kind == models.HostnameKind.default:
            return cls(host=row.host, kind=row.kind, status=models.HostnameStatus.active, verification=None,
                       cname_target=None, last_error=None, last_checked_at=None, certificate=certificate)
        return cls(host=row.host, kind=row.kind, status=row.status,
                   verification=Verification(type="TXT", name=txt_name, value=row.verification_value or ""),
                   cname_target=cname_target, last_error=row.last_error, last_checked_at=row.checked_at,
                   certificate=certificate)


class HostnameList(ApiModel):
    hostnames: list[Hostname] = Field(description="The default hostname first, then the custom ones by name")
