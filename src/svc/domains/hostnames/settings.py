"""The custom hostnames area's own rules."""

from __future__ import annotations

import re

from pydantic import field_validator

from svc.settings import AreaSettings


class HostnameSettings(AreaSettings):
    # The name a custom hostname's CNAME points to (absolute, lowercase; unset: "edge.<app_domain>.").
    fallback_origin: str | None = None

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

    def fallback_origin_name(self, app_domain: str) -> str:
        """SVC_FALLBACK_ORIGIN, else edge.<app_domain>. (absolute, lowercase)."""
        return self.fallback_origin or f"edge.{app_domain.strip().lower().rstrip('.')}."
