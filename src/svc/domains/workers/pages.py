"""The workers area's dashboard: a project's Logs tab (its worker's output and exceptions and the
edge's requests, following new lines every two seconds), and the traffic chart the Overview loads
(requests per minute by status class over the last 24 hours, and the bytes served).

Viewers and up, like the API."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from fastapi import Query, Request, Response

from svc.deps import Uow
from svc.domains.workers import schemas, service
from svc.web import render
from svc.web.deps import ProjectViewer
from svc.web.routing import page_router

router = page_router()

LOGS = "/orgs/{orgSlug}/projects/{projectName}/logs"
PAGE_LINES = 200
FOLLOW_SECONDS = 2
CHART_HEIGHT = 120
CHART_BAR = 6
STATUS_CLASSES = (("s2xx", "2xx"), ("s3xx", "3xx"), ("s4xx", "4xx"), ("s5xx", "5xx"))


def _url(p: ProjectViewer) -> str:
    return f"/orgs/{p.access.org.slug}/projects/{p.project.name}"


# ?request=<id>: one request's lines only (a click on a line's request id), followed as the others.
RequestFilter = Annotated[str | None, Query(alias="request", pattern=schemas.REQUEST_ID)]


@router.get(LOGS)
async def logs_page(request: Request, p: ProjectViewer, uow: Uow, only: RequestFilter = None) -> Response:
    page = await service.project_logs(uow, p.project, after=None, since=timedelta(hours=24), limit=PAGE_LINES,
                                      request=only)
    return await render.render(request, "workers/logs.html", title=f"{p.project.name}: logs", project=p.project.name,
                               org_slug=p.access.org.slug, lines=page.lines, cursor=page.next_cursor, url=_url(p),
                               every=FOLLOW_SECONDS, only=only)


@router.get(LOGS + "/lines")
async def new_lines(request: Request, p: ProjectViewer, uow: Uow,
                    cursor: Annotated[int, Query(ge=0, le=2**62)] = 0, only: RequestFilter = None) -> Response:
    """What came after `cursor` (the poller's htmx request): rows to add, and the poller again."""
    page = await service.project_logs(uow, p.project, after=cursor, since=None, limit=1000, request=only)
    return await render.render_part(request, "workers/_follow.html", lines=page.lines, cursor=page.next_cursor,
                                    url=_url(p), every=FOLLOW_SECONDS, only=only)


@router.get("/orgs/{orgSlug}/projects/{projectName}/traffic-chart")
async def traffic_chart(request: Request, p: ProjectViewer, uow: Uow) -> Response:
    """The Overview's traffic chart (loaded into it by htmx): an SVG, drawn on the server."""
    traffic = await service.traffic(uow, p.project)
    bars, peak = _bars(traffic)
    return await render.render_part(request, "workers/_traffic.html", traffic=traffic, bars=bars,
                                    peak=round(peak, 1))


def _bars(traffic: schemas.Traffic) -> tuple[list[dict[str, object]], float]:
    """Each bucket's stacked bar (its rectangles: class, y, height; the words of its tooltip), and
    the highest rate, in requests per minute, which is the chart's full height."""
    per_minute = [[getattr(b, name) / traffic.minutes_per_bucket for name, _ in STATUS_CLASSES]
                  for b in traffic.buckets]
    peak = max((sum(rates) for rates in per_minute), default=0)
    top = peak or 1
    bars: list[dict[str, object]] = []
    for i, (bucket, rates) in enumerate(zip(traffic.buckets, per_minute, strict=True)):
        y = float(CHART_HEIGHT)
        parts = []
        for (_, label), rate in zip(STATUS_CLASSES, rates, strict=True):
            height = rate / top * CHART_HEIGHT
            if height > 0:
                y -= height
                parts.append({"cls": label, "y": round(y, 2), "height": round(height, 2)})
        total = sum(getattr(bucket, name) for name, _ in STATUS_CLASSES)
        errors = bucket.s5xx
        bars.append({"x": i * CHART_BAR, "parts": parts, "start": bucket.start,
                     "words": f"{total} request{'' if total == 1 else 's'}"
                              + (f", {errors} server error{'' if errors == 1 else 's'}" if errors else "")})
    return bars, peak
