"""The database node against a real PostgreSQL: svc's private cluster (initdb with scram-sha-256,
run by the supervisor). A project's role reaches its own database only; passwords reach the
cluster as SCRAM verifiers; token users act as the project's role until they are dropped."""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import pytest

from svc.adapters.database.port import DatabaseEndpoint, DatabaseNodeError, ProjectLimits
from svc.adapters.database.postgres import PostgresNode
from svc.adapters.database.process import PrivateCluster, find_postgres
from svc.kit.scram import verifier
from svc.supervisor import ProcessError
from tests.support import components

pytestmark = components.POSTGRES
LIMITS = ProjectLimits(connections=5, token_connections=1, statement_seconds=2, idle_transaction_seconds=5)


@pytest.fixture
def cluster(project_cluster: PrivateCluster) -> PrivateCluster:
    return project_cluster


def test_a_cluster_its_user_cannot_reach_is_refused_in_words(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only svc running as root runs the cluster as another user")
    binary = find_postgres()
    assert binary is not None
    hidden = tmp_path / "hidden"
    hidden.mkdir(mode=0o700)
    cluster = PrivateCluster(hidden / "projectdb", binary, user="postgres")
    with pytest.raises(ProcessError, match="cannot reach"):
        asyncio.run(cluster.start())


@pytest.fixture
async def node(cluster: PrivateCluster) -> AsyncIterator[PostgresNode]:
    node = PostgresNode(cluster.admin_url)
    yield node
    await node.close()


async def connect(endpoint: DatabaseEndpoint, user: str, password: str) -> asyncpg.Connection:
    return await asyncpg.connect(host=endpoint.host, port=endpoint.port, user=user, password=password,
                                 database=endpoint.database, timeout=10)


async def test_a_project_reaches_its_own_database_and_no_other(node: PostgresNode) -> None:
    alice, bob = f"prj_a{secrets.token_hex(4)}", f"prj_b{secrets.token_hex(4)}"
    pw_a, pw_b = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    a = await node.provision(alice, verifier(pw_a), LIMITS)
    b = await node.provision(bob, verifier(pw_b), LIMITS)
    role_a, role_b = node.names(alice)[1], node.names(bob)[1]
    con = await connect(a, role_a, pw_a)
    try:
        await con.execute("create table notes (id int primary key, body text)")
        await con.execute("insert into notes values (1, 'mine')")
        assert await con.fetchval("select body from notes where id = 1") == "mine"
        assert await con.fetchval("show statement_timeout") == "2s"
        # no rights beyond its database
        flags = await con.fetchrow("select rolsuper, rolcreaterole, rolcreatedb, rolconnlimit from pg_roles "
                                   "where rolname = current_user")
        assert tuple(flags) == (False, False, False, 5)
        with pytest.raises(asyncpg.PostgresError):
            await con.execute("create role intruder")
    finally:
        await con.close()
    # Bob's role cannot open Alice's database, nor read it from his own.
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        await connect(a, role_b, pw_b)
    con = await connect(b, role_b, pw_b)
    try:
        assert await con.fetchval("select count(*) from information_schema.tables where table_name = 'notes'") == 0
    finally:
        await con.close()
    # A wrong password is refused (the cluster holds a verifier, and checks against it).
    with pytest.raises(asyncpg.InvalidPasswordError):
        await connect(a, role_a, pw_b)
    await node.drop(alice)
    await node.drop(bob)


async def test_provisioning_again_keeps_the_data_and_takes_the_verifier(node: PostgresNode) -> None:
    project = f"prj_c{secrets.token_hex(4)}"
    password = secrets.token_urlsafe(24)
    endpoint = await node.provision(project, verifier(password), LIMITS)
    role = node.names(project)[1]
    con = await connect(endpoint, role, password)
    await con.execute("create table kept (n int)")
    await con.close()
    assert await node.provision(project, verifier(password), LIMITS) == endpoint
    con = await connect(endpoint, role, password)
    assert await con.fetchval("select count(*) from kept") == 0
    await con.close()
    await node.drop(project)
    with pytest.raises(asyncpg.PostgresError):
        await connect(endpoint, role, password)


async def test_a_token_user_acts_as_the_project_until_it_is_dropped(node: PostgresNode) -> None:
    project = f"prj_d{secrets.token_hex(4)}"
    password = secrets.token_urlsafe(24)
    endpoint = await node.provision(project, verifier(password), LIMITS)
    role = node.names(project)[1]
    user, token = f"{role}_t{secrets.token_hex(6)}", secrets.token_urlsafe(24)
    await node.add_login(project, user, verifier(token), datetime.now(UTC) + timedelta(hours=1), LIMITS)
    con = await connect(endpoint, user, token)
    try:
        assert await con.fetchval("select current_user") == role  # the session opens as the project's role
        await con.execute("create table made_by_token (n int)")
        assert await con.fetchval("select tableowner from pg_tables where tablename = 'made_by_token'") == role
    finally:
        await con.close()
    await node.drop_login(project, user)
    with pytest.raises(asyncpg.PostgresError):
        await connect(endpoint, user, token)
    # expired: refused
    expired, old = f"{role}_t{secrets.token_hex(6)}", secrets.token_urlsafe(24)
    await node.add_login(project, expired, verifier(old), datetime.now(UTC) - timedelta(minutes=1), LIMITS)
    with pytest.raises(asyncpg.InvalidPasswordError):
        await connect(endpoint, expired, old)
    await node.drop(project)


async def test_a_role_whose_password_is_not_svcs_gets_svcs_again(node: PostgresNode, cluster: PrivateCluster,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    """restore_passwords() on the node (the watchdog's turn drives it: test_watchdog.py). A verifier
    found good is not checked again; one whose iteration count svc never uses is not computed, only
    replaced; an administrator that cannot read pg_authid skips the check and says so once."""
    project = f"prj_e{secrets.token_hex(4)}"
    password = secrets.token_urlsafe(24)
    endpoint = await node.provision(project, verifier(password), LIMITS)
    role = node.names(project)[1]
    admin = await asyncpg.connect(cluster.admin_url)
    outsider = f"svc_ext_{secrets.token_hex(4)}"
    try:
        assert await node.restore_passwords({project: password}) == []
        for found in ("taken", verifier("taken"), "SCRAM-SHA-256$2000000000:AAAAAAAAAAAAAAAAAAAAAA==$AAAA:AAAA"):
            await admin.execute(f"ALTER ROLE \"{role}\" PASSWORD '{found}'")
            assert await node.restore_passwords({project: password}) == [project]
            assert await node.restore_passwords({project: password}) == []
            await (await connect(endpoint, role, password)).close()
        # An administrator that may create roles and databases but is not a superuser.
        await admin.execute(f"CREATE ROLE {outsider} LOGIN CREATEROLE CREATEDB PASSWORD 'outsider'")
        external = PostgresNode(f"postgresql://{outsider}:outsider@127.0.0.1:{cluster.port}/postgres")
        await admin.execute(f"ALTER ROLE \"{role}\" PASSWORD 'taken'")
        with caplog.at_level("WARNING", logger="svc.database"):
            assert await external.restore_passwords({project: password}) == []
            assert await external.restore_passwords({project: password}) == []
        await external.close()
        assert [r.getMessage() for r in caplog.records].count(
            "project databases: the administrator cannot read pg_authid (not a superuser), so the watchdog cannot "
            "check that each project's role keeps svc's password") == 1
    finally:
        await admin.execute(f"DROP ROLE IF EXISTS {outsider}")
        await admin.close()
        await node.drop(project)


async def test_the_private_cluster_keeps_its_port_and_data_across_restarts(cluster: PrivateCluster,
                                                                           tmp_path: Path) -> None:
    port = cluster.port
    node = PostgresNode(cluster.admin_url)
    # (Its pool's connections end with the cluster's stop below: a new one is made after.)
    project = f"prj_e{secrets.token_hex(4)}"
    password = secrets.token_urlsafe(24)
    endpoint = await node.provision(project, verifier(password), LIMITS)
    await cluster.stop()
    await cluster.start()
    assert cluster.port == port
    con = await connect(endpoint, node.names(project)[1], password)
    await con.close()
    await node.close()
    await node.drop(project)
    await node.close()


async def test_a_dump_waits_for_a_held_lock_no_longer_than_its_bound(node: PostgresNode, cluster: PrivateCluster,
                                                                    tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A project holding a table's lock fails the dump in words once the lock wait passes (here
    1 s), instead of holding the dump's turn and svc's connections for as long as it likes."""
    from svc.adapters.database import backups

    monkeypatch.setattr(backups, "LOCK_WAIT", "1s")
    project = f"prj_f{secrets.token_hex(4)}"
    password = secrets.token_urlsafe(24)
    endpoint = await node.provision(project, verifier(password), LIMITS)
    holder = await connect(endpoint, node.names(project)[1], password)
    try:
        await holder.execute("create table t (x int)")
        await holder.execute("begin; lock table t in access exclusive mode")
        with pytest.raises(DatabaseNodeError, match="lock timeout"):
            await asyncio.wait_for(node.dump(project, tmp_path / "held.dump"), 90)
        await holder.execute("rollback")
        assert await node.dump(project, tmp_path / "free.dump") == {"public.t": 0}
    finally:
        await holder.close()
        await node.drop(project)


async def test_dumps_and_restores_take_turns_two_at_a_time(node: PostgresNode, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from svc.adapters.database import backups

    running, most = 0, 0
    release = asyncio.Event()

    async def dump(admin_url: str, database: str, dest: Path) -> dict[str, int]:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await release.wait()
        running -= 1
        return {}

    monkeypatch.setattr(backups, "dump", dump)
    dumps = [asyncio.create_task(node.dump(f"prj_g{i}", tmp_path / f"{i}.dump")) for i in range(6)]
    while running < 2:
        await asyncio.sleep(0.01)
    for _ in range(20):  # others get every chance to start, and none does
        await asyncio.sleep(0)
    assert running == 2
    release.set()
    await asyncio.gather(*dumps)
    assert most == 2
