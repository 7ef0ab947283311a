from __future__ import annotations

from pydantic import Field

from svc.kit.api import ApiModel, Timestamp


class CertificateView(ApiModel):
    """The certificate a hostname is served with over https."""

    status: str = Field(description="issuing, active (served) or failed (last_error says why)")
    not_after: Timestamp | None = Field(description="When it expires; null before the first is issued")
    issuer: str | None
    last_error: str | None = Field(description="Why the last order failed, in words; null when it did not")
