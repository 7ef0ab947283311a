from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from svc import models
from svc.adapters.edge.settings import edge_url
from svc.domains.notifications.schemas import Notification
from svc.domains.orgs.schemas import User as UserView
from svc.kit.api import ApiInput, ApiModel, Timestamp
from svc.kit.names import ProjectName
from svc.settings import Config


class GitInfo(ApiModel):
    """Display-only provenance from the X-Svc-Git-* headers; never used for authorization."""

    commit: str | None = None
    message: str | None = None
    branch: str | None = None
    dirty: bool | None = None


class WorkerInfo(ApiModel):
    """The deployment's worker (docs/workers.md): its entry module under worker/, the workerd
    compatibility date it runs under, and whether files or the worker answer first."""

    main: str
    compatibility_date: str
    assets: str


class Deployment(ApiModel):
    id: str
    version: int
    digest: str
    created_at: Timestamp
    uploader: str | None
    live: bool
    git: GitInfo
    size_bytes: int
    file_count: int
    # None for a static site.
    worker: WorkerInfo | None = None

    @classmethod
    def of(cls, row: models.Deployment, *, live_id: str | None, uploader: str | None) -> Deployment:
        return cls(id=row.id, version=row.version, digest=row.digest, created_at=row.created_at, uploader=uploader,
                   live=row.id == live_id,
                   git=GitInfo(commit=row.git_commit, message=row.git_message, branch=row.git_branch,
                               dirty=row.git_dirty),
                   size_bytes=row.size_bytes, file_count=row.file_count,
                   worker=WorkerInfo.model_validate(row.worker) if row.worker else None)


class ProjectCreate(ApiInput):
    name: ProjectName


class ProjectDelete(ApiInput):
    # Equality with the path's name is a rule no schema can state: said in words, checked by the service.
    confirm: Annotated[str, StringConstraints(max_length=200)] = Field(
        description="The project's name, typed again exactly; anything else: 400")


class Project(ApiModel):
    id: str
    name: str
    org: str
    hostname: str
    url: str
    created_at: Timestamp

    @classmethod
    def of(cls, project: models.Project, org: models.Org, host: str, config: Config) -> Project:
        url = edge_url(config, host)
        return cls(id=project.id, name=project.name, org=org.slug, hostname=host, url=url,
                   created_at=project.created_at)


class ProjectList(ApiModel):
    projects: list[Project]


class ProjectDetail(Project):
    live_deployment: Deployment | None
    hostnames: list[str]
    access_mode: str
    state: str


class Serving(ApiModel):
    deployment: Deployment
    uploader: UserView | None


class Resource(ApiModel):
    declared: bool
    provisioned: bool


class ProjectOverview(ApiModel):
    project: ProjectDetail
    serving: Serving | None
    recent_deployments: list[Deployment]
    last_backup: None = None
    resources: dict[str, Resource]
    notifications: list[Notification]
