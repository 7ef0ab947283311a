"""One tenant cannot take every project's database offline (issue 42, item 2): a project's
connections (its role, every token user, env.db's pool) share its plan's ceiling, held by
PostgreSQL's own per-role CONNECTION LIMITs, and the ceilings of all projects fit in the cluster
with svc's reserve kept. On a private cluster of its own whose max_connections is small enough to
matter: 40, less PostgreSQL's 3 superuser slots and svc's 10, leaves 27 for projects (two free
plans' ceilings of 10)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest
from sqlalchemy import select

from svc.app import default_adapters
from svc.domains.databases import service
from svc.domains.databases.errors import QueryFailed
from svc.domains.databases.schemas import RuntimeQuery
from svc.models import Org, Project
from svc.settings import Settings
from svc.uow import Tx, unit_of_work
from tests.database.test_api import psql
from tests.support.api import Svc, assert_error, running_svc
from tests.support.projectdb import running_cluster
from tests.support.team import make_team

pytestmark = pytest.mark.parametrize("store", ["sqlite"], indirect=True)

WEB = "/v1/orgs/acme/projects/web/database"
SITE = "/v1/orgs/other/projects/site/database"
FREE_CEILING = 10
FREE_TOKEN_USERS = 4


@pytest.fixture
async def small_svc(settings: Settings) -> AsyncIterator[tuple[Svc, str]]:
    """svc on a cluster of max_connections 40; its admin URL beside it."""
    from svc.adapters.database.postgres import PostgresNode

    async with running_cluster(max_connections=40) as cluster:
        adapters = default_adapters(settings)
        adapters.database = node = PostgresNode(cluster.admin_url)
        try:
            async with running_svc(settings, adapters) as running:
                yield running, cluster.admin_url
        finally:
            await node.close()


async def _open(creds: dict[str, Any], user: str, password: str, n: int) -> tuple[list[asyncpg.Connection], set[str]]:
    """`n` connections at once as `user`: the ones that opened, and what refused the others."""
    tried = await asyncio.gather(*(asyncpg.connect(host=creds["host"], port=creds["port"], database=creds["database"],
                                                   user=user, password=password, timeout=30) for _ in range(n)),
                                 return_exceptions=True)
    opened = [c for c in tried if isinstance(c, asyncpg.Connection)]
    refusals = {str(c) for c in tried if not isinstance(c, asyncpg.Connection)}
    return opened, refusals


async def _env_db(svc: Svc, project_id: str) -> Any:
    """A statement through env.db's path (the pool svc holds for the project's worker)."""
    async with unit_of_work(svc.ctx, Tx.READ) as uow:
        return await service.run_query(uow, project_id, RuntimeQuery(op="query", sql="select 41 + 1 as n", params=[]))


async def _project_id(svc: Svc, org: str, name: str) -> str:
    async with svc.ctx.db.transaction(write=False) as s:
        found = await s.scalar(select(Project.id).join(Org, Org.id == Project.org_id)
                               .where(Org.slug == org, Project.name == name))
        assert found is not None
        return str(found)


async def test_many_token_users_with_many_connections_stay_under_the_ceiling(small_svc: tuple[Svc, str]) -> None:
    svc, admin_url = small_svc
    team = await make_team(svc, project="web", other_project="site")
    web = (await team.bob.client.post(WEB)).json()
    site = (await team.eve.client.post(SITE)).json()
    site_id = await _project_id(svc, "other", "site")
    assert (await _env_db(svc, site_id))["rows"] == [[42]]

    # The free plan's token users, then one more: refused in words.
    tokens = []
    for _ in range(FREE_TOKEN_USERS):
        r = await team.bob.client.post(WEB + "/tokens", json={"expiresInMinutes": 30})
        assert r.status_code == 201, r.text
        tokens.append(r.json())
    body = assert_error(await team.bob.client.post(WEB + "/tokens"), 409, "too_many_tokens")
    assert body["details"] == {"limit": FREE_TOKEN_USERS} and "plan" in body["message"]

    held: list[asyncpg.Connection] = []
    try:
        # Twenty connections with each token user and twenty with the role's own password.
        refusals: set[str] = set()
        for token in tokens:
            opened, refused = await _open(web, token["user"], token["password"], 20)
            held += opened
            refusals |= refused
        opened, refused = await _open(web, web["user"], web["password"], 20)
        held += opened
        refusals |= refused
        assert len(held) == FREE_CEILING, "the project's connections are its plan's ceiling, however they are opened"
        assert refusals and all("too many connections for role" in r for r in refusals), refusals

        # The cluster agrees: no more of the project's sessions than its ceiling.
        admin = await asyncpg.connect(admin_url)
        try:
            sessions = await admin.fetchval("select count(*) from pg_stat_activity where usename like $1",
                                            web["user"] + "%")
            limits = await admin.fetchval("select sum(rolconnlimit) from pg_roles where rolname like $1",
                                          web["user"] + "%")
        finally:
            await admin.close()
        assert sessions == FREE_CEILING and limits == FREE_CEILING

        # Another project's psql and env.db keep working; the full project's own env.db is refused in words.
        done = await asyncio.to_thread(psql, site, "select 'still here'")
        assert done.returncode == 0 and done.stdout.strip() == "still here", done.stderr
        assert (await _env_db(svc, site_id))["rows"] == [[42]]
        with pytest.raises(QueryFailed, match="too many connections") as caught:
            await _env_db(svc, await _project_id(svc, "acme", "web"))
        assert caught.value.details == {"sqlstate": "53300"}
    finally:
        for con in held:
            with contextlib.suppress(Exception):
                await con.close()


async def test_oversubscription_is_refused_in_words(small_svc: tuple[Svc, str]) -> None:
    svc, _ = small_svc
    team = await make_team(svc, project="web", other_project="site")
    for name in ("third", "fourth"):
        assert (await team.alice.client.post("/v1/orgs/acme/projects", json={"name": name})).status_code == 201
    web = (await team.bob.client.post(WEB)).json()

    # A token user while the role holds its whole ceiling open would pass it: refused in words.
    opened, _ = await _open(web, web["user"], web["password"], FREE_CEILING)
    assert len(opened) == FREE_CEILING
    body = assert_error(await team.bob.client.post(WEB + "/tokens"), 409, "connection_ceiling")
    assert "open" in body["message"], body
    for con in opened:
        await con.close()
    assert (await team.bob.client.post(WEB + "/tokens")).status_code == 201

    # 27 connections for projects on this cluster: a second ceiling of 10 fits, a third does not.
    assert (await team.eve.client.post(SITE)).status_code == 200
    body = assert_error(await team.bob.client.post("/v1/orgs/acme/projects/third/database"), 409, "node_full")
    assert "full" in body["message"] and "operator" in body["message"]
    assert (await team.bob.client.get("/v1/orgs/acme/projects/third/database")).json() == {"db": False}
    # Creating again is idempotent: an existing database's ceiling is not counted twice.
    assert (await team.bob.client.post(WEB)).status_code == 200
    # What a dropped database held is free again.
    assert (await team.alice.client.post(WEB + "/delete", json={"confirm": "web"})).status_code == 202
    for _ in range(900):
        if (await team.bob.client.get(WEB)).json() == {"db": False}:
            break
        await asyncio.sleep(0.1)
    r = await team.bob.client.post("/v1/orgs/acme/projects/third/database")
    assert r.status_code == 200, r.text
