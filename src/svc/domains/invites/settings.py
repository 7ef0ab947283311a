"""The invites area's settings (SVC_INVITE_DAYS, SVC_PENDING_INVITE_CAP)."""

from __future__ import annotations

from pydantic import Field

from svc.settings import AreaSettings


class InviteSettings(AreaSettings):
    # How long an invite link works (decisions.md: 7 days, single use).
    invite_days: int = Field(default=7, ge=1, le=365)
    # Pending invites an org may have at once (409 too_many_invites beyond).
    pending_invite_cap: int = Field(default=50, ge=1, le=10_000)
