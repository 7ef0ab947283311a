"""Deployment rows -> the public Deployment schema (shared by the deployments and projects areas)."""

from __future__ import annotations

from svc.domains.deployments.schemas import Deployment, GitInfo
from svc.models import Deployment as DeploymentRow


def deployment_view(row: DeploymentRow, *, live_id: str | None, uploader: str | None) -> Deployment:
    return Deployment(
        id=row.id, version=row.version, digest=row.digest, created_at=row.created_at, uploader=uploader,
        live=row.id == live_id,
        git=GitInfo(commit=row.git_commit, message=row.git_message, branch=row.git_branch, dirty=row.git_dirty),
        size_bytes=row.size_bytes, file_count=row.file_count)
