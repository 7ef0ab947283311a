"""HTTP only: projects."""

from __future__ import annotations

from svc.auth.projects import ProjectAdmin, ProjectViewer
from svc.auth.roles import MemberAccess, ViewerAccess
from svc.deps import Ctx, Uow, api_router
from svc.domains.operations.schemas import OperationStarted
from svc.domains.projects import schemas, service

router = api_router(tags=["projects"])


@router.get("/v1/orgs/{orgSlug}/projects", response_model=schemas.ProjectList, operation_id="listProjects")
async def list_projects(access: ViewerAccess, uow: Uow, ctx: Ctx) -> schemas.ProjectList:
    return schemas.ProjectList(projects=await service.list_projects(uow, access.org, ctx.config))


@router.post("/v1/orgs/{orgSlug}/projects", status_code=201, response_model=schemas.Project,
             operation_id="createProject")
async def create_project(body: schemas.ProjectCreate, access: MemberAccess, uow: Uow,
                         ctx: Ctx) -> schemas.Project:
    return await service.create_project(uow, access, body.name, ctx.config)


@router.get("/v1/orgs/{orgSlug}/projects/{projectName}", response_model=schemas.ProjectDetail,
            operation_id="getProject")
async def get_project(p: ProjectViewer, uow: Uow, ctx: Ctx) -> schemas.ProjectDetail:
    return await service.project_detail(uow, p.project, p.access.org, ctx.config)


@router.get("/v1/orgs/{orgSlug}/projects/{projectName}/overview", response_model=schemas.ProjectOverview,
            operation_id="getProjectOverview")
async def get_overview(p: ProjectViewer, uow: Uow, ctx: Ctx) -> schemas.ProjectOverview:
    return await service.overview(uow, p.project, p.access.org, ctx.config)


@router.delete("/v1/orgs/{orgSlug}/projects/{projectName}", status_code=202,
               response_model=OperationStarted, operation_id="deleteProject")
async def delete_project(body: schemas.ProjectDelete, p: ProjectAdmin, uow: Uow) -> OperationStarted:
    op = await service.start_teardown(uow, p.access, p.project, body.confirm)
    return OperationStarted(operation_id=op.id)
