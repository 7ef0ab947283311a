"""An org's domains in the dashboard: the list, a search with prices, import; the purchase (the
price, the contact, where the registrar's email goes, then the saga's steps live while it runs);
a domain's page with its history and the registrar's actions (renew, lock, auto-renew, auth code,
sync).

The purchase runs in the POST (the API's use case, step by step); the buy page's steps element
polls the domain's history meanwhile, so each step shows as it is written."""

from __future__ import annotations

import secrets
from typing import Annotated, Any

from fastapi import Path, Query, Request, Response

from svc.auth.roles import OrgAccess
from svc.deps import Ctx, Uow
from svc.domains.domain_names import errors, saga, schemas, service
from svc.domains.domain_names.names import domain_name
from svc.models import DomainStatus, Role
from svc.uow import Tx, UnitOfWork, runs, unit_of_work
from svc.web import render
from svc.web.deps import OrgAdmin, OrgMember, OrgViewer
from svc.web.forms import fields, parse
from svc.web.routing import page_router

router = page_router()

DOMAINS = "/orgs/{orgSlug}/domains"
ONE = DOMAINS + "/{name}"
NamePath = Annotated[str, Path(max_length=260)]
POLL_SECONDS = 1
CONTACT_FIELDS = ("name", "email", "phone", "street", "city", "postal_code", "country")


def _list_url(access: OrgAccess) -> str:
    return f"/orgs/{access.org.slug}/domains"


def _url(access: OrgAccess, name: str) -> str:
    return f"{_list_url(access)}/{name}"


async def _list_page(request: Request, access: OrgAccess, uow: UnitOfWork, ctx: Ctx, *, results: Any = None,
                     q: str = "") -> Response:
    listed = await service.list_domains(uow, access)
    return await render.render(request, "domain_names/domains.html", title="Domain names", domains=listed.domains,
                               results=results, q=q, is_admin=access.role == Role.admin,
                               can_search=access.role != Role.viewer,
                               registrar_off=ctx.adapters.off.get("registrar") if ctx.adapters.registrar is None
                               else None)


@router.get(DOMAINS)
async def domains_page(request: Request, access: OrgViewer, uow: Uow, ctx: Ctx) -> Response:
    return await _list_page(request, access, uow, ctx)


@router.post(DOMAINS + "/search")
@runs(service.check)
async def search(request: Request, access: OrgMember, uow: Uow, ctx: Ctx) -> Response:
    typed = (await fields(request)).get("names", "")
    names = [n for n in typed.replace(",", " ").split() if n]
    body = parse(schemas.CheckRequest, {"names": names})
    results = await service.check(uow, access, body.names)
    if render.is_htmx(request):
        return await render.render_part(request, "domain_names/_results.html", results=results.results,
                                        org=access.org, is_admin=access.role == Role.admin)
    return await _list_page(request, access, uow, ctx, results=results.results, q=typed)


@router.post(DOMAINS + "/import")
@runs(service.import_domain)
async def import_domain(request: Request, access: OrgAdmin, uow: Uow) -> Response:
    body = parse(schemas.ImportRequest, {"name": (await fields(request)).get("name", "")})
    domain, created = await service.import_domain(uow, access, body.name)
    said = (f"{domain.name} imported: point its nameservers at {', '.join(domain.nameservers)} at its registrar."
            if created else f"{domain.name} was imported already.")
    return render.redirect(request, _url(access, domain.name), flash=said)


@router.get(DOMAINS + "/buy")
@runs(service.check)
async def buy_page(request: Request, access: OrgAdmin, uow: Uow,
                   name: Annotated[str, Query(max_length=260)] = "") -> Response:
    wanted = domain_name(name)
    quote = (await service.check(uow, access, [wanted])).results[0]
    return await render.render(request, "domain_names/buy.html", title=f"Buy {wanted}", quote=quote,
                               poll_seconds=POLL_SECONDS, steps=[], done=False)


@router.post(DOMAINS + "/buy")
@runs(saga.purchase)
async def buy(request: Request, access: OrgAdmin, uow: Uow) -> Response:
    form = await fields(request)
    # The form's field names are the API's, in snake case: postal_code is postalCode there.
    contact = {("postalCode" if key == "postal_code" else key): form.get(key, "") for key in CONTACT_FIELDS}
    body = parse(schemas.PurchaseRequest, {"name": form.get("domain", ""), "years": form.get("years") or 1,
                                           "contact": contact})
    domain, _ = await saga.purchase(uow, access, body)
    return render.redirect(request, _url(access, domain.name),
                           flash=f"{domain.name} is yours. {domain.notice or ''}".strip())


@router.get(ONE + "/steps")
async def steps(request: Request, access: OrgViewer, uow: Uow, name: NamePath) -> Response:
    """The purchase's history so far (polled by the buy page while its POST runs)."""
    try:
        shown = await service.detail(uow, access, name)
    except errors.DomainNotFound:
        return await render.render_part(request, "domain_names/_steps.html", steps=[], done=False, org=access.org,
                                        name=name, poll_seconds=POLL_SECONDS)
    return await render.render_part(request, "domain_names/_steps.html", steps=list(reversed(shown.history)),
                                     done=shown.status == DomainStatus.active, org=access.org, name=shown.name,
                                     poll_seconds=POLL_SECONDS)


async def _domain_page(request: Request, access: OrgAccess, uow: UnitOfWork, name: str, **extra: Any) -> Response:
    shown = await service.detail(uow, access, name)
    return await render.render(request, "domain_names/domain.html", title=shown.name, domain=shown,
                               is_admin=access.role == Role.admin, can_sync=access.role != Role.viewer,
                               purchased=shown.source == "purchase", stays_on=service.AUTO_RENEW_STAYS_ON,
                               # Names this page's renewal: a form sent twice (a double click, a resend
                               # after a dropped answer) renews and charges once, as the API's Idempotency-Key.
                               renew_key=secrets.token_urlsafe(16), **extra)


@router.get(ONE)
async def domain_page(request: Request, access: OrgViewer, uow: Uow, name: NamePath) -> Response:
    return await _domain_page(request, access, uow, name)


@router.post(ONE + "/renew")
@runs(service.renew)
async def renew(request: Request, access: OrgAdmin, uow: Uow, name: NamePath) -> Response:
    sent = await fields(request)
    body = parse(schemas.RenewRequest, {"years": sent.get("years", "")})
    key = (sent.get("request_key") or "").strip()[:200] or None
    done, _ = await service.renew(uow, access, name, body.years, request_key=key)
    until = done.expires_at.date().isoformat() if done.expires_at else "unknown"
    return render.redirect(request, _url(access, done.name), flash=f"{done.name} renewed: until {until}.")


@router.post(ONE + "/lock")
@runs(service.set_lock)
async def lock(request: Request, access: OrgAdmin, uow: Uow, name: NamePath) -> Response:
    locked = (await fields(request)).get("locked") == "true"
    done = await service.set_lock(uow, access, name, locked)
    said = "Transfer lock on." if done.locked else "Transfer lock off: the domain can be transferred away."
    return render.redirect(request, _url(access, done.name), flash=said)


@router.post(ONE + "/auto-renew")
@runs(service.set_auto_renew)
async def auto_renew(request: Request, access: OrgAdmin, uow: Uow, name: NamePath) -> Response:
    enabled = (await fields(request)).get("enabled") == "true"
    done = await service.set_auto_renew(uow, access, name, enabled)
    return render.redirect(request, _url(access, done.name),
                           flash=f"Auto-renew {'on' if done.auto_renew else 'off'}. {done.notice}")


@router.post(ONE + "/auth-code")
@runs(service.auth_code)
async def auth_code(request: Request, access: OrgAdmin, uow: Uow, name: NamePath) -> Response:
    """Shown in this answer only: never in a flash, a log or a URL."""
    code = await service.auth_code(uow, access, name)
    if render.is_htmx(request):
        return await render.render_part(request, "domain_names/_code.html", code=code.code)
    async with unit_of_work(uow.ctx, Tx.READ) as shown:
        return await _domain_page(request, access, shown, name, code=code.code)


@router.post(ONE + "/sync")
@runs(service.sync)
async def sync(request: Request, access: OrgMember, uow: Uow, name: NamePath) -> Response:
    done = await service.sync(uow, access, name)
    return render.redirect(request, _url(access, done.name), flash=f"{done.name} read back from the registrar: "
                                                                   f"{done.status}.")
