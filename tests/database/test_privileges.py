"""What a project's role tries beyond its own database (issue 42's probe), on svc's real private
cluster: programs, server files, untrusted extensions, other roles, other databases, other sessions.
Every attempt is refused by PostgreSQL itself."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator

import asyncpg
import pytest

from svc.adapters.database.postgres import PostgresNode
from svc.adapters.database.process import PrivateCluster
from svc.kit.scram import verifier
from tests.database.test_node import LIMITS, connect
from tests.support import components

pytestmark = components.POSTGRES


@pytest.fixture
async def node(project_cluster: PrivateCluster) -> AsyncIterator[PostgresNode]:
    node = PostgresNode(project_cluster.admin_url)
    yield node
    await node.close()


async def test_a_project_role_reaches_nothing_of_the_server_or_its_neighbours(node: PostgresNode) -> None:
    mine, theirs = f"prj_m{secrets.token_hex(4)}", f"prj_t{secrets.token_hex(4)}"
    pw_m, pw_t = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    home = await node.provision(mine, verifier(pw_m), LIMITS)
    there = await node.provision(theirs, verifier(pw_t), LIMITS)
    role_m, role_t = node.names(mine)[1], node.names(theirs)[1]
    neighbour = await connect(there, role_t, pw_t)
    con = await connect(home, role_m, pw_m)
    try:
        await neighbour.execute("create table private (body text); insert into private values ('theirs')")
        neighbour_pid = await neighbour.fetchval("select pg_backend_pid()")
        refused = [
            "copy (select 1) to program 'touch /tmp/svc-escaped'",
            "create table loot (line text); copy loot from program 'id'",
            "copy (select 1) to '/tmp/svc-escaped'",
            "select pg_read_file('/etc/passwd')",
            "select pg_ls_dir('.')",
            "select lo_import('/etc/passwd')",
            "create extension file_fdw",
            "create extension dblink",
            "create extension adminpack",
            f"set role {role_t}",
            "set role postgres",
            f"set session authorization {role_t}",
            "alter system set max_connections = 10000",
            f"grant {role_t} to {role_m}",
            f"alter role {role_t} password 'taken'",
            f"select pg_terminate_backend({neighbour_pid})",
            f"select pg_cancel_backend({neighbour_pid})",
            "select pg_reload_conf()",
            "create database another",
            "create role intruder login",
        ]
        for statement in refused:
            async with con.transaction():
                try:
                    await con.execute(statement)
                except asyncpg.PostgresError:
                    pass
                else:
                    raise AssertionError(f"a project's role ran {statement!r}")
        # Other sessions' statements stay hidden; its neighbour's session is alive and its table unread.
        seen = await con.fetchval("select query from pg_stat_activity where pid = $1", neighbour_pid)
        assert seen == "<insufficient privilege>"
        assert await neighbour.fetchval("select body from private") == "theirs"
    finally:
        await con.close()
        await neighbour.close()
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        await asyncpg.connect(host=home.host, port=home.port, user=role_m, password=pw_m, database=there.database,
                              timeout=10)
    await node.drop(mine)
    await node.drop(theirs)
