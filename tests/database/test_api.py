"""A project's database through the API (spec "Database"): create is idempotent and never rotates
the password; /connect is the one route that serves it, and real psql sessions open with it and
with token users; a deleted token user is refused at its next connection; every 404 and role rule."""

from __future__ import annotations

import asyncio
import os
import subprocess
from typing import Any

import asyncpg
import pytest
from sqlalchemy import select

from svc.models import AuditEvent, DatabaseToken, ProjectDatabase
from svc.settings import Settings
from tests.support.api import Svc, assert_error, running_svc
from tests.support.team import make_team

URL = "/v1/orgs/acme/projects/web/database"
CONNECT_FIELDS = {"host", "port", "database", "user", "password", "sslmode"}


def psql(creds: dict[str, Any], sql: str, *, user: str | None = None, password: str | None = None) -> \
        subprocess.CompletedProcess[str]:
    """The real psql client, with credentials in its environment (as `svc db connect` runs it)."""
    env = {**os.environ, "PGHOST": creds["host"], "PGPORT": str(creds["port"]), "PGDATABASE": creds["database"],
           "PGUSER": user or creds["user"], "PGPASSWORD": password or creds["password"],
           "PGSSLMODE": creds["sslmode"], "PGCONNECT_TIMEOUT": "10"}
    return subprocess.run(["psql", "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql], env=env,
                          capture_output=True, text=True, timeout=60, check=False)


async def test_create_connect_and_psql(db_svc: Svc) -> None:
    team = await make_team(db_svc, project="web", other_project="site")
    bob, vic = team.bob, team.vic
    assert (await vic.client.get(URL)).json() == {"db": False}
    assert_error(await bob.client.get(URL + "/connect"), 404, "not_found")
    assert_error(await vic.client.post(URL), 403, "forbidden")

    r = await bob.client.post(URL)
    assert r.status_code == 200, r.text
    creds = r.json()
    assert set(creds) == CONNECT_FIELDS and creds["password"] and creds["database"] == creds["user"]
    assert r.headers["cache-control"] == "no-store"
    assert (await vic.client.get(URL)).json() == {"db": True}

    # Idempotent: the same password, never rotated; /connect serves it to members, not viewers.
    again = (await team.alice.client.post(URL)).json()
    assert again == creds
    assert (await bob.client.get(URL + "/connect")).json() == creds
    assert_error(await vic.client.get(URL + "/connect"), 403, "forbidden")
    endpoint = (await vic.client.get(URL + "/endpoint")).json()
    assert endpoint == {k: creds[k] for k in ("host", "port", "database", "sslmode")}

    # The password is sealed at rest; the audit trail names the project only.
    async with db_svc.ctx.db.transaction(write=False) as s:
        row = (await s.scalars(select(ProjectDatabase))).one()
        assert creds["password"].encode() not in row.sealed_password
        audits = (await s.scalars(select(AuditEvent).where(AuditEvent.action == "database.create"))).all()
        assert len(audits) == 1 and creds["password"] not in str(audits[0].data)

    done = await asyncio.to_thread(psql, creds, "create table notes (id int primary key, body text); "
                                                "insert into notes values (1, 'hello'); select body from notes")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "hello"

    # Another project's role cannot open this database, even with a password of its own.
    other = (await team.eve.client.post("/v1/orgs/other/projects/site/database")).json()
    denied = await asyncio.to_thread(psql, {**other, "database": creds["database"]}, "select 1")
    assert denied.returncode != 0 and "permission denied" in denied.stderr
    # And no one outside the org sees it exists.
    assert_error(await team.eve.client.get(URL), 404)
    assert_error(await bob.client.get("/v1/orgs/acme/projects/nope/database/endpoint"), 404)
    assert_error(await bob.client.post("/v1/orgs/acme/projects/nope/database"), 404)


async def test_token_users(db_svc: Svc) -> None:
    team = await make_team(db_svc, project="web")
    bob, vic = team.bob, team.vic
    assert_error(await bob.client.post(URL + "/tokens", json={}), 404, "not_found")  # no database yet
    creds = (await bob.client.post(URL)).json()
    await asyncio.to_thread(psql, creds, "create table notes (body text); insert into notes values ('kept')")

    for bad in ({"expiresInMinutes": 0}, {"expiresInMinutes": 10081}, {"expiresInMinutes": "soon"}, {"other": 1}):
        assert_error(await bob.client.post(URL + "/tokens", json=bad), 400, "bad_request")
    assert_error(await vic.client.post(URL + "/tokens", json={}), 403, "forbidden")
    assert_error(await vic.client.get(URL + "/tokens"), 403, "forbidden")

    r = await bob.client.post(URL + "/tokens", json={"expiresInMinutes": 30})
    assert r.status_code == 201, r.text
    token = r.json()
    assert set(token) == {"user", "password", "expiresAt"} and token["user"] != creds["user"]
    default = (await bob.client.post(URL + "/tokens")).json()  # no body: 60 minutes
    listed = (await bob.client.get(URL + "/tokens")).json()["tokens"]
    assert {t["user"] for t in listed} == {token["user"], default["user"]}
    assert all(set(t) == {"user", "expiresAt", "createdAt"} for t in listed)
    assert "password" not in str(listed)

    # A token user's session acts as the project's role: it reads the project's rows, and what it
    # makes belongs to the project.
    got = await asyncio.to_thread(psql, creds, "select current_user, body from notes",
                                  user=token["user"], password=token["password"])
    assert got.returncode == 0, got.stderr
    assert got.stdout.strip() == f"{creds['user']}|kept"
    # svc keeps no password or verifier of it.
    async with db_svc.ctx.db.transaction(write=False) as s:
        row = await s.get(DatabaseToken, token["user"])
        assert row is not None and token["password"] not in str(vars(row))

    # Delete: the next connection is refused; a second delete is 404.
    assert (await bob.client.delete(f"{URL}/tokens/{token['user']}")).status_code == 204
    refused = await asyncio.to_thread(psql, creds, "select 1", user=token["user"], password=token["password"])
    assert refused.returncode != 0
    assert_error(await bob.client.delete(f"{URL}/tokens/{token['user']}"), 404, "not_found")
    assert_error(await bob.client.delete(f"{URL}/tokens/{creds['user']}"), 404, "not_found")  # not a token


async def test_expired_token_user_is_refused(db_svc: Svc, project_cluster: Any) -> None:
    team = await make_team(db_svc, project="web")
    creds = (await team.bob.client.post(URL)).json()
    token = (await team.bob.client.post(URL + "/tokens", json={"expiresInMinutes": 1})).json()
    ok = await asyncpg.connect(host=creds["host"], port=creds["port"], database=creds["database"],
                               user=token["user"], password=token["password"])
    await ok.close()
    # Move its VALID UNTIL into the past, as a minute passing would: PostgreSQL refuses the login.
    admin = await asyncpg.connect(project_cluster.admin_url)
    await admin.execute(f"ALTER ROLE \"{token['user']}\" VALID UNTIL '2000-01-01'")
    await admin.close()
    with pytest.raises(asyncpg.InvalidPasswordError):
        await asyncpg.connect(host=creds["host"], port=creds["port"], database=creds["database"],
                              user=token["user"], password=token["password"])


async def test_without_a_node_the_routes_answer_503(settings: Settings) -> None:
    async with running_svc(settings) as svc:
        svc.ctx.adapters.off["database"] = "PostgreSQL's server was not found"
        team = await make_team(svc, project="web")
        assert (await team.bob.client.get(URL)).json() == {"db": False}
        body = assert_error(await team.bob.client.post(URL), 503, "no_node_admin")
        assert "PostgreSQL's server was not found" in body["message"]
        assert_error(await team.bob.client.get(URL + "/endpoint"), 503, "no_node_admin")


async def test_another_projects_database_is_404_on_every_route(db_svc: Svc) -> None:
    """Another org's existing project, with a database, token users and an operation: every database
    route answers 404 to acme's people as if it were absent; an operation of one project is 404
    through another project's path, in another org or in the same one."""
    team = await make_team(db_svc, project="web", other_project="site")
    assert (await team.alice.client.post("/v1/orgs/acme/projects", json={"name": "blog"})).status_code == 201
    site = "/v1/orgs/other/projects/site/database"
    assert (await team.eve.client.post(site)).status_code == 200
    token = (await team.eve.client.post(site + "/tokens")).json()
    assert (await team.eve.client.get(site + "/connect")).status_code == 200
    assert (await team.alice.client.post(URL)).status_code == 200
    op = (await team.alice.client.post(URL + "/delete", json={"confirm": "web"})).json()["operationId"]
    assert (await team.alice.client.get(f"{URL}/operations/{op}")).status_code == 200

    routes = [("GET", ""), ("POST", ""), ("GET", "/connect"), ("GET", "/endpoint"), ("GET", "/tokens"),
              ("POST", "/tokens"), ("DELETE", f"/tokens/{token['user']}"), ("POST", "/export"),
              ("GET", "/generations"), ("POST", "/generations"), ("POST", "/restore"), ("POST", "/delete"),
              ("GET", f"/operations/{op}"),
              ("POST", f"/operations/{op}/abort")]
    bodies = {"/restore": {"epoch": 1, "seq": 1}, "/delete": {"confirm": "site"}}
    for user in (team.alice, team.bob, team.vic):
        for method, path in routes:
            r = await user.client.request(method, site + path, json=bodies.get(path))
            assert_error(r, 404, "not_found")
    # acme's operation, asked through another existing project's path: as if absent.
    for path in (f"{site}/operations/{op}", f"{site}/operations/{op}/abort"):
        method = "POST" if path.endswith("abort") else "GET"
        assert_error(await team.eve.client.request(method, path), 404, "not_found")
    blog = "/v1/orgs/acme/projects/blog/database"
    assert_error(await team.alice.client.get(f"{blog}/operations/{op}"), 404, "not_found")
    assert_error(await team.alice.client.post(f"{blog}/operations/{op}/abort"), 404, "not_found")
    # The port-forward path too: acme's admin cannot open a tunnel to eve's project.
    from svc.domains.databases.service import tunnel_target
    from svc.errors import AppError

    with pytest.raises(AppError) as refused:
        await tunnel_target(db_svc.ctx, team.alice.token, "other", "site")
    assert refused.value.status == 404
    # Eve's database, token user and password are as they were.
    assert (await team.eve.client.get(site + "/tokens")).json()["tokens"][0]["user"] == token["user"]


async def test_a_node_that_does_not_answer_is_503_no_home_node(settings: Settings) -> None:
    from svc.adapters.database.postgres import PostgresNode
    from svc.app import default_adapters
    from svc.supervisor import free_tcp_port

    adapters = default_adapters(settings)
    # An administrator's URL where nothing listens: every call to the node fails to connect.
    adapters.database = node = PostgresNode(f"postgresql://svc_admin:x@127.0.0.1:{free_tcp_port('127.0.0.1')}/postgres")
    try:
        async with running_svc(settings, adapters) as svc:
            bob = (await make_team(svc, project="web")).bob
            body = assert_error(await bob.client.post(URL), 503, "no_home_node")
            assert "did not answer" in body["message"]
            assert (await bob.client.get(URL)).json() == {"db": False}  # nothing was recorded
    finally:
        await node.close()
