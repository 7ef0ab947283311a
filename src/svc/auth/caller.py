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
    # A personal access token's limits (principal.py enforces them): the one project it may act on
    # (and that project's org, which never changes), and whether it may only read.
    project_id: str | None = None
    project_org_id: str | None = None
    read_only: bool = False


@dataclass(frozen=True)
class Resolved:
    principal: Principal
    # With an org slug: the org, when it exists and the caller is a member, and the role there.
    org: Org | None = None
    role: str | None = None
