"""An org's billing page: the plan with its limits and usage, upgrade (the provider's checkout),
the portal, cancel and resume. The plan changes with the provider's webhook only: back from the
checkout, the plan card polls until the webhook has made the org pro.

And the operator's billing page (SVC_OPERATORS): the orgs paying twice (duplicate live
subscriptions), the webhook inbox, a replay per delivery, and a reconcile of one org with the provider."""

from __future__ import annotations

from typing import Any

from fastapi import Request, Response

from svc.auth.roles import OrgAccess
from svc.deps import Uow
from svc.domains.billing import service
from svc.domains.billing.schemas import BillingStatus
from svc.domains.projects import service as projects
from svc.errors import NotFound
from svc.models import Role
from svc.uow import UnitOfWork, runs
from svc.web import render
from svc.web.deps import Operator, OrgAdmin, OrgViewer
from svc.web.forms import fields
from svc.web.routing import page_router

router = page_router()

BILLING = "/orgs/{orgSlug}/billing"
POLL_SECONDS = 1


def _url(access: OrgAccess) -> str:
    return f"/orgs/{access.org.slug}/billing"


async def _card(uow: UnitOfWork, access: OrgAccess, *, waiting: bool) -> dict[str, Any]:
    status: BillingStatus = await service.status(uow, access)
    count = await projects.count_in_org(uow, access.org.id)
    mine = status.limits[status.plan]
    return {"status": status, "projects": count, "limits": mine, "url": _url(access), "org_name": access.org.name,
            "is_admin": access.role == Role.admin,
            # Back from the checkout and still free: the card asks again until the webhook arrives.
            "waiting": waiting and status.plan == "free" and status.enabled, "poll_seconds": POLL_SECONDS}


@router.get(BILLING)
async def billing_page(request: Request, access: OrgViewer, uow: Uow) -> Response:
    card = await _card(uow, access, waiting=request.query_params.get("paid") == "1")
    return await render.render(request, "billing/billing.html", title="Billing", card=card,
                               plans=card["status"].limits)


@router.get(BILLING + "/card")
async def billing_card(request: Request, access: OrgViewer, uow: Uow) -> Response:
    card = await _card(uow, access, waiting=request.query_params.get("paid") == "1")
    return await render.render_part(request, "billing/_card.html", card=card)


@router.post(BILLING + "/checkout")
@runs(service.checkout)
async def upgrade(request: Request, access: OrgAdmin, uow: Uow) -> Response:
    back = f"{uow.ctx.settings.public_url}{_url(access)}?paid=1"
    url = await service.checkout(uow, access, back)
    return await _away_async(request, url, "Continue to the payment")


@router.post(BILLING + "/portal")
@runs(service.portal)
async def portal(request: Request, access: OrgAdmin, uow: Uow) -> Response:
    url = await service.portal(uow, access, f"{uow.ctx.settings.public_url}{_url(access)}")
    return await _away_async(request, url, "Open the billing portal")


async def _away_async(request: Request, url: str, what: str) -> Response:
    """To the provider's page: htmx follows HX-Redirect; without script, a page with the link (a
    form's redirect to another origin is stopped by the page's form-action policy)."""
    if render.is_htmx(request):
        return Response(status_code=200, headers={"HX-Redirect": url})
    return await render.render(request, "billing/away.html", title="Billing", url=url, what=what)


@router.post(BILLING + "/cancel")
@runs(service.cancel)
async def cancel(request: Request, access: OrgAdmin, uow: Uow) -> Response:
    cancel_ = (await fields(request)).get("cancel") == "true"
    status = await service.cancel(uow, access, cancel_)
    end = status.period_end.strftime("%B %-d, %Y") if status.period_end else "the end of the period"
    said = (f"The pro plan ends on {end}; until then nothing changes." if cancel_ else
            f"The pro plan goes on: it renews on {end}.")
    return render.redirect(request, _url(access), flash=said)



OPERATOR = "/operator/billing"


@router.get(OPERATOR)
async def inbox(request: Request, _: Operator, uow: Uow) -> Response:
    outcome = request.query_params.get("outcome")
    rows = await service.inbox(uow, 200, outcome)
    return await render.render(request, "billing/inbox.html", title="Billing inbox", rows=rows,
                               outcome=outcome if outcome in service.OUTCOMES else None,
                               duplicates=await service.duplicates(uow), unsettled=await service.unsettled(uow))


@router.post(OPERATOR + "/reconcile")
@runs(service.reconcile_slug)
async def reconcile(request: Request, _: Operator, uow: Uow) -> Response:
    slug = ((await fields(request)).get("org") or "").strip()
    result = await service.reconcile_slug(uow, slug)
    if result is None:
        raise NotFound(f"No org {slug!r}")
    return render.redirect(request, OPERATOR, flash=result.words())


@router.post(OPERATOR + "/{webhook_id}/replay")
@runs(service.replay)
async def replay(request: Request, webhook_id: str, _: Operator, uow: Uow) -> Response:
    row = await service.replay(uow, webhook_id)
    if row is None:
        raise NotFound(f"No delivery {webhook_id!r} was received")
    return render.redirect(request, OPERATOR, flash=f"{row.webhook_id} ({row.type}): {row.outcome}, {row.detail}")
