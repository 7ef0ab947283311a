"""svc (both stores) with its worker, driving the shared real PowerDNS, and asking that PowerDNS
for ownership checks (SVC_DNS_RESOLVER): a record set through the DNS API is what the check sees."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from sqlalchemy import select

from svc.app import default_adapters
from svc.models import AuditEvent
from svc.settings import Settings
from tests.support import wait
from tests.support.api import Svc, running_svc
from tests.support.config import configured
from tests.support.pdns import Pdns, clear_zones
from tests.support.team import Team, make_team

ORIGIN = "edge.localhost."  # the fallback origin: edge.<app_domain>. (app_domain "localhost")


@pytest.fixture
def host_settings(dns_settings: Settings, pdns: Pdns) -> Settings:
    return configured(dns_settings, dns_resolver=f"{pdns.host}:{pdns.port}")


@pytest.fixture
async def hsvc(host_settings: Settings, pdns: Pdns) -> AsyncIterator[Svc]:
    await clear_zones(pdns)
    adapters = default_adapters(host_settings)
    adapters.nameserver = pdns.nameserver
    async with running_svc(host_settings, adapters) as running:
        yield running


async def team(svc: Svc) -> Team:
    """acme with project web; eve's org "other" with project site."""
    return await make_team(svc, project="web", other_project="site")


async def until(check: Callable[[], Awaitable[Any]], what: str) -> Any:
    """Poll `check` until it returns something truthy (tests/support/wait.py's bound); returns that."""
    return await wait.until(check, what=what)


async def audit(svc: Svc, prefix: str = "hostname.") -> list[tuple[str, str | None, dict[str, Any]]]:
    async with svc.ctx.db.transaction(write=False) as s:
        rows = (await s.scalars(select(AuditEvent).where(AuditEvent.action.like(prefix + "%"))
                                .order_by(AuditEvent.at))).all()
        return [(r.action, r.target, dict(r.data or {})) for r in rows]
