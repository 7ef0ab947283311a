"""Users, sessions and personal orgs."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError

from svc.domains.identity import queries
from svc.domains.orgs import service as orgs
from svc.kit.clock import utcnow
from svc.kit.ids import new_id
from svc.kit.names import slug_from
from svc.kit.store_session import StoreSession
from svc.kit.tokens import new_session_token, token_hash
from svc.models import PersonalOrg, User, UserSession
from svc.uow import UnitOfWork


async def sign_in(uow: UnitOfWork, *, provider: str, subject: str, email: str | None,
                  name: str | None, session_days: int) -> tuple[User, str, UserSession]:
    """Find or create the user (same provider+subject = same user), make sure the personal org
    exists (created at first login only, never recreated), and issue a session token."""
    session = uow.session
    user = await _upsert_user(session, provider=provider, subject=subject, email=email, name=name)
    await _ensure_personal_org(session, user)
    token = new_session_token()
    now = utcnow()
    row = UserSession(id=new_id("ses"), user_id=user.id, token_hash=token_hash(token), created_at=now,
                      expires_at=now + timedelta(days=session_days))
    session.add(row)
    await session.flush()
    return user, token, row


async def _upsert_user(session: StoreSession, *, provider: str, subject: str, email: str | None,
                       name: str | None) -> User:
    now = utcnow()
    user = await queries.user_by_identity(session, provider, subject)
    if user is None:
        try:
            async with session.begin_nested():
                user = User(id=new_id("usr"), provider=provider, subject=subject, email=email, name=name,
                            created_at=now, last_login_at=now)
                session.add(user)
        except IntegrityError:  # a concurrent first login of the same account won
            user = await queries.user_by_identity(session, provider, subject)
            assert user is not None
    else:
        user.last_login_at = now
        # The provider is the source of truth for profile data; a private email stays as it was.
        if email:
            user.email = email
        if name:
            user.name = name
    await session.flush()
    return user


async def _ensure_personal_org(session: StoreSession, user: User) -> None:
    if await queries.has_personal_org(session, user.id):
        return
    base = slug_from(user.subject)
    org = await orgs.create_org_with_free_slug(session, base=base, name=user.name or user.subject,
                                               creator=user, personal=True)
    try:
        async with session.begin_nested():
            session.add(PersonalOrg(user_id=user.id, org_id=org.id, created_at=utcnow()))
    except IntegrityError:
        # A concurrent first login created it: drop ours.
        await session.delete(org)
    await session.flush()



async def sign_out(uow: UnitOfWork, token: str) -> None:
    """End the session server-side: its row goes, so the token stops working at once everywhere
    (the credential cache is cleared by the write, auth/invalidation.py)."""
    await uow.session.execute(delete(UserSession).where(UserSession.token_hash == token_hash(token)))


async def user_by_identity(uow: UnitOfWork, provider: str, subject: str) -> User | None:
    """The account of a person who has signed in before with this provider and subject."""
    return await queries.user_by_identity(uow.session, provider, subject)
