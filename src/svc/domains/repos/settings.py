"""The repos area's settings (SVC_REPO_RETENTION_DAYS); the git node's own (SVC_GIT_ENABLED, SVC_SSH_*)
are the foundation's (svc/settings.py), as the node is built with the adapters."""

from __future__ import annotations

from pydantic import Field

from svc.settings import AreaSettings


class RepoSettings(AreaSettings):
    # How long a deleted repository's disk copy is kept (decisions.md: 30 days).
    repo_retention_days: int = Field(default=30, ge=0, le=3650)
