"""End-user auth rules, the control side (spec "End-user auth of a project"; docs/auth.md). Services
flush, never commit.

A grant (a database needed: its end users live there, schema svc_auth, created and migrated here)
starts the auth service on the project's hosts (`/__svc/auth/*`, the edge's part) with settings at
their defaults. The project registers its own OAuth app at each provider it offers; the client
secret is sealed with svc's keyring bound to the project and provider, and never returned. A
revoke keeps everything (the row, its settings and providers, the end users in the project's
database): the edge passes `/__svc/auth/*` to the worker again."""

from __future__ import annotations

from svc.auth.roles import OrgAccess
from svc.context import AppContext
from svc.domains.app_auth import errors, queries, schema, schemas
from svc.domains.audit.service import record
from svc.domains.databases import service as databases
from svc.domains.hostnames import service as hostnames
from svc.domains.projects import service as projects
from svc.kit.clock import utcnow
from svc.kit.store_session import StoreSession
from svc.models import AuthGrant, AuthProvider, AuthProviderName, Project
from svc.uow import Tx, UnitOfWork, use_case

PROVIDERS = tuple(p.value for p in AuthProviderName)


def _seal_context(project_id: str, provider: str) -> str:
    return f"auth/{project_id}/{provider}"


def client_secret(ctx: AppContext, row: AuthProvider) -> str:
    """A provider's client secret, unsealed (for the sign-in's token request only; never logged)."""
    return ctx.keys.unseal(row.sealed_secret, context=_seal_context(row.project_id, row.name)).decode()


def settings_of(grant: AuthGrant | None) -> schemas.AuthSettings:
    if grant is None:
        return schemas.AuthSettings(session_days=schemas.SESSION_DAYS_DEFAULT, brand_name=None, brand_color=None,
                                    logo_url=None)
    return schemas.AuthSettings(session_days=grant.session_days, brand_name=grant.brand_name,
                                brand_color=grant.brand_color, logo_url=grant.logo_url)


async def status(uow: UnitOfWork, project: Project) -> schemas.AuthStatus:
    """Filled without a grant too: the hosts to register callbacks for, and what a revoked grant
    kept (its providers and settings come back with a grant again)."""
    row = await queries.grant(uow.session, project.id, revoked=True)
    granted = row is not None and row.revoked_at is None
    providers = [schemas.AuthProviderView(name=p.name, client_id=p.client_id)
                 for p in await queries.providers(uow.session, project.id)]
    hosts = [h.host for h in (await hostnames.list_hostnames(uow, project)).hostnames]
    return schemas.AuthStatus(granted=granted, configured=granted and bool(providers), providers=providers,
                              hosts=hosts, settings=settings_of(row))


async def has_grant(session: StoreSession, project: Project) -> bool:
    """Whether the project is granted auth (the area's manifest declares it: the Overview)."""
    return await queries.grant(session, project.id) is not None


async def has_database(uow: UnitOfWork, project: Project) -> bool:
    return await databases.database_granted(uow.session, project)


def unavailable(ctx: AppContext) -> str | None:
    """Why this svc cannot grant auth now: it needs the projects' databases."""
    return databases.databases_off(ctx)


@use_case(Tx.READ_THEN_WRITE)  # the project's database is migrated with nothing of the store held
async def grant(uow: UnitOfWork, access: OrgAccess, project: Project) -> schemas.AuthStatus:
    """Idempotent. Each grant migrates the svc_auth schema again (a no-op when it is at the
    latest version; a database restored from before the grant gets it back)."""
    if not await databases.database_granted(uow.session, project):
        raise errors.DatabaseRequired()
    version = await schema.migrate(uow, project.id)
    await uow.close_reads()
    session = await uow.begin_write()
    row = await queries.grant(session, project.id, lock=True, revoked=True)
    if row is None or row.revoked_at is not None:
        if row is None:
            row = AuthGrant(project_id=project.id, session_days=schemas.SESSION_DAYS_DEFAULT, created_at=utcnow())
            session.add(row)
        row.revoked_at = None
        row.granted_by = access.principal.user.id if access.principal.user else None
        row.schema_version = version
        await session.flush()
        await record(session, "auth.grant", actor=access.principal.user, org=access.org, target=project.name)
        await projects.edge_changed(uow, project.id)  # /__svc/auth/* goes to the auth service from now
    else:
        row.schema_version = version
        await session.flush()
    return await status(uow, project)


@use_case(Tx.WRITE)
async def update_settings(uow: UnitOfWork, access: OrgAccess, project: Project,
                          patch: schemas.AuthSettingsPatch) -> schemas.AuthStatus:
    """Only the fields sent change (a brand field sent as null, or an empty name, is cleared)."""
    row = await queries.grant(uow.session, project.id, lock=True)
    if row is None:
        raise errors.NotGranted()
    changed: dict[str, object] = {}
    for field in ("session_days", "brand_name", "brand_color", "logo_url"):
        if field not in patch.model_fields_set:
            continue
        value = getattr(patch, field)
        if field == "brand_name" and value == "":
            value = None
        if field == "brand_color" and value is not None:
            value = value.lower()
        if getattr(row, field) != value:
            setattr(row, field, value)
            changed[schemas.AuthSettings.model_fields[field].alias or field] = value
    if changed:
        await uow.session.flush()
        await record(uow.session, "auth.settings", actor=access.principal.user, org=access.org, target=project.name,
                     data={"changed": changed})
        await projects.edge_changed(uow, project.id)
    return await status(uow, project)


def _provider_name(name: str) -> str:
    if name not in PROVIDERS:
        raise errors.InvalidProvider(f"There is no provider {name[:40]!r}: the providers are {', '.join(PROVIDERS)}",
                                     details={"provider": name[:40], "allowed": list(PROVIDERS)})
    return name


@use_case(Tx.WRITE)
async def set_provider(uow: UnitOfWork, access: OrgAccess, project: Project, name: str,
                       body: schemas.AuthProviderPut) -> schemas.AuthStatus:
    """Set or rotate the project's OAuth app at `name`. The secret is sealed; the audit row holds
    the provider and client id only."""
    name = _provider_name(name)
    client_id = body.client_id.strip()
    secret = body.client_secret
    for field, value in (("clientId", client_id), ("clientSecret", secret.strip())):
        if not value:
            raise errors.InvalidProvider(f"{field} must not be empty", details={"field": field})
    if await queries.grant(uow.session, project.id, lock=True) is None:
        raise errors.NotGranted()
    sealed = uow.ctx.keys.seal(secret.encode(), context=_seal_context(project.id, name))
    row = await queries.provider(uow.session, project.id, name)
    if row is None:
        uow.session.add(AuthProvider(project_id=project.id, name=name, client_id=client_id, sealed_secret=sealed,
                                     updated_at=utcnow()))
    else:
        row.client_id, row.sealed_secret, row.updated_at = client_id, sealed, utcnow()
    await uow.session.flush()
    await record(uow.session, "auth.provider.set", actor=access.principal.user, org=access.org, target=project.name,
                 data={"provider": name, "clientId": client_id})
    await projects.edge_changed(uow, project.id)
    return await status(uow, project)


@use_case(Tx.READ_THEN_WRITE)  # the identities go from the project's database first
async def remove_provider(uow: UnitOfWork, access: OrgAccess, project: Project, name: str) -> None:
    """Idempotent (204 when missing). The end users stay; only their identities at that provider
    are deleted from the project's database (they sign in with another provider, or link again).
    A name that is no provider is missing too: 204, as the spec lists no 400 here."""
    if name not in PROVIDERS or await queries.provider(uow.session, project.id, name) is None:
        return
    if await queries.grant(uow.session, project.id, revoked=True) is not None and \
            await databases.database_granted(uow.session, project):
        await schema.forget_identities(uow, project.id, name)
    await uow.close_reads()
    session = await uow.begin_write()
    if await queries.remove_provider(session, project.id, name):
        await record(session, "auth.provider.delete", actor=access.principal.user, org=access.org,
                     target=project.name, data={"provider": name})
        await projects.edge_changed(uow, project.id)


@use_case(Tx.WRITE)
async def revoke(uow: UnitOfWork, access: OrgAccess, project: Project) -> None:
    """Idempotent (204 when not granted). The end users, the settings and providers are kept."""
    row = await queries.grant(uow.session, project.id, lock=True)
    if row is not None:
        row.revoked_at = utcnow()
        await uow.session.flush()
        await record(uow.session, "auth.revoke", actor=access.principal.user, org=access.org, target=project.name)
        await projects.edge_changed(uow, project.id)  # /__svc/auth/* passes to the worker again


async def subscribers(uow: UnitOfWork, project: Project) -> int | None:
    """How many end users the project has (the dashboard's count), read from its database; None when
    it cannot say now. Call last in a read: it may close the reads."""
    if await queries.grant(uow.session, project.id, revoked=True) is None:
        return None
    return await schema.subscriber_count(uow, project.id)
