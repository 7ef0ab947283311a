"""The domains area: names bought through the registrar or imported (docs/domains.md)."""

from __future__ import annotations

from pathlib import Path

from svc.domains.domain_names import jobs, kinds, pages, router
from svc.manifest import Area, NavLink, OrgHolding
from svc.models import Domain
from svc.web.dashboard import Place

AREA = Area(
    name="domain_names",
    routers=(router.router,),
    pages=(pages.router,),
    templates=Path(__file__).parent / "templates",
    nav=(NavLink(Place.org, "Domain names", "/domains", order=22),),
    jobs=jobs.register, job_kinds=kinds.DomainJob,
    holdings=(OrgHolding("domains", Domain, Domain.name),),
    hints={"registrar_not_configured": "The operator of this svc sets SVC_REGISTRAR (docs/domains.md); a domain "
                                       "registered elsewhere can be imported meanwhile.",
           "saga_incomplete": "Send the same request again: the purchase continues where it stopped, and is charged "
                              "once."},
)
