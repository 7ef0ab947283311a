"""The domains area: names bought through the registrar or imported (docs/domains.md)."""

from __future__ import annotations

from svc.domains.domain_names import jobs, router
from svc.manifest import Area, OrgHolding
from svc.models import Domain

AREA = Area(
    name="domain_names",
    routers=(router.router,),
    jobs=jobs.register,
    holdings=(OrgHolding("domains", Domain, Domain.name),),
    hints={"registrar_not_configured": "The operator of this svc sets SVC_REGISTRAR (docs/domains.md); a domain "
                                       "registered elsewhere can be imported meanwhile.",
           "saga_incomplete": "Send the same request again: the purchase continues where it stopped, and is charged "
                              "once."},
)
