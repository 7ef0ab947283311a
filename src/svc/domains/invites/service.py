"""Invite rules (spec section 3 'Invite', section 4 rules 5-9). Services flush, never commit.

An invite row is kept per (org, address) and reused by a re-invite. Only the token's hash is
stored; the token itself appears once, in the create/resend response and in the mail's link.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.exc import IntegrityError

from svc.auth.caller import Principal
from svc.auth.roles import OrgAccess
from svc.domains.audit.service import record
from svc.domains.invites import errors, queries, schemas
from svc.domains.invites.settings import InviteSettings
from svc.domains.mail.service import discard_unsent, queue_mail
from svc.domains.orgs import service as orgs
from svc.domains.orgs.errors import AlreadyMember, PersonalOrgIsSolo
from svc.domains.orgs.schemas import OrgMembership
from svc.errors import Conflict
from svc.kit.clock import human_date, utcnow
from svc.kit.ids import new_id
from svc.kit.tokens import new_invite_token, token_hash
from svc.models import Invite, InviteState, Membership, Org, Role, User
from svc.settings import Settings
from svc.uow import UnitOfWork


@dataclass(frozen=True)
class Issued:
    invite: Invite
    token: str
    created: bool


def state_of(invite: Invite, now: datetime) -> InviteState:
    """The stored state, except that a pending invite past its expiry reads as expired."""
    if invite.state == InviteState.pending and invite.expires_at <= now:
        return InviteState.expired
    return InviteState(invite.state)


def invite_schema(invite: Invite, now: datetime, token: str | None = None) -> schemas.Invite:
    return schemas.Invite(id=invite.id, email=invite.email, role=Role(invite.role), state=state_of(invite, now),
                          expires_at=invite.expires_at, sent_at=invite.sent_at, created_at=invite.created_at,
                          token=token)


async def list_invites(uow: UnitOfWork, org_id: str) -> list[schemas.Invite]:
    session = uow.session
    now = utcnow()
    return [invite_schema(i, now) for i in await queries.pending(session, org_id)]


async def invite(uow: UnitOfWork, access: OrgAccess, *, email: str, role: Role,
                 settings: Settings) -> Issued:
    """Create an invite, or re-invite the same address (same row, new token and expiry, role may
    change, earlier unsent mail withdrawn). Either way one new mail is queued."""
    session = uow.session
    own = uow.ctx.settings_of(InviteSettings)
    org, inviter = access.org, access.principal.user
    if org.personal:
        raise PersonalOrgIsSolo()
    # Serialises the cap count with concurrent invites of this org (and the row per address).
    await orgs.lock_org(uow, org.id)
    if await queries.member_has_email(session, org.id, email):
        raise AlreadyMember("An account with this email address is already a member of this org")
    now = utcnow()
    row = await queries.by_email(session, org.id, email)
    counts_already = row is not None and row.state == InviteState.pending and row.expires_at > now
    if not counts_already:
        live = await queries.live_count(session, org.id, now)
        if live >= own.pending_invite_cap:
            raise errors.TooManyInvites(details={"limit": own.pending_invite_cap, "count": live})
    token = new_invite_token()
    expires_at = now + timedelta(days=own.invite_days)
    created = row is None
    if row is None:
        row = Invite(id=new_id("inv"), org_id=org.id, email=email, created_at=now)
        session.add(row)
    row.role = role.value
    row.token_hash = token_hash(token)
    row.state = InviteState.pending
    row.invited_by = inviter.id
    row.expires_at = expires_at
    row.sent_at = None
    row.accepted_by = None
    row.finished_at = None
    await session.flush()
    if not created:
        # After the invite row is written: rows are always locked invite first, then its mail
        # (as revoke and the mail.send job do), so concurrent transactions cannot deadlock.
        await discard_unsent(uow, invite_id=row.id)
    subject, body = invite_mail(org=org, inviter=inviter, role=role, token=token, expires_at=expires_at,
                                settings=settings)
    queue_mail(uow, email, subject, body, invite_id=row.id)
    await record(session, "member.invite", actor=inviter, org=org, target=row.id,
                 data={"invite": row.id, "role": role.value, "resent": not created})
    await session.flush()
    return Issued(invite=row, token=token, created=created)


def invite_mail(*, org: Org, inviter: User, role: Role, token: str, expires_at: datetime,
                settings: Settings) -> tuple[str, str]:
    who = inviter.name or inviter.subject
    link = f"{settings.public_url}/invites/{token}"
    subject = f"{who} invited you to join {org.name} on {settings.service_name}"
    body = (
        f"{who} invited you to join the org {org.name} ({org.slug}) on {settings.service_name} "
        f"as {role.value}.\n\n"
        f"Open this link to accept:\n\n    {link}\n\n"
        f"The link works once and expires on {human_date(expires_at)}. You will be asked to sign in; "
        f"any account can accept it.\n"
        f"If you did not expect this invitation, you can ignore this message.\n"
    )
    return subject, body


async def revoke(uow: UnitOfWork, access: OrgAccess, invite_id: str) -> None:
    session = uow.session
    row = await queries.in_org(session, access.org.id, invite_id)
    if row is None or not await queries.revoke(session, row.id, utcnow()):
        raise errors.InviteNotFound()
    await discard_unsent(uow, invite_id=row.id)
    await record(session, "member.uninvite", actor=access.principal.user, org=access.org, target=row.id,
                 data={"invite": row.id, "role": row.role})
    await session.flush()


async def preview(uow: UnitOfWork, token: str) -> schemas.InviteView:
    session = uow.session
    found = await queries.by_token_hash(session, token_hash(token))
    if found is None:
        raise errors.InviteNotFound()
    row, org = found
    return schemas.InviteView(org=schemas.InviteViewOrg(slug=org.slug, name=org.name), role=Role(row.role),
                              state=state_of(row, utcnow()), expires_at=row.expires_at)


_REFUSALS: dict[str, type[Conflict]] = {
    InviteState.used: errors.InviteUsed, InviteState.revoked: errors.InviteRevoked,
    InviteState.expired: errors.InviteExpired,
}


async def accept(uow: UnitOfWork, principal: Principal, token: str,
                 settings: Settings) -> tuple[bool, OrgMembership]:
    """Consume the invite (once, whoever asks first) and make the caller a member with its role;
    a member already keeps their role. Returns (already a member, the caller's membership)."""
    session = uow.session
    digest = token_hash(token)
    found = await queries.by_token_hash(session, digest)
    if found is None:
        raise errors.InviteNotFound()
    row, org = found
    if org.personal:  # an invite made before personal orgs were closed to others: never usable
        raise PersonalOrgIsSolo()
    user = principal.user
    now = utcnow()
    if not await queries.consume(session, row.id, digest, user.id, now):
        current = await queries.state_of(session, row.id, digest)
        if current is None:  # re-invited meanwhile: this token is no longer known
            raise errors.InviteNotFound()
        state, expires_at = current
        key = InviteState.expired if state == InviteState.pending and expires_at <= now else state
        raise _REFUSALS.get(key, errors.InviteUsed)()
    member = await orgs.membership(uow, org.id, user.id)
    already = member is not None
    if member is None:
        try:
            async with session.begin_nested():
                member = Membership(org_id=org.id, user_id=user.id, role=row.role, created_at=now)
                session.add(member)
        except IntegrityError:  # the same account joined by another invite at this moment
            already = True
            member = await orgs.membership(uow, org.id, user.id)
            if member is None:
                raise
    # Spec rule 9: this event records the invited address and the accepting account.
    await record(session, "member.accept", actor=user, org=org, target=row.id,
                 data={"invite": row.id, "email": row.email, "user": user.id, "role": member.role,
                       "alreadyMember": already})
    await session.flush()
    return already, orgs.membership_view(org, member.role, uow.ctx.config)
