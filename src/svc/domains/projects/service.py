"""Project rules: create with the default hostname under the plan's limit, views, teardown start.
Services receive the unit of work and flush; the unit of work commits."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.exc import IntegrityError

from svc.adapters.edge.port import Edge, EdgeChange, Route
from svc.adapters.edge.settings import edge_url
from svc.auth.projects import OperationInFlight, project_by_name
from svc.auth.roles import OrgAccess
from svc.context import AppContext
from svc.domains.audit.service import record
from svc.domains.notifications import service as notifications
from svc.domains.notifications.schemas import Notification as NotificationView
from svc.domains.operations import service as operations
from svc.domains.orgs import service as orgs
from svc.domains.orgs.schemas import User as UserView
from svc.domains.projects import errors, queries, schemas
from svc.kit.clock import utcnow
from svc.kit.ids import new_id
from svc.kit.store_session import StoreSession
from svc.models import (
    AccessMode,
    Deployment,
    Hostname,
    HostnameKind,
    HostnameStatus,
    Operation,
    OperationKind,
    Org,
    Project,
    ProjectState,
    TeardownPhase,
    User,
)
from svc.settings import Config
from svc.uow import Tx, UnitOfWork, unit_of_work

RESOURCES = ("db", "storage", "email", "auth", "ai")


async def route_for_host(uow: UnitOfWork, host: str) -> Route | None:
    """The route of a host svc serves, or None."""
    return await queries.route_for_host(uow.session, host)


class ProjectRoutes:
    """What the edge reads of the projects' routes (the routing table and its generation), each
    read in a unit of work of its own; svc/edge/component.py adds the deployments' sites to make the
    edge's RoutingSource."""

    def __init__(self, ctx: AppContext) -> None:
        self.ctx = ctx

    async def generation(self) -> int:
        async with unit_of_work(self.ctx, Tx.READ) as uow:
            return await queries.edge_generation(uow.session)

    async def routes(self) -> list[Route]:
        async with unit_of_work(self.ctx, Tx.READ) as uow:
            return await queries.routing_table(uow.session)

    async def routes_for(self, project_ids: Collection[str], hosts: Collection[str]) -> list[Route]:
        async with unit_of_work(self.ctx, Tx.READ) as uow:
            return await queries.routing_table(uow.session, project_ids=project_ids, hosts=hosts)


@dataclass(eq=False)
class _EdgeFollows:
    """The after-commit effect of a unit of work's edge changes: this process's edge follows
    their projects."""

    edge: Edge | None
    generation: int = 0
    project_ids: set[str] = field(default_factory=set)

    async def __call__(self) -> None:
        if self.edge is not None:
            await self.edge.follow(EdgeChange(frozenset(self.project_ids), self.generation))


async def edge_changed(uow: UnitOfWork, *project_ids: str) -> None:
    """Call in the unit of work of every change the edge must follow (deploy, rollback, policy,
    hostname, teardown), naming the projects whose hosts it changes (both, for a hostname moving
    between projects). The routing table's counter moves in this transaction (once per unit of
    work), so every svc process's edge follows it on its next poll; this process's edge follows
    these projects once it is committed, before the answer, so a 2xx means "live here"."""
    if not uow.writing:
        raise RuntimeError("edge_changed needs the write transaction (begin_write first)")
    if not project_ids:
        raise ValueError("edge_changed names the projects the change touches")
    follows = uow.gathered("projects.edge_changed", lambda: _EdgeFollows(uow.ctx.edge))
    if not follows.generation:
        follows.generation = await queries.bump_edge_generation(uow.session)
    follows.project_ids.update(project_ids)


async def bindings_changed(uow: UnitOfWork, project_id: str) -> None:
    """Call in the unit of work of every change of what a project's worker finds in its env (a
    secret set or deleted, a resource granted): the worker's key moves, so the runtime loads the
    new env on the next request, with no redeploy and no request failed."""
    await queries.bump_bindings_generation(uow.session, project_id)
    await edge_changed(uow, project_id)


async def project_by_id(session: StoreSession, project_id: str) -> Project | None:
    return await session.get(Project, project_id)


def default_hostname(config: Config, org: Org, name: str) -> str:
    """One DNS label under the app domain, so one wildcard certificate covers every project."""
    return f"{name}-{org.slug}.{config.settings.app_domain}"


MAX_LABEL = 63  # DNS (RFC 1035): the default hostname's first label is `{project}-{org}`


def _more_projects(ctx: AppContext, org: Org) -> str:
    """How an org at its plan's project limit gets more: the upgrade through the billing provider's
    checkout when this svc bills (the CLI's command, the dashboard's Billing page), else the operator."""
    if org.plan == "free" and ctx.adapters.billing is not None:
        return (f"upgrade the org to the pro plan ({orgs.project_limit(ctx.config, 'pro')} projects) through the "
                f"billing provider's checkout: `svc billing upgrade --org {org.slug}`, or the org's Billing page, "
                f"{ctx.settings.public_url.rstrip('/')}/orgs/{org.slug}/billing")
    if org.plan == "free":
        return (f"have the operator of this svc move the org to the pro plan (svc admin plan {org.slug} pro, on the "
                "server) or raise SVC_FREE_PROJECT_LIMIT")
    return "have the operator of this svc raise SVC_PRO_PROJECT_LIMIT"


async def create_project(uow: UnitOfWork, access: OrgAccess, name: str, config: Config) -> schemas.Project:
    session = uow.session
    org = access.org
    if len(name) + 1 + len(org.slug) > MAX_LABEL:
        longest = MAX_LABEL - 1 - len(org.slug)
        raise errors.NameTooLongForHostname(
            f"In {org.slug}, a project name has at most {longest} characters: its default hostname's first "
            f"label, {name}-{org.slug}, must fit DNS's 63", details={"maxLength": longest})
    # Counting under the org's lock is what makes the plan limit hold under concurrent creates.
    await orgs.lock_org(uow, org.id)
    limit = orgs.project_limit(config, org.plan)
    count = await queries.count_in_org(session, org.id)
    if count >= limit:
        raise errors.ProjectLimit(f"The {org.plan} plan allows {limit} projects: delete one, or "
                                  + _more_projects(uow.ctx, org),
                                  details={"limit": limit, "count": count, "plan": org.plan})
    if await project_by_name(session, org.id, name) is not None:
        raise errors.ProjectNameTaken(details={"name": name})
    host = default_hostname(config, org, name)
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
        if await project_by_name(session, org.id, name) is not None:
            raise errors.ProjectNameTaken(details={"name": name}) from None
        raise errors.HostnameTaken(details={"hostname": host}) from None
    if count + 1 == limit:
        await notifications.limit_reached(uow, org, resource="projects", limit=limit, plan=org.plan,
                                          settings=config.settings)
    await edge_changed(uow, project.id)
    return schemas.Project.of(project, org, host, config)


async def list_projects(uow: UnitOfWork, org: Org, config: Config) -> list[schemas.Project]:
    rows = await queries.of_org_with_hosts(uow.session, org.id)
    return [schemas.Project.of(p, org, host, config) for p, host in rows]


@dataclass(frozen=True)
class ProjectSummary:
    """A row of the dashboard's project list: the project, its address and what it serves."""

    name: str
    state: str
    hostname: str
    url: str
    live_version: int | None
    live_since: datetime | None


async def deployment_views(session: StoreSession, rows: list[Deployment], *,
                           live_id: str | None) -> list[schemas.Deployment]:
    """The public view of each deployment row, their uploaders resolved in one query."""
    names = await queries.uploader_subjects(session, rows)
    return [schemas.Deployment.of(r, live_id=live_id, uploader=names.get(r.uploader_id or "")) for r in rows]


async def list_deployments(uow: UnitOfWork, project: Project, *, limit: int,
                           before: int | None) -> tuple[list[schemas.Deployment], str | None]:
    """A page of the project's deployments, newest first, and the cursor of the next one."""
    rows = await queries.deployments_page(uow.session, project.id, limit=limit + 1, before=before)
    more = len(rows) > limit
    rows = rows[:limit]
    page = await deployment_views(uow.session, rows, live_id=project.live_deployment_id)
    return page, (str(rows[-1].version) if more and rows else None)


async def live_deployment(uow: UnitOfWork, project: Project) -> tuple[schemas.Deployment, User | None] | None:
    """The project's live deployment and who uploaded it; None before its first deploy."""
    row = await queries.deployment_by_id(uow.session, project.live_deployment_id)
    if row is None:
        return None
    [view] = await deployment_views(uow.session, [row], live_id=row.id)
    return view, await queries.uploader(uow.session, row)


async def summaries(uow: UnitOfWork, org: Org, config: Config) -> list[ProjectSummary]:
    return [ProjectSummary(name, state, host, edge_url(config, host), version, since)
            for name, state, host, _, version, since in await queries.summaries_of_org(uow.session, org.id)]


async def project_detail(uow: UnitOfWork, project: Project, org: Org, config: Config) -> schemas.ProjectDetail:
    live = await live_deployment(uow, project)
    return await _detail(uow, project, org, config, live[0] if live else None)


async def _detail(uow: UnitOfWork, project: Project, org: Org, config: Config,
                  live: schemas.Deployment | None) -> schemas.ProjectDetail:
    hosts = await queries.hostnames_of(uow.session, project.id)
    default = next((h.host for h in hosts if h.kind == HostnameKind.default), "")
    base = schemas.Project.of(project, org, default, config)
    return schemas.ProjectDetail(**base.model_dump(), live_deployment=live, hostnames=[h.host for h in hosts],
                                 access_mode=project.access_mode, state=project.state)


async def overview(uow: UnitOfWork, project: Project, org: Org, config: Config) -> schemas.ProjectOverview:
    live = await live_deployment(uow, project)
    detail = await _detail(uow, project, org, config, live[0] if live else None)
    recent, _ = await list_deployments(uow, project, limit=5, before=None)
    serving = None
    if live is not None:
        view, uploader = live
        serving = schemas.Serving(deployment=view, uploader=UserView.model_validate(uploader) if uploader else None)
    # Declared: the live bundle's svc.json; provisioned: the grants, as the areas that grant them
    # say (their manifests' `resource`); one no area offers yet is never provisioned.
    declared = project.manifest or {}
    granted = {r.name for r in uow.ctx.resources if await r.granted(uow.session, project)}
    resources = {name: schemas.Resource(declared=declared.get(name) is True, provisioned=name in granted)
                 for name in RESOURCES}
    notes = await notifications.latest(uow, org.id, 5, project=project.name)
    return schemas.ProjectOverview(project=detail, serving=serving, recent_deployments=recent,
                                   resources=resources,
                                   notifications=[NotificationView.model_validate(n) for n in notes])


async def start_teardown(uow: UnitOfWork, access: OrgAccess, project: Project, confirm: str) -> Operation:
    session = uow.session
    if confirm != project.name:
        raise errors.ProjectConfirmMismatch(details={"expected": "the project name"})
    await project_by_name(session, access.org.id, project.name, lock=True)
    if await operations.running_for(uow, project.id) is not None:
        raise OperationInFlight()
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
        raise OperationInFlight() from None
    # Unrouted at once: the edge stops serving the project as soon as it converges.
    project.state = ProjectState.deleting
    await edge_changed(uow, project.id)
    operations.run_teardown(uow, op)
    await record(session, "project.delete", actor=access.principal.user, org=access.org, target=project.name,
                 data={"operation": op.id})
    await session.flush()
    return op


async def delete_project_row(session: StoreSession, project_id: str) -> None:
    """Teardown's last phase: the project and everything keyed to it in the store."""
    await queries.delete_project(session, project_id)


async def count_in_org(uow: UnitOfWork, org_id: str) -> int:
    """How many projects the org has (for plan limits told after a downgrade)."""
    return await queries.count_in_org(uow.session, org_id)
