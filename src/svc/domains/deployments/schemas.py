from __future__ import annotations

from typing import Annotated

from pydantic import Field

from svc.kit.api import ApiInput, ApiModel, Timestamp

# Versions are PostgreSQL integers.
MAX_VERSION = 2**31 - 1


class GitInfo(ApiModel):
    """Display-only provenance from the X-Svc-Git-* headers; never used for authorization."""

    commit: str | None = None
    message: str | None = None
    branch: str | None = None
    dirty: bool | None = None


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


class DeploymentList(ApiModel):
    deployments: list[Deployment]
    # Pass as `before` for the next (older) page; null at the end.
    next_cursor: str | None = None


class RollbackRequest(ApiInput):
    version: Annotated[int, Field(ge=1, le=MAX_VERSION)]
