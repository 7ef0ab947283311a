"""HTTP only: a project's logs (its worker's output and exceptions), newest last."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from fastapi import Query

from svc.auth.projects import ProjectViewer
from svc.deps import Uow, api_router
from svc.domains.workers import schemas, service

router = api_router(tags=["logs"])

SINCE = r"^[1-9][0-9]{0,5}[smhd]$"
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def parse_since(value: str | None) -> timedelta | None:
    """"10m", "2h", "7d" (the query's pattern, SINCE, has checked it) -> a timedelta; None for None."""
    if value is None:
        return None
    return timedelta(**{_UNITS[value[-1]]: int(value[:-1])})


@router.get("/v1/orgs/{orgSlug}/projects/{projectName}/logs", response_model=schemas.LogPage,
            operation_id="listLogs")
async def list_logs(
    p: ProjectViewer, uow: Uow,
    cursor: Annotated[int | None, Query(ge=0, le=2**62, description="nextCursor of an earlier answer: the lines "
                                                                     "stored after it (`svc logs --follow`)")] = None,
    since: Annotated[str | None, Query(pattern=SINCE, description="only lines this recent: 30s, 10m, 2h, 7d")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    request: Annotated[str | None, Query(pattern=schemas.REQUEST_ID, description=(
        "only the lines of one request (the edge's and its worker's): its whole id, or the end of it that "
        "`svc logs` and the Logs tab show (what follows a dash in the id)"))] = None,
) -> schemas.LogPage:
    return await service.project_logs(uow, p.project, after=cursor, since=parse_since(since), limit=limit,
                                      request=request)


@router.get("/v1/orgs/{orgSlug}/projects/{projectName}/traffic", response_model=schemas.Traffic,
            operation_id="getTraffic")
async def get_traffic(p: ProjectViewer, uow: Uow,
                      hours: Annotated[int, Query(ge=1, le=24 * 30, description="how far back")] = 24,
                      ) -> schemas.Traffic:
    return await service.traffic(uow, p.project, hours=hours)
