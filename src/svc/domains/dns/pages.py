"""DNS: an org's zones on svc's nameservers (docs/dns.md). The list with the nameservers to set at
the registrar and "Add zone" (admins); a zone's record sets as an editable table (a row turns into
a form in place, and saving replaces the whole set, as the API's PUT does); DNSSEC (the state, on and
off, the DS records PowerDNS computed to copy to the registrar, the DS recorded at the parent); and
deleting a zone with its name typed (admins).

Roles are the API's: viewers look, members change record sets, admins add and delete zones and
switch DNSSEC. With no nameserver configured the service raises dns_not_configured: the pages then
say so, and how the operator turns DNS on, instead of showing an error.

A refused record set is shown next to the field it concerns ("Line 2 is not a valid A record"),
the dashboard's one way (web/forms.py `refusal`): the form is rendered again, with what was typed,
once the change's unit of work has ended (so the nameserver, asked for the DS records, is never
waited on with the store locked)."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

from fastapi import Path, Query, Request, Response
from fastapi.responses import RedirectResponse

from svc.auth.roles import OrgAccess, at_least
from svc.deps import Ctx, Uow
from svc.domains.dns import errors, records, schemas, service
from svc.errors import AppError, BadRequest
from svc.kit.hosts import unicode_spelling
from svc.models import DnssecState, RegistrarDs, Role
from svc.uow import UnitOfWork, runs
from svc.web import render
from svc.web.deps import OrgAdmin, OrgMember, OrgViewer
from svc.web.forms import RefusedForm, fields, parse, refusable, refusal, refused
from svc.web.routing import page_router

router = page_router()

DNS = "/orgs/{orgSlug}/dns"
ZONE = DNS + "/{zone}"
RRSET = ZONE + "/rrsets/{name}/{type}"

# The API's path bounds; the rules of a name are the service's.
ZonePath = Annotated[str, Path(alias="zone", max_length=300)]
NamePath = Annotated[str, Path(alias="name", max_length=300)]
TypePath = Annotated[str, Path(alias="type", max_length=10)]

# What each DNSSEC state means for the zone's owner (the spec's state table).
DNSSEC_SAID = {
    DnssecState.off: "Off: the nameserver answers without signatures.",
    DnssecState.signing: "Signing: the nameserver signs every answer. Register the DS records below at the "
                         "domain's registrar (the parent zone), then record them here.",
    DnssecState.ds_pending: "DS recorded: once the registrar publishes it in the parent zone, resolvers "
                            "validate this zone's answers. svc does not check the parent zone yet.",
    DnssecState.active: "Active: the parent zone serves the DS and resolvers validate this zone's answers.",
}

# A domain bought through svc: where its DS stands at the registrar, which svc feeds itself.
REGISTRAR_DS_SAID = {
    RegistrarDs.none: "none at the registrar.",
    RegistrarDs.sending: "svc is sending them to the registrar.",
    RegistrarDs.sent: "sent: the registrar holds them; the parent zone does not serve them yet.",
    RegistrarDs.published: "published: the parent zone serves them, and resolvers validate this zone's answers.",
    RegistrarDs.removing: "svc is removing them at the registrar; the zone stays signed meanwhile.",
    RegistrarDs.withdrawn: "removed at the registrar; the zone stays signed until the parent zone stops serving them.",
}
# The states that move by themselves: the DS block polls while the zone is in one, every second
# while the job works, every ten while the parent is waited for (the delegation check's pace).
REGISTRAR_DS_MOVING = frozenset({RegistrarDs.sending, RegistrarDs.sent, RegistrarDs.removing, RegistrarDs.withdrawn})
REGISTRAR_DS_SLOW = frozenset({RegistrarDs.sent, RegistrarDs.withdrawn})

# How the forms name their fields in an error ("records" is the textarea of records, one per line).
# A zone page shows this many record sets at most (a filter by name finds the others).
ROWS_SHOWN = 200
FIELD_WORDS = {"name": "Name", "type": "Type", "ttl": "TTL", "records": "Records", "ds": "DS records",
               "confirm": "Confirmation"}


# --- names and addresses ---

def _bare(zone_name: str) -> str:
    """A zone as people write it: no trailing dot."""
    return zone_name.rstrip(".")


def _zone_url(org_slug: str, zone_name: str) -> str:
    return f"/orgs/{org_slug}/dns/{quote(_bare(zone_name), safe='')}"


def _rrset_url(org_slug: str, zone_name: str, name: str, rtype: str) -> str:
    return f"{_zone_url(org_slug, zone_name)}/rrsets/{quote(name, safe='')}/{quote(rtype, safe='')}"


def _row(org_slug: str, zone_name: str, rrset: schemas.RRset) -> dict[str, Any]:
    return {"name": rrset.name, "type": rrset.type, "ttl": rrset.ttl, "records": rrset.records,
            "managed_by": rrset.managed_by, "key": render.element_id("rr", rrset.name, rrset.type),
            "url": _rrset_url(org_slug, zone_name, rrset.name, rrset.type)}


def _order(row: dict[str, Any]) -> tuple[bool, bool, list[str], str]:
    """The apex first, svc's own sets (SOA, NS) leading it, then names as a tree (parents before
    their children), then by type."""
    return row["name"] != "@", row["managed_by"] is None, list(reversed(row["name"].split("."))), row["type"]


# --- form input ---

def _lines(text: str) -> tuple[list[str], list[int]]:
    """A textarea's non-blank lines, and each one's line number (1-based) for the error messages."""
    kept: list[str] = []
    numbers: list[int] = []
    for number, line in enumerate(text.replace("\r\n", "\n").split("\n"), start=1):
        if line.strip():
            kept.append(line.strip())
            numbers.append(number)
    return kept, numbers


def _ttl(text: str | None) -> int | str | None:
    """Empty: the set's current TTL (or the default). Digits: seconds. Anything else goes to the
    API's model as typed, which refuses it in its own words."""
    if text is None or not text.strip():
        return None
    value = text.strip()
    return int(value) if value.isascii() and value.isdigit() and len(value) < 10 else value


def _again(request: Request, err: AppError, access: OrgAccess, zone: str, *, numbers: dict[str, list[int]],
           part: str, typed: dict[str, Any], refusal_as: str, part_values: dict[str, Any] | None = None,
           page_values: dict[str, Any] | None = None) -> RefusedForm:
    """A refused form again, as the person had it (`typed`), its refusal named `refusal_as` in the
    template: for htmx the form alone (`part`), else the zone page with that form open."""
    if isinstance(err, errors.DnsNotConfigured | errors.ZoneNotFound):
        raise err  # not about the form: the page says so
    problem = refusal(request, err, fields=FIELD_WORDS, lines=numbers)
    shown: dict[str, Any] = {**typed, refusal_as: problem}

    async def show(reading: UnitOfWork) -> Response:
        if render.is_htmx(request):
            return await render.render_part(request, part, status=problem.status, **shown, **(part_values or {}),
                                            **_form_values(access, zone))
        return await _zone_page(request, access, reading, zone, status=problem.status, **shown,
                                **(page_values or {}))
    return refused(problem, show)


# --- what the pages show ---

async def _dns_off(request: Request, ctx: Ctx) -> Response:
    # Why, in the words of `svc serve`'s banner (none when a nameserver is configured but this
    # process does not run the managed PowerDNS).
    return await render.render(request, "dns/off.html", title="DNS", reason=ctx.adapters.off.get("nameserver"))


def _form_values(access: OrgAccess, zone_name: str) -> dict[str, Any]:
    """What the record forms need: where they post, the types and the TTL bounds (the area's own)."""
    return {"zone_url": _zone_url(access.org.slug, zone_name), "zones_url": f"/orgs/{access.org.slug}/dns",
            "role": access.role.value, "can_edit": at_least(access.role, Role.member),
            "is_admin": access.role == Role.admin, "types": list(records.TYPES),
            "default_ttl": records.DEFAULT_TTL, "min_ttl": records.MIN_TTL, "max_ttl": records.MAX_TTL}


def _zone_values(access: OrgAccess, detail: schemas.ZoneDetail, *, q: str = "",
                 editing: tuple[str, str] | None = None) -> dict[str, Any]:
    """The page's values. A large zone shows its first ROWS_SHOWN record sets (and the one being
    edited): a page of 10,000 rows would be megabytes; the name filter finds the others."""
    wanted = q.strip().lower()
    chosen = sorted((_row(access.org.slug, detail.name, r) for r in detail.rrsets
                     if wanted in r.name.lower() or (r.name, r.type) == editing), key=_order)
    rows = chosen[:ROWS_SHOWN]
    state = DnssecState(detail.dnssec)
    at_registrar = RegistrarDs(detail.registrar_ds) if detail.registrar_ds else None
    said = DNSSEC_SAID[state]
    if at_registrar is not None and state is not DnssecState.off:
        said = ("On: the nameserver signs every answer. svc bought this domain, so it sends the DS records to the "
                "registrar itself: nothing to register.")
    elif at_registrar in (RegistrarDs.removing, RegistrarDs.withdrawn):
        said = ("Turning off: svc removes the DS records at the registrar first, and the nameserver signs until the "
                "parent zone no longer serves them.")
    return {**_form_values(access, detail.name), "zone": detail, "zone_bare": _bare(detail.name),
            "zone_unicode": unicode_spelling(detail.name), "rows": rows, "q": q.strip(), "matching": len(chosen),
            "total": len(detail.rrsets), "dnssec_said": said,
            "registrar_ds_said": REGISTRAR_DS_SAID[at_registrar] if at_registrar is not None else None,
            # The DS block polls itself until the nameserver has signed the zone (or can be asked), and
            # while a bought domain's DS moves at the registrar.
            "ds_polling": ((state is not DnssecState.off and not detail.ds_records)
                           or at_registrar in REGISTRAR_DS_MOVING),
            "ds_poll_seconds": 10 if at_registrar in REGISTRAR_DS_SLOW and detail.ds_records else 1}


async def _zone_page(request: Request, access: OrgAccess, uow: UnitOfWork, zone: str, *, status: int = 200,
                     q: str = "", **extra: Any) -> Response:
    detail = await service.zone_detail(uow, access, zone)
    values = {**_zone_values(access, detail, q=q, editing=extra.get("editing")), **extra}
    title = f"{values['zone_bare']}: DNS"
    return await render.render(request, "dns/zone.html", status=status, title=title, **values)


def _find(detail: schemas.ZoneDetail, name: str, rtype: str) -> schemas.RRset:
    found = next((r for r in detail.rrsets if r.name == name and r.type == rtype), None)
    if found is None:
        raise errors.RRsetNotFound(details={"name": name, "type": rtype})
    return found


# --- zones ---

@router.get(DNS)
async def zones_page(request: Request, access: OrgViewer, uow: Uow, ctx: Ctx) -> Response:
    try:
        listed = await service.list_zones(uow, access)
    except errors.DnsNotConfigured:
        return await _dns_off(request, ctx)
    zones = [{"name": _bare(z.name), "unicode": unicode_spelling(z.name), "dnssec": z.dnssec, "delegated": z.delegated,
              "created_at": z.created_at, "url": _zone_url(access.org.slug, z.name)} for z in listed.zones]
    return await render.render(request, "dns/zones.html", title="DNS", zones=zones, role=access.role.value,
                               is_admin=access.role == Role.admin, nameservers=service.nameservers(ctx.config))


@router.post(DNS)
@runs(service.create_zone)
async def add_zone(request: Request, access: OrgAdmin, uow: Uow) -> Response:
    body = parse(schemas.ZoneCreate, {"name": (await fields(request)).get("name", "")})
    detail = await service.create_zone(uow, access, body.name)
    return render.redirect(request, _zone_url(access.org.slug, detail.name),
                           flash=f"Zone {_bare(detail.name)} added. It is served once the domain's registrar "
                                 f"points its nameservers at {', '.join(_bare(n) for n in detail.nameservers)}.")


@router.get(ZONE)
async def zone_page(request: Request, access: OrgViewer, uow: Uow, ctx: Ctx, zone: ZonePath,
                    q: Annotated[str, Query(max_length=253)] = "") -> Response:
    try:
        return await _zone_page(request, access, uow, zone, q=q)
    except errors.DnsNotConfigured:
        return await _dns_off(request, ctx)


@router.post(ZONE + "/delegation")
@runs(service.check_delegation)
async def check_delegation(request: Request, access: OrgMember, uow: Uow, zone: ZonePath) -> Response:
    checked = await service.check_delegation(uow, access, zone)
    said = (f"{_bare(checked.name)} is delegated to svc's nameservers." if checked.delegated else
            f"{_bare(checked.name)} is not delegated to svc's nameservers yet"
            + (f": {checked.delegation_seen}." if checked.delegation_seen else "."))
    return render.redirect(request, _zone_url(access.org.slug, checked.name), flash=said)


@router.post(ZONE + "/delete")
async def delete_zone(request: Request, access: OrgAdmin, uow: Uow, zone: ZonePath) -> Response:
    """The API's DELETE has no confirmation; the page asks for the zone's name typed, as for a project."""
    typed = (await fields(request)).get("confirm", "").strip().rstrip(".").lower()
    shown = zone.strip().rstrip(".").lower()
    if typed != shown:
        raise BadRequest(f"Type the zone's name, {shown}, to confirm", details={"errors": [
            {"field": "confirm", "reason": "value_error", "message": "confirm must equal the zone's name"}]})
    await service.delete_zone(uow, access, zone)
    return render.redirect(request, f"/orgs/{access.org.slug}/dns",
                           flash=f"Zone {shown} deleted: the nameserver no longer answers for it.")


# --- record sets ---

@router.post(ZONE + "/rrsets")
async def add_rrset(request: Request, access: OrgMember, uow: Uow, zone: ZonePath) -> Response:
    """The "Add record" form: PUT semantics (a set that exists is replaced by what is sent)."""
    form = await fields(request)
    typed = {"name": form.get("name", ""), "type": form.get("type", ""), "ttl": form.get("ttl", ""),
             "records": form.get("records", "")}
    lines, numbers = _lines(typed["records"])
    try:
        body = parse(schemas.RRsetPut, {"ttl": _ttl(typed["ttl"]), "records": lines})
        async with refusable(uow):
            saved = await service.put_rrset(uow, access, zone, typed["name"].strip() or "@", typed["type"], body)
    except AppError as err:
        return _again(request, err, access, zone, numbers={"records": numbers}, part="dns/_add.html",
                      typed={"add": typed}, refusal_as="add_refusal")
    count = len(saved.records)
    return render.redirect(request, _zone_url(access.org.slug, zone),
                           flash=f"Saved {saved.name} {saved.type}: {count} {'record' if count == 1 else 'records'}, "
                                 f"TTL {saved.ttl} s. The nameserver answers with it within seconds.")


@router.get(RRSET + "/edit")
async def edit_rrset(request: Request, access: OrgMember, uow: Uow, zone: ZonePath, name: NamePath,
                     rtype: TypePath) -> Response:
    """The row as a form (htmx swaps it in place); without script, the zone page with that row open."""
    detail = await service.zone_detail(uow, access, zone)
    found = _find(detail, name, rtype)
    if found.managed_by is not None:
        raise errors.ManagedRRset(details={"name": name, "type": rtype, "managed_by": found.managed_by})
    row = _row(access.org.slug, detail.name, found)
    edit = {"ttl": str(found.ttl), "records": "\n".join(found.records)}
    if render.is_htmx(request):
        return await render.render_part(request, "dns/_row_edit.html", r=row, edit=edit, focus=True,
                                        **_zone_values(access, detail))
    return await render.render(request, "dns/zone.html", title=f"{_bare(detail.name)}: DNS",
                               editing=(found.name, found.type), edit=edit,
                               **_zone_values(access, detail, editing=(found.name, found.type)))


@router.get(RRSET + "/row")
async def show_rrset(request: Request, access: OrgViewer, uow: Uow, zone: ZonePath, name: NamePath,
                     rtype: TypePath) -> Response:
    """The row as it is (an edit cancelled)."""
    if not render.is_htmx(request):
        return RedirectResponse(_zone_url(access.org.slug, zone), status_code=303)
    detail = await service.zone_detail(uow, access, zone)
    row = _row(access.org.slug, detail.name, _find(detail, name, rtype))
    return await render.render_part(request, "dns/_row.html", r=row, focus=True, **_zone_values(access, detail))


@router.post(RRSET)
async def save_rrset(request: Request, access: OrgMember, uow: Uow, zone: ZonePath, name: NamePath,
                     rtype: TypePath) -> Response:
    """An edited row saved: the set's whole new content (the API's PUT)."""
    form = await fields(request)
    edit = {"ttl": form.get("ttl", ""), "records": form.get("records", "")}
    lines, numbers = _lines(edit["records"])
    try:
        body = parse(schemas.RRsetPut, {"ttl": _ttl(edit["ttl"]), "records": lines})
        async with refusable(uow):
            saved = await service.put_rrset(uow, access, zone, name, rtype, body)
    except AppError as err:
        row = {"name": name, "type": rtype, "key": render.element_id("rr", name, rtype),
               "url": _rrset_url(access.org.slug, zone, name, rtype)}
        return _again(request, err, access, zone, numbers={"records": numbers}, part="dns/_row_edit.html",
                      typed={"edit": edit}, refusal_as="refusal", part_values={"r": row},
                      page_values={"editing": (name, rtype)})
    if render.is_htmx(request):  # the row again, as saved, with the focus back on its Edit link
        return await render.render_part(request, "dns/_row.html", r=_row(access.org.slug, zone, saved), focus=True,
                                        saved=True, **_form_values(access, zone))
    return render.redirect(request, _zone_url(access.org.slug, zone), flash=f"Saved {saved.name} {saved.type}.")


@router.post(RRSET + "/delete")
async def delete_rrset(request: Request, access: OrgMember, uow: Uow, zone: ZonePath, name: NamePath,
                       rtype: TypePath) -> Response:
    await service.delete_rrset(uow, access, zone, name, rtype)
    return render.redirect(request, _zone_url(access.org.slug, zone),
                           flash=f"Deleted {name} {rtype}: the nameserver stops answering with it within seconds.")


# --- DNSSEC ---

@router.get(ZONE + "/dnssec")
async def ds_block(request: Request, access: OrgViewer, uow: Uow, zone: ZonePath) -> Response:
    """The DS block, which polls itself while the nameserver has not signed the zone yet."""
    if not render.is_htmx(request):
        return RedirectResponse(_zone_url(access.org.slug, zone) + "#dnssec", status_code=303)
    detail = await service.zone_detail(uow, access, zone)
    return await render.render_part(request, "dns/_ds.html", **_zone_values(access, detail))


@router.post(ZONE + "/dnssec")
async def set_dnssec(request: Request, access: OrgAdmin, uow: Uow, zone: ZonePath) -> Response:
    wanted = (await fields(request)).get("enabled", "")
    body = parse(schemas.DnssecSet, {"enabled": {"true": True, "false": False}.get(wanted, wanted)})
    changed = await service.set_dnssec(uow, access, zone, body.enabled)
    said = ("DNSSEC on: the nameserver is signing the zone. Register its DS records at the registrar."
            if body.enabled else "DNSSEC off: the nameserver answers without signatures, and the recorded DS "
                                 "records were deleted.")
    if changed.registrar_ds is not None:
        said = ("DNSSEC on: the nameserver is signing the zone, and svc sends its DS records to the registrar itself."
                if body.enabled else "DNSSEC off: svc removes the DS records at the registrar first; the zone stays "
                                     "signed until the parent zone no longer serves them.")
    return render.redirect(request, _zone_url(access.org.slug, changed.name), flash=said)


@router.post(ZONE + "/dnssec/ds")
async def set_ds(request: Request, access: OrgAdmin, uow: Uow, zone: ZonePath) -> Response:
    """The DS records registered at the parent, one per line (none: the zone goes back to signing)."""
    typed = (await fields(request)).get("ds", "")
    lines, numbers = _lines(typed)
    try:
        body = parse(schemas.DsSet, {"ds": lines})
        async with refusable(uow):
            changed = await service.set_ds(uow, access, zone, list(body.ds))
    except AppError as err:
        return _again(request, err, access, zone, numbers={"ds": numbers}, part="dns/_ds_form.html",
                      typed={"ds_typed": typed}, refusal_as="ds_refusal")
    said = (f"DS recorded ({len(changed.ds)}): the zone is DS pending until the parent zone serves it." if changed.ds
            else "No DS recorded: the zone stays signing until you record the DS registered at the parent.")
    return render.redirect(request, _zone_url(access.org.slug, changed.name), flash=said)
