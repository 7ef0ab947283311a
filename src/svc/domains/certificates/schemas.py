from __future__ import annotations

from pydantic import Field

from svc.kit.api import ApiModel, Timestamp


class CertificateView(ApiModel):
    """The certificate a hostname is served with over https."""

    status: str = Field(description="issuing, active (served) or failed (last_error says why)")
    not_after: Timestamp | None = Field(description="When it expires; null before the first is issued")
    issuer: str | None
    last_error: str | None = Field(description="Why the last order failed, in words; null when it did not")


class CertificateSummary(CertificateView):
    """A certificate as an operator lists it (svc admin certs): no key, no chain."""

    name: str
    kind: str = Field(description="wildcard (the app domain's), host (a custom hostname's), console "
                                  "(SVC_PUBLIC_URL's) or default (a default hostname's own, from svc's local CA)")
    renew_at: Timestamp | None = Field(description="When svc orders it again (renewal, or a retry after a failure)")
    failures: int = Field(description="Failed orders in a row")
