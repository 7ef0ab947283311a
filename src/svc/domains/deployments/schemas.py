from __future__ import annotations

from typing import Annotated

from pydantic import Field

from svc.domains.projects.schemas import Deployment, GitInfo, WorkerInfo
from svc.kit.api import ApiInput, ApiModel

# A deployment's views are the projects area's (a project shows what it serves).
__all__ = ["MAX_VERSION", "Deployment", "DeploymentList", "GitInfo", "RollbackRequest", "WorkerInfo"]

# Versions are PostgreSQL integers.
MAX_VERSION = 2**31 - 1


class DeploymentList(ApiModel):
    deployments: list[Deployment]
    # Pass as `cursor` for the next (older) page; null at the end.
    next_cursor: str | None = None


class RollbackRequest(ApiInput):
    version: Annotated[int, Field(ge=1, le=MAX_VERSION)]
