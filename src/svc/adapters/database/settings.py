"""The projects' databases' settings: the PostgreSQL cluster they live on (docs/database.md)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from pydantic import Field

from svc.settings import ComponentSettings


class ProjectDbSettings(ComponentSettings):
    # Projects may be given a PostgreSQL database; false: none is.
    project_db_enabled: bool = True
    # An administrator's URL of the cluster they live on (postgresql://user:password@host:port/db);
    # unset: a private cluster `svc serve` runs under SVC_DATA_DIR/projectdb when PostgreSQL is installed.
    project_db_admin_url: str | None = None
    # The private cluster's max_connections (a project's own bounds come from its plan).
    project_db_max_connections: int = Field(default=200, ge=20, le=10000)
    # The connections svc keeps for itself (its administrator's pool, dumps and restores) that no
    # project's ceiling may take.
    project_db_svc_connections: int = Field(default=10, ge=4, le=1000)
    # Who the private cluster runs as when svc runs as root (PostgreSQL refuses root).
    project_db_user: str = "postgres"
    # Where the private cluster lives: SVC_DATA_DIR/projectdb, or, when svc runs as root, a
    # directory of /var/lib/svc named by the data dir (svc keeps SVC_DATA_DIR its own, 0700, and
    # the postgres user must pass through every directory above its cluster).
    project_db_dir: Path | None = None

    def private_cluster_dir(self, data_dir: Path) -> Path:
        if self.project_db_dir is not None:
            return self.project_db_dir
        if os.geteuid() != 0:
            return data_dir / "projectdb"
        digest = hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:16]
        return Path("/var/lib/svc") / f"projectdb-{digest}"
