"""HTTP only: the page the edge (nginx) shows browsers on a pending custom hostname. Not for API
clients, so it is left out of the OpenAPI document. The host arrives in X-Svc-Host (set by nginx)."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import Response

from svc.deps import Ctx, Uow, api_router
from svc.domains.hostnames import host_pages, service
from svc.errors import AppError, BadRequest
from svc.kit.hosts import normalize_host
from svc.kit.pages import error_page

router = api_router(include_in_schema=False)


class UnknownHostname(AppError):
    status = 404
    code = "unknown_hostname"
    default_message = "No project is served at this hostname"


@router.get("/v1/edge/pending-host")
async def pending_host(request: Request, uow: Uow, ctx: Ctx) -> Response:
    host = normalize_host(request.headers.get("x-svc-host"))
    if host is None:
        return error_page(request, BadRequest("X-Svc-Host must name the project host"), title="Bad request")
    found = await service.pending_host(uow, host)
    if found is None:
        # Proven (or removed) since the edge last converged: the next convergence serves it as it is.
        return error_page(request, UnknownHostname(), title="Unknown host")
    if "text/html" not in request.headers.get("accept", "").lower():
        return error_page(request, UnknownHostname("This hostname is not served yet: its owner has not proven "
                                                   "control of its DNS"), title="Unknown host")
    return host_pages.pending_page(found, service_name=ctx.settings.service_name)
