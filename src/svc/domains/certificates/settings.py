"""The certificates area's own settings."""

from __future__ import annotations

from pydantic import Field

from svc.settings import AreaSettings


class CertificateSettings(AreaSettings):
    # How often svc compares the certificates it holds with those it should (a new active
    # hostname, a renewal due): SVC_CERTIFICATE_CHECK_SECONDS.
    certificate_check_seconds: float = Field(default=60.0, ge=1.0, le=24 * 3600)
