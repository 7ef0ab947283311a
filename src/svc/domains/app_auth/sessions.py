"""A project's end users, their identities and sessions: rows of the `svc_auth` schema in the
project's own database (made at grant: schema.py), written as the project's role through the
database node, as env.db's statements are. svc's store holds none of it.

- A user is found by (provider, subject); else, when the provider vouches for the email, by that
  verified email (a second provider links to the same user); else made.
- A session is a random token in the browser's cookie and its SHA-256 in `sessions.id_hash`; it
  ends at `expires_at` (sessionDays) or at logout (`ended_at`), whichever comes first."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from svc.domains.app_auth.edge_settings import AuthSigninSettings
from svc.domains.app_auth.signin import Identity
from svc.domains.databases import schemas as db_schemas
from svc.domains.databases import service as databases
from svc.kit.ids import random_base62
from svc.kit.tokens import token_hash
from svc.uow import UnitOfWork

TOKEN_PREFIX = "svc_eu_"
MAX_TOKEN = 128
CACHE_ENTRIES = 10_000


@dataclass(frozen=True)
class EndUser:
    id: str
    email: str | None
    email_verified: bool
    name: str | None
    avatar_url: str | None

    def public(self) -> dict[str, Any]:
        """What the app is told (session JSON, the worker's header)."""
        return {"id": self.id, "email": self.email, "emailVerified": self.email_verified, "name": self.name,
                "avatarUrl": self.avatar_url}


@dataclass(frozen=True)
class Opened:
    token: str
    user: EndUser
    expires: int  # unix seconds


async def _rows(uow: UnitOfWork, project_id: str, sql: str, *params: Any) -> list[list[Any]]:
    result = await databases.run_query(uow, project_id, db_schemas.RuntimeQuery(op="query", sql=sql,
                                                                                 params=list(params)))
    rows: list[list[Any]] = result["rows"]
    return rows


# (The columns of a user, as _user reads them, in each statement below.)


def _user(row: list[Any]) -> EndUser:
    return EndUser(id=row[0], email=row[1], email_verified=bool(row[2]), name=row[3], avatar_url=row[4])


async def find_or_make_user(uow: UnitOfWork, project_id: str, who: Identity) -> EndUser:
    """The end user of this identity: known, linked by verified email, or new. (Statements one at a
    time: a concurrent first sign-in of the same identity meets the primary key and is read back.)"""
    found = await _rows(uow, project_id,
                        "update svc_auth.users u set last_seen_at = now(), name = coalesce($3, u.name), "
                        "avatar_url = coalesce($4, u.avatar_url) from svc_auth.identities i "
                        "where i.provider = $1 and i.subject = $2 and u.id = i.user_id "
                        "returning u.id, u.email, u.email_verified, u.name, u.avatar_url",
                        who.provider, who.subject, who.name, who.avatar_url)
    if found:
        return _user(found[0])
    user_id = ""
    if who.email is not None:
        linked = await _rows(uow, project_id,
                             "select id from svc_auth.users where email_verified and lower(email) = lower($1) "
                             "order by created_at limit 1", who.email)
        user_id = linked[0][0] if linked else ""
    if not user_id:
        user_id = "eu_" + random_base62(20)
        await _rows(uow, project_id,
                    "insert into svc_auth.users (id, email, email_verified, name, avatar_url, created_at, "
                    "last_seen_at) values ($1, $2, $3, $4, $5, now(), now())",
                    user_id, who.email, who.email is not None, who.name, who.avatar_url)
    await _rows(uow, project_id,
                "insert into svc_auth.identities (provider, subject, user_id, email, created_at) "
                "values ($1, $2, $3, $4, now()) on conflict (provider, subject) do nothing",
                who.provider, who.subject, user_id, who.email)
    again = await _rows(uow, project_id,
                        "select u.id, u.email, u.email_verified, u.name, u.avatar_url "
                        "from svc_auth.users u join svc_auth.identities i on i.user_id = u.id "
                        "where i.provider = $1 and i.subject = $2", who.provider, who.subject)
    return _user(again[0])


async def open_session(uow: UnitOfWork, project_id: str, user: EndUser, days: int) -> Opened:
    """A new session of `days`. The project's dead sessions (expired, or ended by a logout) go at
    each sign-in, so the table holds about the sign-ins of the last sessionDays (the spec's
    "sessionDays also sizes the session table"): a dead one is refused whether its row is there
    or not."""
    await _rows(uow, project_id, "delete from svc_auth.sessions where expires_at < now() or ended_at is not null")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    rows = await _rows(uow, project_id,
                       "insert into svc_auth.sessions (id_hash, user_id, created_at, expires_at) "
                       "values ($1, $2, now(), now() + make_interval(days => $3::int)) "
                       "returning extract(epoch from expires_at)::bigint",
                       token_hash(token), user.id, days)
    return Opened(token=token, user=user, expires=int(rows[0][0]))


class _Kept:
    """This app's live sessions' answers (ctx.state_of): each kept SVC_AUTH_SESSION_CACHE_SECONDS;
    and one lookup at a time per session (its concurrent requests wait for it), so a burst of an
    app's requests takes one of the project's few connections, not one each."""

    def __init__(self) -> None:
        self.answers: OrderedDict[tuple[str, str], tuple[float, EndUser, int]] = OrderedDict()
        self.lookups: dict[tuple[str, str], asyncio.Lock] = {}


async def session_user(uow: UnitOfWork, project_id: str, token: str | None) -> tuple[EndUser, int] | None:
    """The signed-in user of a live session token, and when it ends; None for anything else."""
    if not token or len(token) > MAX_TOKEN or not token.startswith(TOKEN_PREFIX):
        return None
    key = (project_id, token_hash(token))
    seconds = uow.ctx.config.settings_of(AuthSigninSettings).auth_session_cache_seconds
    state = uow.ctx.state_of(_Kept)
    lock = state.lookups.setdefault(key, asyncio.Lock())
    try:
        async with lock:
            kept = state.answers.get(key)
            if kept is not None and time.monotonic() - kept[0] < seconds and kept[2] > time.time():
                return kept[1], kept[2]
            return await _look_up(uow, key)
    finally:
        if not lock.locked() and state.lookups.get(key) is lock:
            del state.lookups[key]


async def _look_up(uow: UnitOfWork, key: tuple[str, str]) -> tuple[EndUser, int] | None:
    project_id = key[0]
    rows = await _rows(uow, project_id,
                       "select u.id, u.email, u.email_verified, u.name, u.avatar_url, "
                       "extract(epoch from s.expires_at)::bigint "
                       "from svc_auth.sessions s "
                       "join svc_auth.users u on u.id = s.user_id "
                       "where s.id_hash = $1 and s.ended_at is null and s.expires_at > now()", key[1])
    answers = uow.ctx.state_of(_Kept).answers
    if not rows:
        answers.pop(key, None)
        return None
    user, expires = _user(rows[0]), int(rows[0][5])
    answers[key] = (time.monotonic(), user, expires)
    answers.move_to_end(key)
    while len(answers) > CACHE_ENTRIES:
        answers.popitem(last=False)
    return user, expires


async def end_session(uow: UnitOfWork, project_id: str, token: str | None, *, everywhere: bool) -> None:
    """Logout: this session ends; with `everywhere`, every session of its user."""
    if not token or len(token) > MAX_TOKEN or not token.startswith(TOKEN_PREFIX):
        return
    answers = uow.ctx.state_of(_Kept).answers
    kept = answers.pop((project_id, token_hash(token)), None)
    if everywhere and kept is not None:
        for key in [k for k, v in answers.items() if k[0] == project_id and v[1].id == kept[1].id]:
            answers.pop(key, None)
    if everywhere:
        await _rows(uow, project_id,
                    "update svc_auth.sessions set ended_at = now() where ended_at is null and user_id = "
                    "(select user_id from svc_auth.sessions where id_hash = $1)", token_hash(token))
    else:
        await _rows(uow, project_id, "update svc_auth.sessions set ended_at = now() "
                                     "where id_hash = $1 and ended_at is null", token_hash(token))
