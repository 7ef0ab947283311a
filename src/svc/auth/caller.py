"""Who is calling, as values: the principal a credential resolves to and, for an org-scoped
request, the org and the caller's role there. principal.py resolves them (from the store or the
credential cache, cache.py); both import this, and neither the other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from svc.models import Org, User


@dataclass(frozen=True)
class Principal:
    user: User
    kind: Literal["session", "pat"]
    credential_id: str


@dataclass(frozen=True)
class Resolved:
    principal: Principal
    # With an org slug: the org, when it exists and the caller is a member, and the role there.
    org: Org | None = None
    role: str | None = None
