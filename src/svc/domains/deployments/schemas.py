from __future__ import annotations

from svc.kit.api import ApiModel, Timestamp


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
