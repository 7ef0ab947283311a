"""The billing area: an org's plan, driven by the billing provider's webhooks (docs/billing.md)."""

from __future__ import annotations

from pathlib import Path

from svc.domains.billing import admin, jobs, kinds, pages, router
from svc.domains.billing.settings import BillingSettings
from svc.manifest import Area, NavLink
from svc.web.dashboard import Place

AREA = Area(
    name="billing",
    admin=admin.commands,
    routers=(router.router,),
    pages=(pages.router,),
    templates=Path(__file__).parent / "templates",
    nav=(NavLink(Place.org, "Billing", "/billing", order=60),
         NavLink(Place.operator, "Billing inbox", "/operator/billing", order=10)),
    jobs=jobs.register, job_kinds=kinds.BillingJob,
    settings=BillingSettings,
    hints={"billing_off": "The operator of this svc sets the plans (svc admin plan), or turns billing on with "
                          "SVC_BILLING (docs/billing.md)."},
)
