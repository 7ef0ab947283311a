"""The database node (port.py): the PostgreSQL cluster of the projects' databases, on an
administrator's URL (postgres.py) or a private cluster svc runs itself (process.py)."""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass
from urllib.parse import urlsplit

from svc.adapters.database.port import DatabaseEndpoint, DatabaseNode, DatabaseNodeError
from svc.adapters.database.postgres import PostgresNode
from svc.adapters.database.process import PrivateCluster, find_postgres
from svc.adapters.database.settings import ProjectDbSettings
from svc.settings import Config
from svc.supervisor import PortInUse, ProcessError

__all__ = ["DatabasePlan", "PrivateNode", "RunningDatabase", "database_plan", "start_database"]

log = logging.getLogger("svc.database")

INSTALL_HINT = "install PostgreSQL's server (`make setup`: Debian's postgresql), or set SVC_PROJECT_DB_ADMIN_URL"


@dataclass(frozen=True)
class DatabasePlan:
    mode: str  # "external", "private" or "off"
    summary: str  # the banner's words


def database_plan(config: Config) -> DatabasePlan:
    settings = config.settings_of(ProjectDbSettings)
    if not settings.project_db_enabled:
        return DatabasePlan("off", "off (SVC_PROJECT_DB_ENABLED=false): projects get no database")
    if settings.project_db_admin_url:
        parts = urlsplit(settings.project_db_admin_url)
        return DatabasePlan("external", f"PostgreSQL at {parts.hostname}:{parts.port or 5432} "
                                        "(SVC_PROJECT_DB_ADMIN_URL)")
    binary = find_postgres()
    if binary is None:
        return DatabasePlan("off", f"OFF - PostgreSQL's server was not found, so projects get no database. "
                                   f"To give them one, {INSTALL_HINT}.")
    where = settings.private_cluster_dir(config.settings.data_dir)
    return DatabasePlan("private", f"a private PostgreSQL cluster ({binary}) in {where}, "
                                   "started with the first project database")


def _node(config: Config, admin_url: str, description: str) -> PostgresNode:
    settings = config.settings_of(ProjectDbSettings)
    return PostgresNode(admin_url, svc_connections=settings.project_db_svc_connections, description=description)


class PrivateNode(PostgresNode):
    """The node on svc's private cluster, started when it is first needed: at svc's start when
    it was initialised before (projects hold databases on it), else at the first database a
    project asks for (a svc whose projects have none runs no PostgreSQL and makes no cluster)."""

    def __init__(self, settings: ProjectDbSettings, cluster: PrivateCluster) -> None:
        super().__init__("postgresql://", public_host="127.0.0.1", svc_connections=settings.project_db_svc_connections,
                         description=f"a private PostgreSQL cluster in {cluster.layout.root}")
        self.cluster = cluster
        self._started = False
        self._lock = asyncio.Lock()

    @property
    def initialised(self) -> bool:
        return (self.cluster.layout.data / "PG_VERSION").is_file()

    async def ready(self) -> None:
        if self._started:
            return
        async with self._lock:
            if self._started:
                return
            try:
                await self.cluster.start()
            except (PortInUse, ProcessError, OSError) as exc:
                await self.cluster.stop()
                raise DatabaseNodeError(f"the private PostgreSQL cluster did not start: {exc}") from None
            log.info("project databases: a private PostgreSQL cluster on 127.0.0.1:%d", self.cluster.port)
            self.admin_url = self.cluster.admin_url
            self.public_port = self.cluster.port
            self._started = True

    def endpoint(self, project_id: str) -> DatabaseEndpoint:
        if not self._started:
            # The port is chosen at initdb and kept: known before the cluster runs.
            try:
                self.public_port = int(self.cluster.layout.port_file.read_text())
            except (OSError, ValueError):
                raise DatabaseNodeError("no project has a database yet: the private cluster is made with the "
                                        "first") from None
        return super().endpoint(project_id)

    async def close(self) -> None:
        await super().close()
        await self.cluster.stop()


@dataclass
class RunningDatabase:
    """The node, and the private cluster behind it when svc runs one (stopped with svc)."""

    node: DatabaseNode | None
    off: str | None = None

    async def stop(self) -> None:
        if self.node is not None:
            await self.node.close()


async def start_database(config: Config) -> RunningDatabase:
    """The database node: the external cluster's, or a private cluster started now; why not, in
    words, when there is neither (the database routes then answer 503)."""
    settings = config.settings_of(ProjectDbSettings)
    plan = database_plan(config)
    if plan.mode == "off":
        return RunningDatabase(None, off=plan.summary.removeprefix("OFF - "))
    if plan.mode == "external":
        assert settings.project_db_admin_url is not None
        return RunningDatabase(_node(config, settings.project_db_admin_url, plan.summary))
    binary = find_postgres()
    assert binary is not None
    user = settings.project_db_user if os.geteuid() == 0 else None
    where = settings.private_cluster_dir(config.settings.data_dir).resolve()
    # By default, as root: /var/lib/svc/projectdb-..., whose parent is svc's own (made passable).
    own_parent = user is not None and settings.project_db_dir is None
    node = PrivateNode(settings, PrivateCluster(where, binary, user=user,
                                                max_connections=settings.project_db_max_connections,
                                                own_parent=own_parent))
    if node.initialised:
        try:
            await node.ready()
        except DatabaseNodeError as exc:  # logged; tried again when a database is asked for
            log.error("project databases: %s", exc)
    return RunningDatabase(node)
