"""Domains: a project's hostnames (docs/hostnames.md). The default hostname (always active, a link
to the site at the edge) and the custom ones with their state; for each pending one, the records
that prove ownership (a TXT at _svc-verify.<host>, or a CNAME to the fallback origin) to copy, what
the last check saw, "Check now", and a live status: the card polls itself every 2 s while pending
and turns Active in place once a check proves the name. Members add and remove custom hostnames
(removing asks first; the default hostname cannot be removed); viewers look.

The routes call domains/hostnames/service.py as the API's do, with the same role rule and the same
request model (HostnameAdd). A refused name is said next to the field, with what was typed kept
(web/forms.py `refusal`).

The poll sends what the card shows (`seen`): nothing changed, the answer is 204 and htmx swaps
nothing, so a card someone is reading, selecting or tabbing through is not replaced under them."""

from __future__ import annotations

import hashlib
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import Path, Query, Request, Response
from fastapi.responses import RedirectResponse

from svc.adapters.edge.settings import edge_url
from svc.auth.projects import ProjectAccess
from svc.deps import Ctx, Uow
from svc.domains.hostnames import errors, schemas, service
from svc.errors import AppError
from svc.kit.hosts import unicode_spelling
from svc.models import HostnameStatus, Role
from svc.settings import Config
from svc.uow import UnitOfWork, runs
from svc.web import render
from svc.web.deps import ProjectMember, ProjectViewer
from svc.web.forms import fields, parse, refusal, refused
from svc.web.routing import page_router

router = page_router()

HOSTNAMES = "/orgs/{orgSlug}/projects/{projectName}/hostnames"
HOST = HOSTNAMES + "/{host}"
# The API's path bound; the rules of a name are the service's.
HostPath = Annotated[str, Path(alias="host", max_length=300)]
SeenQuery = Annotated[str, Query(max_length=40)]

STATUS_WORDS = {HostnameStatus.active.value: "Active", HostnameStatus.pending_dns.value: "Waiting for DNS"}
# How often a pending card asks for its state (the background check runs once a minute; "Check now"
# and a record in the org's own zone are quicker, and the card should show them within seconds).
POLL_SECONDS = 2


# --- what a card shows ---

def _page_url(p: ProjectAccess) -> str:
    return f"/orgs/{p.access.org.slug}/projects/{p.project.name}/hostnames"


def _host_url(p: ProjectAccess, host: str) -> str:
    return f"{_page_url(p)}/{quote(host, safe='')}"


def _seen(h: schemas.Hostname) -> str:
    """What a card shows that can change: its state, the last check's words and its certificate's
    state (its status first, in clear: the poll tells a card that has just turned active)."""
    cert = h.certificate
    shown = f"{h.status}\n{h.last_error or ''}\n{cert.status if cert else ''}\n{cert.last_error if cert else ''}"
    return f"{h.status}.{hashlib.sha256(shown.encode()).hexdigest()[:16]}"


def _https(h: schemas.Hostname) -> dict[str, Any] | None:
    """The card's https line: the certificate it is served with, or being ordered, or why not."""
    cert = h.certificate
    if cert is None:
        return None
    return {"status": cert.status, "not_after": cert.not_after, "issuer": cert.issuer, "last_error": cert.last_error}


def _card(p: ProjectAccess, config: Config, h: schemas.Hostname) -> dict[str, Any]:
    pending = h.status == HostnameStatus.pending_dns.value
    return {"host": h.host, "unicode": unicode_spelling(h.host), "kind": h.kind, "status": h.status,
            "status_words": STATUS_WORDS.get(h.status, h.status), "pending": pending,
            "is_default": h.kind == "default", "last_error": h.last_error, "verification": h.verification,
            "cname_target": h.cname_target, "edge_url": edge_url(config, h.host),
            "key": render.element_id("host", h.host), "url": _host_url(p, h.host), "seen": _seen(h),
            "https": _https(h),
            # Polls itself while ownership is unproven or its certificate is being ordered.
            "polling": pending or (h.certificate is not None and h.certificate.status == "issuing")}


def _values(p: ProjectAccess, config: Config) -> dict[str, Any]:
    return {"project": p.project.name, "page_url": _page_url(p), "role": p.access.role.value,
            "can_edit": p.access.role in (Role.member, Role.admin), "poll_seconds": POLL_SECONDS}


async def _cards(p: ProjectAccess, uow: UnitOfWork, config: Config) -> list[dict[str, Any]]:
    listed = await service.list_hostnames(uow, p.project)
    return [_card(p, config, h) for h in listed.hostnames]


async def _page(request: Request, p: ProjectAccess, uow: UnitOfWork, config: Config, *, status: int = 200,
                **extra: Any) -> Response:
    return await render.render(request, "hostnames/page.html", status=status, title=f"{p.project.name}: domains",
                               cards=await _cards(p, uow, config), **_values(p, config), **extra)


# --- the page ---

@router.get(HOSTNAMES)
async def hostnames_page(request: Request, p: ProjectViewer, uow: Uow, ctx: Ctx) -> Response:
    return await _page(request, p, uow, ctx.config)


@router.get(HOST + "/status")
async def hostname_status(request: Request, p: ProjectViewer, uow: Uow, ctx: Ctx, host: HostPath,
                          seen: SeenQuery = "") -> Response:
    """A pending card polling itself: 204 while what it shows is still true, else the card as it
    is now (without the poll once active)."""
    if not render.is_htmx(request):
        return RedirectResponse(_page_url(p), status_code=303)
    card = next((c for c in await _cards(p, uow, ctx.config) if c["host"] == host), None)
    if card is None:  # removed meanwhile (another tab, the CLI): the card goes, and the page says so
        return await render.render_part(request, "hostnames/_gone.html", host=host)
    if card["seen"] == seen:
        return Response(status_code=204, headers=render.HEADERS)
    return await render.render_part(request, "hostnames/_card.html", h=card,
                                    turned=not card["pending"] and seen.startswith("pending_dns."),
                                    **_values(p, ctx.config))


# --- changes ---

@router.post(HOSTNAMES)
@runs(service.add_hostname)
async def add_hostname(request: Request, p: ProjectMember, uow: Uow, ctx: Ctx) -> Response:
    typed = (await fields(request)).get("name", "")
    try:
        body = parse(schemas.HostnameAdd, {"name": typed})
        # No savepoint: the use case refuses before it writes anything (it reads, asks the public
        # DNS for a contested name, and only then writes).
        added = await service.add_hostname(uow, p.access, p.project, body.name)
    except AppError as err:
        # A refused name said next to the field, a taken one too (with what to do next).
        problem = refusal(request, err, fields={"name": "Hostname"}, at={errors.HostnameTaken.code: "name"})

        async def show(reading: UnitOfWork) -> Response:
            if render.is_htmx(request):
                return await render.render_part(request, "hostnames/_add.html", status=problem.status, typed=typed,
                                                refusal=problem, **_values(p, ctx.config))
            return await _page(request, p, reading, ctx.config, status=problem.status, typed=typed,
                               refusal=problem)
        return refused(problem, show)
    said = (f"{added.host} is active: the edge serves the project there." if added.status == "active" else
            f"{added.host} added. Create one of the records shown for it; the page follows the check by itself.")
    return render.redirect(request, _page_url(p), flash=said)


@router.post(HOST + "/verify")
@runs(service.verify_hostname)
async def verify_hostname(request: Request, p: ProjectMember, uow: Uow, ctx: Ctx, host: HostPath) -> Response:
    checked = await service.verify_hostname(uow, p.project, host)
    card = _card(p, ctx.config, checked)
    if render.is_htmx(request):  # the card again (not the form's result box), saying what this check saw
        return await render.render_part(request, "hostnames/_card.html", h=card, checked=True,
                                        turned=not card["pending"], **_values(p, ctx.config),
                                        headers={"HX-Retarget": f"#{card['key']}", "HX-Reswap": "outerHTML"})
    said = (f"{checked.host} is active: the edge serves the project there." if not card["pending"]
            else f"Checked {checked.host}: {checked.last_error or 'not proven yet'}.")
    return render.redirect(request, _page_url(p), flash=said)


@router.post(HOST + "/delete")
async def remove_hostname(request: Request, p: ProjectMember, uow: Uow, host: HostPath) -> Response:
    await service.delete_hostname(uow, p.access, p.project, host)
    return render.redirect(request, _page_url(p),
                           flash=f"{host} removed: the edge no longer serves the project there.")
