"""The email area's own settings: the mail domain projects' addresses are made under, and the
topic the mail provider's notifications must come from."""

from __future__ import annotations

from pydantic import field_validator

from svc.kit.hosts import valid_host
from svc.settings import AreaSettings


class EmailSettings(AreaSettings):
    # Projects' addresses are `<project>.<org>.<mail domain>` (any local part). Unset: email cannot
    # be granted (409 email_unavailable). `make run` sets a local one.
    mail_domain: str | None = None
    # The notification topic (an ARN) the provider's bounces, complaints and deliveries come from;
    # unset: /v1/hooks/ses answers 501.
    mail_topic: str | None = None

    @field_validator("mail_domain")
    @classmethod
    def _a_domain(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        domain = value.strip().lower().removesuffix(".")
        if not valid_host(domain) or "." not in domain:
            raise ValueError("must be a domain name with at least two labels (mail.example.com)")
        return domain
