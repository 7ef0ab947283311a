"""An org's audit trail (admins), with the same service call and access rule as /v1/orgs/{org}/audit.
The page's filters are the API's query parameters, read through the API's own model, so a filter is
checked by one rule."""

from __future__ import annotations

from urllib.parse import urlencode

from fastapi import Request, Response

from svc.deps import Uow
from svc.domains.audit import schemas as audit_schemas
from svc.domains.audit import service as audit
from svc.web import render
from svc.web.deps import OrgAdmin
from svc.web.forms import parse
from svc.web.routing import page_router

router = page_router()

FILTERS = ("action", "actor")


def _choices(recorded: list[str], chosen: str | None) -> list[tuple[str, str]]:
    """(value, label) for the action filter: each group of recorded events, then each event."""
    groups = sorted({a.split(".", 1)[0] + "." for a in recorded if "." in a})
    choices = [(g, f"{g}* (all {g[:-1]} events)") for g in groups] + [(a, a) for a in recorded]
    if chosen and chosen not in {value for value, _ in choices}:
        choices.append((chosen, chosen))
    return choices


@router.get("/orgs/{orgSlug}/audit")
async def audit_page(request: Request, access: OrgAdmin, uow: Uow) -> Response:
    given = {k: v for k, v in request.query_params.items()
             if k in (*FILTERS, "cursor", "before", "limit") and v != ""}
    query = parse(audit_schemas.AuditQuery, given)
    page = await audit.list_events(uow, access, query)
    # The filters (and page size) stay as pages turn; the page follows nextCursor as `cursor`, as the API.
    kept = {k: v for k, v in given.items() if k not in ("cursor", "before")}
    base = f"/orgs/{access.org.slug}/audit"
    older = f"{base}?{urlencode({**kept, 'cursor': page.next_cursor})}" if page.next_cursor else None
    newest = (f"{base}?{urlencode(kept)}" if kept else base) if query.cursor or query.before else None
    return await render.render(request, "audit/list.html", title="Audit log", events=page.events,
                               query=query, filtered=any(k in given for k in FILTERS), older=older, newest=newest,
                               audit_url=base, default_limit=audit_schemas.DEFAULT_LIMIT,
                               choices=_choices(await audit.recorded_actions(uow, access), query.action))
