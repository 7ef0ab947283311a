"""The dns area: zones and record sets on svc's own nameserver (PowerDNS), DNSSEC. The example to
copy when adding an area (docs/architecture.md)."""

from __future__ import annotations

from pathlib import Path

from svc.domains.dns import jobs, kinds, pages, router
from svc.domains.dns.settings import DnsSettings
from svc.manifest import Area, NavLink, OrgHolding
from svc.models import Zone
from svc.web.dashboard import Place

AREA = Area(
    name="dns",
    settings=DnsSettings,
    routers=(router.router,),
    pages=(pages.router,),
    templates=Path(__file__).parent / "templates",
    nav=(NavLink(Place.org, "DNS", "/dns", order=20),),
    hints={
        "dns_not_configured": "The operator of this svc turns DNS on by installing PowerDNS (pdns-server and "
                              "pdns-backend-sqlite3) on the server, or with SVC_PDNS_API_URL and SVC_PDNS_API_KEY.",
    },
    jobs=jobs.register, job_kinds=kinds.DnsJob,
    holdings=(OrgHolding("zones", Zone, Zone.name),),
)
