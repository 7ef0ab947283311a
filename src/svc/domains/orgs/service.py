"""Org and member rules. Services flush, never commit; the request's transaction commits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row
from sqlalchemy.exc import IntegrityError

from svc.auth.roles import OrgAccess, OrgNotFound, at_least
from svc.domains.audit.service import record
from svc.domains.orgs import errors, plans, queries
from svc.domains.orgs.schemas import OrgMembership
from svc.errors import Forbidden
from svc.kit.clock import utcnow
from svc.kit.ids import new_id
from svc.kit.store_session import StoreSession
from svc.models import Membership, Org, Plan, Role, User
from svc.settings import Config
from svc.uow import UnitOfWork


def project_limit(config: Config, plan: str) -> int:
    return plans.limits(config, plan).projects


# What each plan allows (plans.py), for the areas with a limit.
limits_of = plans.limits
every_plan = plans.every


def membership_view(org: Org, role: str, config: Config) -> OrgMembership:
    """How a member sees an org: with their role and the limit its plan sets."""
    return OrgMembership.of(org, role, project_limit(config, org.plan))


async def memberships_of(uow: UnitOfWork, user: User, config: Config) -> list[OrgMembership]:
    session = uow.session
    return [membership_view(org, role, config) for org, role in await queries.memberships_of(session, user.id)]


async def _insert_org(session: StoreSession, *, slug: str, name: str, creator: User, personal: bool) -> Org:
    now = utcnow()
    org = Org(id=new_id("org"), slug=slug, name=name, personal=personal, plan=Plan.free, created_at=now)
    async with session.begin_nested():
        session.add(org)
        await session.flush()
    session.add(Membership(org_id=org.id, user_id=creator.id, role=Role.admin.value, created_at=now))
    await session.flush()
    return org


async def create_org(uow: UnitOfWork, *, slug: str, name: str | None, creator: User) -> Org:
    session = uow.session
    if await queries.org_by_slug(session, slug) is not None:
        raise errors.OrgSlugTaken(details={"slug": slug})
    try:
        return await _insert_org(session, slug=slug, name=name or slug, creator=creator, personal=False)
    except IntegrityError:
        raise errors.OrgSlugTaken(details={"slug": slug}) from None


async def create_org_with_free_slug(session: StoreSession, *, base: str, name: str, creator: User,
                                    personal: bool) -> Org:
    """The personal org: the subject's slug, with a numeric suffix where taken."""
    for n in range(1, 1000):
        suffix = "" if n == 1 else f"-{n}"
        slug = base[: 32 - len(suffix)].rstrip("-") + suffix
        if await queries.org_by_slug(session, slug) is not None:
            continue
        try:
            return await _insert_org(session, slug=slug, name=name[:100], creator=creator, personal=personal)
        except IntegrityError:
            continue
    raise RuntimeError("no free org slug")


async def rename_org(uow: UnitOfWork, access: OrgAccess, name: str, config: Config) -> OrgMembership:
    session = uow.session
    org = access.org
    old = org.name
    org.name = name
    await record(session, "org.rename", actor=access.principal.user, org=org, target=org.slug,
                 data={"from": old, "to": name})
    await session.flush()
    return membership_view(org, access.role.value, config)


async def delete_org(uow: UnitOfWork, access: OrgAccess, confirm: str) -> None:
    session = uow.session
    org = access.org
    if confirm.strip() != org.slug:
        raise errors.ConfirmMismatch(details={"expected": "the org slug"})
    if org.personal:
        raise errors.PersonalOrgUndeletable()
    if org.plan == Plan.pro:
        raise errors.ActiveSubscription()
    await queries.lock_org(session, org.id)
    held = {}
    for holding in uow.ctx.holdings:
        count, names = await queries.holding(session, holding, org.id, names=5)
        if count:
            held[holding.kind] = {"count": count, "names": names}
    if held:
        raise errors.OrgNotEmpty(details={"holdings": held})
    await record(session, "org.delete", actor=access.principal.user, org=org, target=org.slug)
    await session.flush()
    await session.delete(org)
    await session.flush()


async def list_members(uow: UnitOfWork, org_id: str) -> Sequence[Row[*tuple[Any, ...]]]:
    session = uow.session
    return await queries.members(session, org_id)


async def add_member(uow: UnitOfWork, access: OrgAccess, *, provider: str, subject: str,
                     role: Role) -> tuple[Membership, User]:
    session = uow.session
    if access.org.personal:
        raise errors.PersonalOrgIsSolo()
    user = await queries.user_by_identity(session, provider, subject)
    if user is None:
        raise errors.UserNotFound(details={"provider": provider, "subject": subject})
    if await queries.membership(session, access.org.id, user.id) is not None:
        raise errors.AlreadyMember()
    m = Membership(org_id=access.org.id, user_id=user.id, role=role.value, created_at=utcnow())
    try:
        async with session.begin_nested():
            session.add(m)
    except IntegrityError:
        raise errors.AlreadyMember() from None
    await record(session, "member.add", actor=access.principal.user, org=access.org, target=user.id,
                 data={"user": f"{provider}:{subject}", "role": role.value})
    await session.flush()
    return m, user


async def set_role(uow: UnitOfWork, access: OrgAccess, user_id: str, role: Role) -> tuple[Membership, User]:
    session = uow.session
    await queries.lock_org(session, access.org.id)
    m = await queries.membership(session, access.org.id, user_id)
    user = await session.get(User, user_id)
    if m is None or user is None:
        raise errors.MemberNotFound()
    old = m.role
    if old == Role.admin.value and role != Role.admin and await queries.admin_count(session, access.org.id) <= 1:
        raise errors.LastAdmin()
    m.role = role.value
    await record(session, "member.role", actor=access.principal.user, org=access.org, target=user_id,
                 data={"from": old, "to": role.value})
    await session.flush()
    return m, user


async def remove_member(uow: UnitOfWork, access: OrgAccess, user_id: str) -> None:
    """Admins remove anyone; everyone may leave. The last admin can do neither."""
    session = uow.session
    leaving = user_id == access.principal.user.id
    if not leaving and not at_least(access.role, Role.admin):
        raise Forbidden("Only an admin can remove other members")
    await queries.lock_org(session, access.org.id)
    m = await queries.membership(session, access.org.id, user_id)
    if m is None:
        raise errors.MemberNotFound()
    if m.role == Role.admin.value and await queries.admin_count(session, access.org.id) <= 1:
        raise errors.LastAdmin()
    await session.delete(m)
    await record(session, "member.leave" if leaving else "member.remove", actor=access.principal.user,
                 org=access.org, target=user_id)
    await session.flush()


async def set_plan(uow: UnitOfWork, *, slug: str, plan: Plan, config: Config) -> OrgMembership:
    """An operator's plan change (`svc admin plan`), for self-hosted instances without billing.
    Recorded as org.plan with no actor. Returns the org as its admins see it."""
    session = uow.session
    org = await queries.org_by_slug(session, slug)
    if org is None:
        raise OrgNotFound(details={"org": slug})
    await queries.lock_org(session, org.id)
    old = org.plan
    org.plan = plan
    await record(session, "org.plan", actor=None, org=org, target=org.slug,
                 data={"from": old, "to": plan.value, "by": "operator"})
    await session.flush()
    return membership_view(org, Role.admin, config)


# --- what other areas ask of orgs ---

async def org_by_slug(uow: UnitOfWork, slug: str) -> Org | None:
    return await queries.org_by_slug(uow.session, slug)


async def lock_org(uow: UnitOfWork, org_id: str) -> None:
    """Serialise rule checks that span rows of one org (a plan limit, the pending-invite cap)."""
    await queries.lock_org(uow.session, org_id)


async def role_in(uow: UnitOfWork, org_id: str, user_id: str) -> str | None:
    """The user's role in the org, or None when not a member."""
    return await queries.role_in(uow.session, org_id, user_id)


async def membership(uow: UnitOfWork, org_id: str, user_id: str) -> Membership | None:
    return await queries.membership(uow.session, org_id, user_id)


async def org_by_id(uow: UnitOfWork, org_id: str) -> Org | None:
    return await uow.session.get(Org, org_id)
