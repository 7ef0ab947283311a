from __future__ import annotations

from typing import Annotated

from pydantic import Field

from svc import models
from svc.kit.api import ApiInput, ApiModel, Timestamp

# Versions are PostgreSQL integers.
MAX_VERSION = 2**31 - 1


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


class DeploymentList(ApiModel):
    deployments: list[Deployment]
    # Pass as `cursor` for the next (older) page; null at the end.
    next_cursor: str | None = None


class RollbackRequest(ApiInput):
    version: Annotated[int, Field(ge=1, le=MAX_VERSION)]
