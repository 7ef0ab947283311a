"""The credential cache of read requests (svc.auth.cache) is exact: every change to a credential,
a membership, a role or an org is seen by the very next GET, in this app and in another app
sharing the PostgreSQL store; a second process on an SQLite store refuses to start."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from pathlib import Path

import asyncpg
import httpx
import pytest
from sqlalchemy import text, update

from svc.auth.cache import AuthCache
from svc.auth.caller import Principal, Resolved
from svc.kit.clock import utcnow
from svc.kit.tokens import token_hash
from svc.models import User, UserSession
from svc.settings import Settings
from tests.support import stores
from tests.support.api import Svc, assert_error, running_svc
from tests.support.api import User as Login
from tests.support.wait import WAIT_SECONDS

ROOT = Path(__file__).resolve().parents[2]
MEMBERS = "/v1/orgs/acme/members"  # needs the member role


def cache_of(svc: Svc) -> AuthCache:
    cache: AuthCache = svc.app.state.auth_cache
    return cache


async def cached_get(svc: Svc, client: httpx.AsyncClient, path: str, status: int = 200) -> None:
    """GET twice; the second must be answered from the cache, or the test below it proves nothing."""
    assert (await client.get(path)).status_code == status
    hits = cache_of(svc).hits
    assert (await client.get(path)).status_code == status
    assert cache_of(svc).hits > hits, "the second GET did not use the cache"


async def org_with(svc: Svc, admin: str, **members: str) -> dict[str, Login]:
    """Org `acme` with `admin` as admin and the given subjects with their roles; their logins."""
    users = {admin: await svc.login(admin)}
    admin_client = users[admin].client
    assert (await admin_client.post("/v1/orgs", json={"slug": "acme"})).status_code == 201
    for subject, role in members.items():
        users[subject] = await svc.login(subject)
        r = await admin_client.post(MEMBERS, json={"provider": "dev", "subject": subject, "role": role})
        assert r.status_code == 201, r.text
    return users


# --- changes made through this app ---------------------------------------------------------------

async def test_a_revoked_access_token_is_refused_on_the_next_get(svc: Svc) -> None:
    await org_with(svc, "alice")
    alice = await svc.login("alice")
    created = (await alice.client.post("/v1/me/tokens", json={"name": "ci"})).json()
    pat = svc.client(created["token"])
    await cached_get(svc, pat, "/v1/me")
    await cached_get(svc, pat, MEMBERS)
    assert (await alice.client.delete(f"/v1/me/tokens/{created['id']}")).status_code == 204
    assert_error(await pat.get("/v1/me"), 401, "unauthorized")
    assert_error(await pat.get(MEMBERS), 401, "unauthorized")


async def test_an_ended_session_is_refused_on_the_next_get(svc: Svc) -> None:
    alice = await svc.login("alice")
    await cached_get(svc, alice.client, "/v1/me")
    async with svc.ctx.db.transaction() as s:  # as a logout or an expiry would
        await s.execute(update(UserSession).where(UserSession.token_hash == token_hash(alice.token))
                        .values(expires_at=utcnow() - timedelta(seconds=1)))
    assert_error(await alice.client.get("/v1/me"), 401, "unauthorized")
    assert_error(await alice.client.get(f"/v1/orgs/{alice.personal_org}/members"), 401, "unauthorized")


async def test_a_removed_member_gets_404_on_the_next_get(svc: Svc) -> None:
    users = await org_with(svc, "alice", bob="member")
    alice, bob = users["alice"], users["bob"]
    await cached_get(svc, bob.client, MEMBERS)
    assert (await alice.client.delete(f"{MEMBERS}/{bob.id}")).status_code == 204
    assert_error(await bob.client.get(MEMBERS), 404, "not_found")


async def test_a_demoted_admin_gets_403_on_the_next_get(svc: Svc) -> None:
    users = await org_with(svc, "alice", bob="admin")
    alice, bob = users["alice"], users["bob"]
    await cached_get(svc, bob.client, MEMBERS)
    r = await alice.client.put(f"{MEMBERS}/{bob.id}", json={"role": "viewer"})
    assert r.status_code == 200, r.text
    body = assert_error(await bob.client.get(MEMBERS), 403, "forbidden")
    assert body["details"] == {"required": "member", "role": "viewer"}


async def test_a_new_member_is_let_in_on_the_next_get(svc: Svc) -> None:
    users = await org_with(svc, "alice")
    carol = await svc.login("carol")
    await cached_get(svc, carol.client, MEMBERS, 404)  # "not a member" is cached too
    r = await users["alice"].client.post(MEMBERS, json={"provider": "dev", "subject": "carol", "role": "member"})
    assert r.status_code == 201
    assert (await carol.client.get(MEMBERS)).status_code == 200


async def test_a_deleted_org_is_404_on_the_next_get(svc: Svc) -> None:
    users = await org_with(svc, "alice", bob="viewer")
    alice, bob = users["alice"], users["bob"]
    await cached_get(svc, alice.client, MEMBERS)
    await cached_get(svc, bob.client, "/v1/orgs/acme/notifications")
    r = await alice.client.request("DELETE", "/v1/orgs/acme", json={"confirm": "acme"})
    assert r.status_code == 204
    assert_error(await alice.client.get(MEMBERS), 404, "not_found")
    assert_error(await bob.client.get("/v1/orgs/acme/notifications"), 404, "not_found")


async def test_a_textual_write_counts_as_a_change(svc: Svc) -> None:
    users = await org_with(svc, "alice", bob="member")
    bob = users["bob"]
    await cached_get(svc, bob.client, MEMBERS)
    async with svc.ctx.db.transaction() as s:
        await s.execute(text("UPDATE memberships SET role = 'viewer' WHERE user_id = :u"), {"u": bob.id})
    assert_error(await bob.client.get(MEMBERS), 403, "forbidden")


async def test_writes_resolve_from_the_store(svc: Svc, store: str) -> None:
    """A write never trusts the cache: here the role is changed behind svc's back (no session, so
    nothing tells the cache), and the admin-only POST sees the change all the same."""
    users = await org_with(svc, "alice")
    alice = users["alice"]
    await svc.login("bob")  # a login is a write: done before the cache is filled
    await cached_get(svc, alice.client, MEMBERS)
    sql = "UPDATE memberships SET role = 'viewer' WHERE user_id = "
    if store == "sqlite":
        def write() -> None:  # in a thread: the app's writers need the event loop to finish
            with sqlite3.connect(svc.ctx.settings.data_dir / "svc.sqlite3", timeout=30) as lite:
                lite.execute(sql + "?", (alice.id,))

        await asyncio.to_thread(write)
    else:
        conn = await asyncpg.connect(svc.ctx.settings.database_url)
        try:
            await conn.execute(sql + "$1", alice.id)
        finally:
            await conn.close()
    r = await alice.client.post(MEMBERS, json={"provider": "dev", "subject": "bob", "role": "member"})
    assert_error(r, 403, "forbidden")


# --- several apps on one store -------------------------------------------------------------------

@pytest.fixture
async def pg_settings(tmp_path: Path) -> AsyncIterator[Settings]:
    url = await stores.new_pg_database()
    try:
        yield Settings(data_dir=tmp_path / "data", database_url=url, enable_dev_auth=True,
                       public_url="http://svc.test")
    finally:
        await stores.drop_pg_database(url)


@pytest.fixture
def sqlite_settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", enable_dev_auth=True, public_url="http://svc.test")


async def eventually(check: Callable[[], Awaitable[bool]], what: str, seconds: float = WAIT_SECONDS) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not await check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"not within {seconds} s: {what}")
        await asyncio.sleep(0.02)


async def test_a_change_made_by_another_process_reaches_this_one(pg_settings: Settings) -> None:
    """Two apps on one PostgreSQL database, as two `svc serve` processes: nothing but the store
    connects them (NOTIFY svc_auth)."""
    async with running_svc(pg_settings, run_workers=False) as one, \
            running_svc(pg_settings, run_workers=False) as two:
        users = await org_with(one, "alice", bob="admin")
        bob = users["bob"]
        await cached_get(one, bob.client, MEMBERS)
        alice_on_two = two.client(users["alice"].token)
        r = await alice_on_two.put(f"{MEMBERS}/{bob.id}", json={"role": "viewer"})
        assert r.status_code == 200, r.text

        async def forbidden() -> bool:
            return (await bob.client.get(MEMBERS)).status_code == 403

        await eventually(forbidden, "the demotion made on the other app")
        assert (await two.client(bob.token).get(MEMBERS)).status_code == 403


async def test_a_lost_listen_connection_turns_the_cache_off_until_it_is_back(pg_settings: Settings) -> None:
    async with running_svc(pg_settings, run_workers=False) as svc:
        users = await org_with(svc, "alice", bob="admin")
        bob = users["bob"]
        await cached_get(svc, bob.client, MEMBERS)
        listener = svc.app.state.auth_keeper.listener
        assert listener is not None and listener.server_pid is not None
        old_pid = listener.server_pid
        conn = await asyncpg.connect(pg_settings.database_url)
        try:
            assert await conn.fetchval("SELECT pg_terminate_backend($1)", old_pid)

            async def reconnected() -> bool:
                return listener.server_pid not in (None, old_pid) and cache_of(svc).enabled

            await eventually(reconnected, "the LISTEN connection is back")
            # A change whose notification would have been missed while the connection was down.
            await conn.execute("UPDATE memberships SET role = 'viewer' WHERE user_id = $1", bob.id)
        finally:
            await conn.close()
        assert_error(await bob.client.get(MEMBERS), 403, "forbidden")
        await cached_get(svc, bob.client, MEMBERS, 403)  # and the cache is in use again


async def test_two_apps_of_one_process_on_one_sqlite_store_clear_each_other(sqlite_settings: Settings) -> None:
    async with running_svc(sqlite_settings, run_workers=False) as one, \
            running_svc(sqlite_settings, run_workers=False) as two:
        users = await org_with(one, "alice", bob="member")
        bob = users["bob"]
        await cached_get(one, bob.client, MEMBERS)
        alice_on_two = two.client(users["alice"].token)
        assert (await alice_on_two.delete(f"{MEMBERS}/{bob.id}")).status_code == 204
        assert_error(await bob.client.get(MEMBERS), 404, "not_found")


async def test_two_apps_of_one_process_on_two_sqlite_stores_share_no_cache(tmp_path: Path) -> None:
    """What two apps of one process share is their store's lock, by data directory: apps on stores
    of their own share nothing, and a write on one clears no other's cache."""
    settings = {name: Settings(data_dir=tmp_path / name, enable_dev_auth=True, public_url="http://svc.test")
                for name in ("one", "two")}
    async with running_svc(settings["one"], run_workers=False) as one, \
            running_svc(settings["two"], run_workers=False) as two:
        bob = (await org_with(one, "alice", bob="member"))["bob"]
        await cached_get(one, bob.client, MEMBERS)
        generation = cache_of(one).generation
        assert (await (await two.login("carol")).client.post("/v1/orgs", json={"slug": "other"})).status_code == 201
        assert cache_of(two).generation > 0, "the write on two did not clear its own cache"
        assert cache_of(one).generation == generation, "a write on another store cleared this app's cache"
        await cached_get(one, bob.client, MEMBERS)


OPEN_APP = """
import asyncio, sys
from svc.app import create_app
from svc.settings import Settings

async def main() -> None:
    app = create_app(Settings(data_dir=sys.argv[1]), run_workers=False)
    async with app.router.lifespan_context(app):
        print("started")

asyncio.run(main())
"""


def open_app_in_another_process(data_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    return subprocess.run([sys.executable, "-c", OPEN_APP, str(data_dir)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


async def test_a_second_process_on_an_sqlite_store_refuses_to_start(sqlite_settings: Settings) -> None:
    async with running_svc(sqlite_settings, run_workers=False):
        p = await asyncio.to_thread(open_app_in_another_process, sqlite_settings.data_dir)
        assert p.returncode != 0 and "started" not in p.stdout
        last = p.stderr.strip().splitlines()[-1]
        assert last.startswith("svc.auth.invalidation.StoreInUse: Another svc process "
                               f"(pid {os.getpid()}) is using the SQLite store in "), p.stderr
        assert "use PostgreSQL (SVC_DATABASE_URL)" in last
    # Once this process has stopped serving the store, another may.
    p = await asyncio.to_thread(open_app_in_another_process, sqlite_settings.data_dir)
    assert p.returncode == 0 and "started" in p.stdout, p.stderr


# --- the cache's own safety nets -----------------------------------------------------------------

def entry(user_id: str = "usr_1") -> Resolved:
    return Resolved(Principal(user=User(id=user_id), kind="session", credential_id="ses_1"))


def test_the_clock_age_bound_and_generation_are_checked() -> None:
    cache = AuthCache(max_entries=2)
    cache.store(cache.generation, "a", None, entry(), None)
    assert cache.lookup("a", None) is None, "off until enabled"
    cache.enable()
    cache.store(cache.generation, "live", None, entry(), utcnow() + timedelta(hours=1))
    cache.store(cache.generation, "expired", None, entry(), utcnow() - timedelta(seconds=1))
    assert cache.lookup("live", None) is not None
    assert cache.lookup("expired", None) is None
    assert cache.lookup("live", "acme") is None, "membership of an org not cached"

    before = cache.generation
    cache.clear()  # a change committed while a read was under way: its result is not kept
    cache.store(before, "raced", None, entry(), None)
    assert cache.lookup("raced", None) is None

    for key in ("x", "y", "z"):
        cache.store(cache.generation, key, None, entry(), None)
    assert cache.lookup("x", None) is None and cache.lookup("z", None) is not None  # the newest 2 kept

    old = AuthCache(max_age=0.0)
    old.enable()
    old.store(old.generation, "a", None, entry(), None)
    assert old.lookup("a", None) is None
