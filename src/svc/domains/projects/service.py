"""Project rules: create with the default hostname under the plan's limit, views, teardown start.
Services receive the unit of work and flush; the unit of work commits."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sqlalchemy.exc import IntegrityError

from svc.adapters.edge.port import Route
from svc.auth.roles import OrgAccess
from svc.context import AppContext
from svc.domains.audit.service import record
from svc.domains.deployments import queries as deployment_queries
from svc.domains.deployments import service as deployments
from svc.domains.identity.schemas import User as UserView
from svc.domains.notifications import queries as notification_queries
from svc.domains.notifications.schemas import Notification as NotificationView
from svc.domains.notifications.service import limit_reached
from svc.domains.operations import queries as operation_queries
from svc.domains.orgs import holdings
from svc.domains.orgs import queries as org_queries
from svc.domains.orgs.service import project_limit
from svc.domains.projects import errors, queries, schemas
from svc.kit.clock import utcnow
from svc.kit.ids import new_id
from svc.kit.store_session import StoreSession
from svc.models import (
    AccessMode,
    Hostname,
    HostnameKind,
    HostnameStatus,
    JobKind,
    Operation,
    OperationKind,
    Org,
    Project,
    ProjectState,
    TeardownPhase,
)
from svc.settings import Settings
from svc.uow import Tx, UnitOfWork, unit_of_work

RESOURCES = ("db", "storage", "email", "auth", "ai")


async def route_for_host(uow: UnitOfWork, host: str) -> Route | None:
    """The route of a host svc serves, or None."""
    return await queries.route_for_host(uow.session, host)


class EdgeRouting:
    """What the edge reads of the store (svc.adapters.edge.port.RoutingSource), each read in a
    unit of work of its own."""

    def __init__(self, ctx: AppContext) -> None:
        self.ctx = ctx

    async def generation(self) -> int:
        async with unit_of_work(self.ctx, Tx.READ) as uow:
            return await queries.edge_generation(uow.session)

    async def routes(self) -> list[Route]:
        async with unit_of_work(self.ctx, Tx.READ) as uow:
            return await queries.routing_table(uow.session)

    async def site(self, digest: str) -> Path:
        return await deployments.site_of(self.ctx, digest)


def default_hostname(settings: Settings, org: Org, name: str) -> str:
    """One DNS label under the app domain, so one wildcard certificate covers every project."""
    return f"{name}-{org.slug}.{settings.app_domain}"


MAX_LABEL = 63  # DNS (RFC 1035): the default hostname's first label is `{project}-{org}`


async def create_project(uow: UnitOfWork, access: OrgAccess, name: str, settings: Settings) -> schemas.Project:
    session = uow.session
    org = access.org
    if len(name) + 1 + len(org.slug) > MAX_LABEL:
        longest = MAX_LABEL - 1 - len(org.slug)
        raise errors.NameTooLongForHostname(
            f"In {org.slug}, a project name has at most {longest} characters: its default hostname's first "
            f"label, {name}-{org.slug}, must fit DNS's 63", details={"maxLength": longest})
    # Counting under the org's lock is what makes the plan limit hold under concurrent creates.
    await org_queries.lock_org(session, org.id)
    limit = project_limit(settings, org.plan)
    count = await queries.count_in_org(session, org.id)
    if count >= limit:
        raise errors.ProjectLimit(f"The {org.plan} plan allows {limit} projects",
                                  details={"limit": limit, "count": count, "plan": org.plan})
    if await queries.by_name(session, org.id, name) is not None:
        raise errors.ProjectNameTaken(details={"name": name})
    host = default_hostname(settings, org, name)
    if await queries.hostname(session, host) is not None:
        raise errors.HostnameTaken(details={"hostname": host})
    now = utcnow()
    project = Project(id=new_id("prj"), org_id=org.id, name=name, created_at=now,
                      created_by=access.principal.user.id, state=ProjectState.active, access_mode=AccessMode.public,
                      access_generation=1, next_version=1, manifest={})
    try:
        async with session.begin_nested():
            session.add(project)
            await session.flush()
            session.add(Hostname(host=host, project_id=project.id, kind=HostnameKind.default,
                                 status=HostnameStatus.active,
                                 verification_value=None, last_error=None, created_at=now))
            await session.flush()
    except IntegrityError:
        # Lost a race on the name or the hostname with a concurrent create.
        if await queries.by_name(session, org.id, name) is not None:
            raise errors.ProjectNameTaken(details={"name": name}) from None
        raise errors.HostnameTaken(details={"hostname": host}) from None
    if count + 1 == limit:
        await limit_reached(uow, org, resource="projects", limit=limit, plan=org.plan, settings=settings)
    await uow.edge_changed()
    return project_view(project, org, host, settings)


def project_view(project: Project, org: Org, host: str, settings: Settings) -> schemas.Project:
    return schemas.Project(id=project.id, name=project.name, org=org.slug, hostname=host,
                           url=settings.edge_url(host), created_at=project.created_at)


async def list_projects(uow: UnitOfWork, org: Org, settings: Settings) -> list[schemas.Project]:
    return [project_view(p, org, host, settings) for p, host in await queries.of_org_with_hosts(uow.session, org.id)]


@dataclass(frozen=True)
class ProjectSummary:
    """A row of the dashboard's project list: the project, its address and what it serves."""

    name: str
    state: str
    hostname: str
    url: str
    live_version: int | None
    live_since: datetime | None


async def summaries(uow: UnitOfWork, org: Org, settings: Settings) -> list[ProjectSummary]:
    return [ProjectSummary(name, state, host, settings.edge_url(host), version, since)
            for name, state, host, _, version, since in await queries.summaries_of_org(uow.session, org.id)]


async def project_detail(uow: UnitOfWork, project: Project, org: Org, settings: Settings) -> schemas.ProjectDetail:
    session = uow.session
    hosts = await queries.hostnames_of(session, project.id)
    default = next((h.host for h in hosts if h.kind == HostnameKind.default), "")
    base = project_view(project, org, default, settings)
    live = await deployment_queries.by_id(session, project.live_deployment_id)
    live_view = None
    if live is not None:
        [live_view] = await deployments.views(session, [live], live_id=live.id)
    return schemas.ProjectDetail(**base.model_dump(), live_deployment=live_view, hostnames=[h.host for h in hosts],
                                 access_mode=project.access_mode, state=project.state)


async def overview(uow: UnitOfWork, project: Project, org: Org, settings: Settings) -> schemas.ProjectOverview:
    session = uow.session
    detail = await project_detail(uow, project, org, settings)
    recent = await deployment_queries.page(session, project.id, limit=5, before=None)
    recent_views = await deployments.views(session, recent, live_id=project.live_deployment_id)
    serving = None
    if detail.live_deployment is not None:
        live = await deployment_queries.by_id(session, project.live_deployment_id)
        uploader = await deployment_queries.uploader(session, live)
        serving = schemas.Serving(deployment=detail.live_deployment,
                                  uploader=UserView.model_validate(uploader) if uploader else None)
    # Declared: the live bundle's svc.json; provisioned: the grants (none exist before their areas land).
    declared = project.manifest or {}
    resources = {name: schemas.Resource(declared=declared.get(name) is True, provisioned=False)
                 for name in RESOURCES}
    notes = await notification_queries.latest(session, org.id, 5, project=project.name)
    return schemas.ProjectOverview(project=detail, serving=serving, recent_deployments=recent_views,
                                   resources=resources,
                                   notifications=[NotificationView.model_validate(n) for n in notes])


async def start_teardown(uow: UnitOfWork, access: OrgAccess, project: Project, confirm: str) -> Operation:
    session = uow.session
    if confirm != project.name:
        raise errors.ProjectConfirmMismatch(details={"expected": "the project name"})
    await queries.by_name(session, access.org.id, project.name, lock=True)
    if await operation_queries.running_for(session, project.id) is not None:
        raise errors.OperationInFlight()
    now = utcnow()
    op = Operation(id=new_id("op"), org_id=access.org.id, project_id=project.id, project_name=project.name,
                   kind=OperationKind.teardown, phase=TeardownPhase.routing, terminal_code=None, created_at=now,
                   finished_at=None,
                   running_key=project.id)
    try:
        async with session.begin_nested():
            session.add(op)
            await session.flush()
    except IntegrityError:
        raise errors.OperationInFlight() from None
    # Unrouted at once: the edge stops serving the project as soon as it converges.
    project.state = ProjectState.deleting
    await uow.edge_changed()
    uow.enqueue(JobKind.project_teardown, {"operation_id": op.id})
    await record(session, "project.delete", actor=access.principal.user, org=access.org, target=project.name,
                 data={"operation": op.id})
    await session.flush()
    return op


async def delete_project_row(session: StoreSession, project_id: str) -> None:
    """Teardown's last phase: the project and everything keyed to it in the store."""
    await queries.delete_project(session, project_id)


async def _project_holding(session: StoreSession, org_id: str) -> holdings.Holding:
    return holdings.Holding(count=await queries.count_in_org(session, org_id),
                            names=await queries.names_in_org(session, org_id, 5))


holdings.register("projects", _project_holding)
