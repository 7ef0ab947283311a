"""The watchdog (issue 42, item 2): statements and idle transactions are bounded by the plan whatever
a session sets, an expired token user's sessions end and the user is dropped, and a password a
session set on its project's role is set back to svc's. Driven by the
real cycle (every second here) against the real cluster, with the plan's bounds shortened to a few
seconds so that a test does not wait the free plan's 30 s."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import asyncpg
import pytest

from svc.app import default_adapters
from svc.domains.orgs import service as orgs
from svc.domains.orgs.plans import PlanLimits
from svc.models import DatabaseToken
from svc.settings import Settings
from tests.database.test_ceilings import _env_db, _project_id
from tests.support.api import Svc, running_svc
from tests.support.team import make_team

pytestmark = pytest.mark.parametrize("store", ["sqlite"], indirect=True)

URL = "/v1/orgs/acme/projects/web/database"
STATEMENT_SECONDS = 2
IDLE_SECONDS = 3
DEADLINE = 90.0


@pytest.fixture
async def watched(settings: Settings, project_cluster: Any, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Svc]:
    from svc.adapters.database.postgres import PostgresNode

    monkeypatch.setenv("SVC_DATABASE_WATCHDOG_SECONDS", "1")
    real = orgs.limits_of

    def short(s: Settings, plan: str) -> PlanLimits:
        return dataclasses.replace(real(s, plan), db_statement_seconds=STATEMENT_SECONDS,
                                   db_idle_transaction_seconds=IDLE_SECONDS)

    monkeypatch.setattr(orgs, "limits_of", short)
    adapters = default_adapters(settings)
    adapters.database = node = PostgresNode(project_cluster.admin_url)
    try:
        async with running_svc(settings, adapters) as running:
            yield running
    finally:
        await node.close()


async def _connect(creds: dict[str, Any], user: str | None = None, password: str | None = None) -> asyncpg.Connection:
    return await asyncpg.connect(host=creds["host"], port=creds["port"], database=creds["database"],
                                 user=user or creds["user"], password=password or creds["password"], timeout=30)


async def _until(check: Callable[[], Awaitable[bool]], what: str) -> None:
    deadline = asyncio.get_running_loop().time() + DEADLINE
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, f"not within {DEADLINE:.0f} s: {what}"
        await asyncio.sleep(0.2)


async def test_a_statement_past_its_bound_is_cancelled_whatever_the_session_set(watched: Svc) -> None:
    creds = (await (await make_team(watched, project="web")).bob.client.post(URL)).json()
    con = await _connect(creds)
    try:
        # The role's default is the plan's bound; the session lifts it, as any client may.
        assert await con.fetchval("show statement_timeout") == f"{STATEMENT_SECONDS}s"
        await con.execute("set statement_timeout = 0; alter role current_user set statement_timeout = 0")
        with pytest.raises(asyncpg.QueryCanceledError, match="user request"):
            await asyncio.wait_for(con.fetchval("select pg_sleep(600)"), DEADLINE)
        # The session itself goes on.
        assert await con.fetchval("select 1") == 1
    finally:
        await con.close()


async def test_an_idle_transaction_past_its_bound_is_ended(watched: Svc, project_cluster: Any) -> None:
    creds = (await (await make_team(watched, project="web")).bob.client.post(URL)).json()
    con = await _connect(creds)
    admin = await asyncpg.connect(project_cluster.admin_url)
    try:
        await con.execute("set idle_in_transaction_session_timeout = 0")
        pid = await con.fetchval("select pg_backend_pid()")
        await con.execute("begin; create table held (n int); lock table held")

        async def ended() -> bool:
            return not await admin.fetchval("select 1 from pg_stat_activity where pid = $1", pid)

        await _until(ended, "the idle transaction's session ended")
        with pytest.raises((asyncpg.PostgresError, asyncpg.InterfaceError)):
            await con.fetchval("select 1")
        # Nothing of it stayed: the table was rolled back with its lock.
        fresh = await _connect(creds)
        assert await fresh.fetchval("select to_regclass('held')") is None
        await fresh.close()
    finally:
        await admin.close()
        con.terminate()


async def test_an_expired_token_users_session_ends_and_the_user_is_dropped(watched: Svc, project_cluster: Any) -> None:
    bob = (await make_team(watched, project="web")).bob
    creds = (await bob.client.post(URL)).json()
    token = (await bob.client.post(URL + "/tokens", json={"expiresInMinutes": 30})).json()
    con = await _connect(creds, token["user"], token["password"])
    admin = await asyncpg.connect(project_cluster.admin_url)
    try:
        pid = await con.fetchval("select pg_backend_pid()")
        assert await admin.fetchval("select rolconnlimit from pg_roles where rolname = $1", creds["user"]) == 9
        # Its expiry passes (as 30 minutes would): VALID UNTIL gates new logins only, the open
        # session would go on without the watchdog.
        await admin.execute(f"ALTER ROLE \"{token['user']}\" VALID UNTIL '2000-01-01'")

        async def gone() -> bool:
            return not await admin.fetchval("select 1 from pg_stat_activity where pid = $1", pid) and \
                not await admin.fetchval("select 1 from pg_roles where rolname = $1", token["user"])

        await _until(gone, "the expired token user's session ended and its role dropped")
        # Its connection went back to the project's role, its row is gone.
        assert await admin.fetchval("select rolconnlimit from pg_roles where rolname = $1", creds["user"]) == 10
        async with watched.ctx.db.transaction(write=False) as s:
            assert await s.get(DatabaseToken, token["user"]) is None
    finally:
        await admin.close()
        con.terminate()


async def test_a_project_holding_more_than_its_ceiling_is_shrunk_to_it(watched: Svc, project_cluster: Any) -> None:
    """Roles made before ceilings (20 connections each) or under a bigger plan: the watchdog takes
    them down to the plan's ceiling (only ever down), the role keeping what its token users do not."""
    bob = (await make_team(watched, project="web")).bob
    creds = (await bob.client.post(URL)).json()
    token = (await bob.client.post(URL + "/tokens")).json()
    admin = await asyncpg.connect(project_cluster.admin_url)
    try:
        for role in (creds["user"], token["user"]):
            await admin.execute(f'ALTER ROLE "{role}" CONNECTION LIMIT 20')

        async def fitted() -> bool:
            rows = dict(await admin.fetch("select rolname, rolconnlimit from pg_roles where rolname like $1",
                                          creds["user"] + "%"))
            return rows == {creds["user"]: 9, token["user"]: 1}

        await _until(fitted, "the project's roles shrunk to the free plan's ceiling of 10")
    finally:
        await admin.close()


async def test_a_password_a_token_user_sets_on_its_projects_role_is_set_back(watched: Svc,
                                                                               project_cluster: Any) -> None:
    """PostgreSQL lets a role change its own password, and a token user's session acts as its
    project's role: without the watchdog a token of 30 minutes would become a login of its own for
    good, and env.db (svc's password) would be locked out."""
    bob = (await make_team(watched, project="web")).bob
    creds = (await bob.client.post(URL)).json()
    token = (await bob.client.post(URL + "/tokens", json={"expiresInMinutes": 30})).json()
    project_id = await _project_id(watched, "acme", "web")
    assert (await _env_db(watched, project_id))["rows"] == [[42]]  # env.db's pool is open
    con = await _connect(creds, token["user"], token["password"])
    admin = await asyncpg.connect(project_cluster.admin_url)
    taken: asyncpg.Connection | None = None
    try:
        async def took() -> bool:
            # A turn runs every second: set it and log in with it until the login comes first.
            nonlocal taken
            await con.execute(f"ALTER ROLE \"{creds['user']}\" PASSWORD 'taken'")
            with contextlib.suppress(asyncpg.InvalidPasswordError):
                taken = await _connect(creds, password="taken")
            return taken is not None

        await _until(took, "a login with the password the token user set")
        assert taken is not None
        assert await taken.fetchval("select session_user") == creds["user"]
        pid = await taken.fetchval("select pg_backend_pid()")

        async def ended() -> bool:
            return not await admin.fetchval("select 1 from pg_stat_activity where pid = $1", pid)

        await _until(ended, "the session logged in with the token user's password ended")
        with pytest.raises(asyncpg.InvalidPasswordError):
            await _connect(creds, password="taken")
        # svc's password is the role's again: a member's psql and env.db log in with it.
        fresh = await _connect(creds)
        assert await fresh.fetchval("select current_user") == creds["user"]
        await fresh.close()
        assert (await _env_db(watched, project_id))["rows"] == [[42]]
    finally:
        await admin.close()
        con.terminate()
        if taken is not None:
            taken.terminate()
