"""The AI pages: a project's (its grant, its caps, what it spent, how its worker calls env.ai) and
the org's credit (the balance, spend by day and by project, the ledger, buying credit through the
billing provider's checkout, and auto top-up). Back from the checkout, the credit card polls until
the payment's webhook has raised the balance: the returning browser is no proof."""

from __future__ import annotations

from typing import Any

from fastapi import Request, Response

from svc.auth.roles import OrgAccess, at_least
from svc.deps import Uow
from svc.domains.ai import service, topups
from svc.errors import BadRequest
from svc.kit import money
from svc.models import Role
from svc.uow import UnitOfWork, runs
from svc.web import render
from svc.web.deps import OrgAdmin, OrgMember, ProjectAdmin, ProjectMember, ProjectViewer
from svc.web.forms import fields
from svc.web.routing import page_router

router = page_router()

PROJECT = "/orgs/{orgSlug}/projects/{projectName}/ai"
CREDIT = "/orgs/{orgSlug}/ai"
POLL_SECONDS = 1
LEDGER_ROWS = 50


def _project_url(p: Any) -> str:
    return f"/orgs/{p.access.org.slug}/projects/{p.project.name}/ai"


def _credit_url(access: OrgAccess) -> str:
    return f"/orgs/{access.org.slug}/ai"


@router.get(PROJECT)
async def project_page(request: Request, p: ProjectViewer, uow: Uow) -> Response:
    status = await service.status(uow, p.access.org, p.project)
    return await render.render(request, "ai/project.html", title=f"{p.project.name}: AI", project=p.project.name,
                               ai=status, declared=p.project.manifest.get("ai") is True,
                               member=at_least(p.access.role, Role.member),
                               admin=at_least(p.access.role, Role.admin), page_url=_project_url(p),
                               credit_url=_credit_url(p.access), dollars=money.dollars,
                               models=service.models(uow).models)


@router.post(PROJECT)
@runs(service.grant)
async def grant(request: Request, p: ProjectMember, uow: Uow) -> Response:
    await service.grant(uow, p.access, p.project)
    return render.redirect(request, _project_url(p), flash="AI granted: the worker has env.ai on its next request.")


@router.post(PROJECT + "/revoke")
@runs(service.revoke)
async def revoke(request: Request, p: ProjectAdmin, uow: Uow) -> Response:
    await service.revoke(uow, p.access, p.project)
    return render.redirect(request, _project_url(p), flash="AI revoked: the worker no longer has env.ai.")


async def _card(uow: UnitOfWork, access: OrgAccess, after: int | None) -> dict[str, Any]:
    credit = await service.credit(uow, access.org)
    row = await service.credit_row(uow, access.org)
    spent = await service.spent_today(uow, access.org)
    waiting = after is not None and not await service.topped_up_since(uow, access.org, after)
    return {"credit": credit, "spent24h": spent, "url": _credit_url(access), "waiting": waiting, "after": after,
            "poll_seconds": POLL_SECONDS, "stopped": row.autotopup_stopped if row else None,
            "dollars": money.dollars}


# The spend chart: a bar a day, stacked by project (the five that spent most, then the rest).
CHART_HEIGHT, BAR, GAP, LABELS = 160, 28, 10, 34
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#7f7f7f")


def _chart(usage: service.Usage) -> dict[str, Any]:
    """The chart's geometry, drawn as SVG by the template (no script): the tables below it hold the
    same figures for a screen reader."""
    top = [name for name, _ in usage.projects[:5]]
    keys = top + (["other projects"] if len(usage.projects) > 5 else [])
    colour = {name: COLOURS[i % len(COLOURS)] for i, name in enumerate(keys)}
    bars = []
    for i, (day, total) in enumerate(usage.days):
        x, y, segments = i * (BAR + GAP), float(CHART_HEIGHT), []
        parts: dict[str, int] = {}
        for name, spent in usage.by_day.get(day, {}).items():
            key = name if name in top else "other projects"
            parts[key] = parts.get(key, 0) + spent
        for name in keys:
            spent = parts.get(name, 0)
            if not spent or not usage.most:
                continue
            height = max(1.0, CHART_HEIGHT * spent / usage.most)
            y -= height
            segments.append({"x": x, "y": round(y, 2), "height": round(height, 2), "fill": colour[name],
                             "title": f"{day}, {name}: {money.dollars(spent)}"})
        bars.append({"x": x, "label": day[5:], "segments": segments, "total": money.dollars(total)})
    return {"bars": bars, "width": len(usage.days) * (BAR + GAP) - GAP, "height": CHART_HEIGHT + LABELS,
            "base": CHART_HEIGHT, "bar": BAR, "legend": [(name, colour[name]) for name in keys]}


def _after(request: Request) -> int | None:
    value = request.query_params.get("after", "")
    return int(value) if value.isdigit() else None


@router.get(CREDIT)
async def credit_page(request: Request, access: OrgMember, uow: Uow) -> Response:
    card = await _card(uow, access, _after(request))
    page = await service.ledger(uow, access.org, limit=LEDGER_ROWS, before=None)
    usage = await service.usage(uow, access.org)
    return await render.render(request, "ai/credit.html", title="AI credit", card=card, ledger=page, usage=usage,
                               chart=_chart(usage),
                               admin=access.role == Role.admin, tiers=topups.tiers(), dollars=money.dollars,
                               billing=uow.ctx.adapters.billing is not None and uow.ctx.adapters.billing.sells_credit)


@router.get(CREDIT + "/card")
async def credit_card(request: Request, access: OrgMember, uow: Uow) -> Response:
    return await render.render_part(request, "ai/_card.html", card=await _card(uow, access, _after(request)))


@router.post(CREDIT + "/checkout")
@runs(topups.checkout)
async def buy(request: Request, access: OrgAdmin, uow: Uow) -> Response:
    typed = (await fields(request)).get("microCents", "")
    if not typed.isdigit():
        raise BadRequest("Choose an amount to buy")
    last = await service.last_ledger_id(uow, access.org)
    back = f"{uow.ctx.settings.public_url}{_credit_url(access)}?after={last}"
    url = await topups.checkout(uow, access, int(typed), back)
    if render.is_htmx(request):
        return Response(status_code=200, headers={"HX-Redirect": url})
    return await render.render(request, "ai/away.html", title="AI credit", url=url)


@router.post(CREDIT + "/autotopup")
@runs(topups.set_autotopup)
async def autotopup(request: Request, access: OrgAdmin, uow: Uow) -> Response:
    form = await fields(request)
    enabled = form.get("enabled") == "on"
    threshold = amount = None
    if enabled:
        try:
            threshold = money.parse_dollars(form.get("threshold", ""))
        except ValueError:
            raise BadRequest("Top up below: an amount in dollars, such as 2 or 2.50") from None
        amount = int(form["amount"]) if form.get("amount", "").isdigit() else None
    row = await topups.set_autotopup(uow, access, enabled, threshold, amount)
    said = (f"Auto top-up is on: {money.dollars(row.autotopup_amount_micro_cents or 0)} when the balance falls "
            f"below {money.dollars(row.autotopup_threshold_micro_cents or 0)}." if row.autotopup_enabled
            else "Auto top-up is off.")
    return render.redirect(request, _credit_url(access), flash=said)
