"""The email area's own settings: the mail domain projects' addresses are made under, and the
topic the mail provider's notifications must come from."""

from __future__ import annotations

from pydantic import ValidationInfo, field_validator

from svc.kit.hosts import valid_host
from svc.settings import AreaSettings

# What the SPF and DMARC records must start with.
_RECORD_STARTS = {"mail_spf": "v=spf1", "mail_dmarc": "v=DMARC1"}


class EmailSettings(AreaSettings):
    # Projects' addresses are `<project>.<org>.<mail domain>` (any local part). Unset: email cannot
    # be granted (409 email_unavailable). `make run` sets a local one.
    mail_domain: str | None = None
    # The notification topic (an ARN) the provider's bounces, complaints and deliveries come from;
    # unset: /v1/hooks/ses answers 501.
    mail_topic: str | None = None
    # The host the mail domain's MX records name: svc's SMTP server as the world reaches it.
    # Unset: the host of SVC_PUBLIC_URL (docs/email.md "Outbound": the records).
    mail_mx_host: str | None = None
    # The SPF record of the projects' addresses (the envelope sender of their mail): it must name
    # the relay's sending hosts, e.g. "v=spf1 include:amazonses.com ~all" for Amazon SES.
    mail_spf: str = "v=spf1 mx ~all"
    # The DMARC record at _dmarc.<mail domain>.
    mail_dmarc: str = "v=DMARC1; p=none; adkim=r; aspf=r"

    @field_validator("mail_mx_host")
    @classmethod
    def _a_host(cls, value: str | None) -> str | None:
        if not value:
            return None
        host = value.strip().lower().removesuffix(".")
        if not valid_host(host):
            raise ValueError("must be a host name (mx.example.com)")
        return host

    @field_validator("mail_spf", "mail_dmarc")
    @classmethod
    def _a_record_of_its_kind(cls, value: str, info: ValidationInfo) -> str:
        kind = _RECORD_STARTS[str(info.field_name)]
        if not value.startswith(kind):
            raise ValueError(f'must be a record starting with "{kind}"')
        return value

    @field_validator("mail_domain")
    @classmethod
    def _a_domain(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        domain = value.strip().lower().removesuffix(".")
        if not valid_host(domain) or "." not in domain:
            raise ValueError("must be a domain name with at least two labels (mail.example.com)")
        return domain
