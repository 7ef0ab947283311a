"""Generations, restore and delete of a project's database, against a real PostgreSQL cluster:
a generation only when the database changed, each proven restorable by a scratch restore; a
restore brings back exactly the rows of the chosen generation and drops the writes made after it;
a generation whose archive no longer matches its sha256 is refused with the database untouched;
delete keeps the final generation listed; abort, 404 and 409 rules."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from svc.domains.databases import jobs
from svc.domains.databases.kinds import DatabaseJob
from svc.settings import Settings
from svc.uow import Tx, unit_of_work
from tests.support.api import Svc, User, assert_error, job_runner, running_svc
from tests.support.projectdb import as_project
from tests.support.team import Team, make_team
from tests.support.wait import until

URL = "/v1/orgs/acme/projects/web/database"




async def _check(svc: Svc) -> int:
    async with unit_of_work(svc.ctx, Tx.READ_THEN_WRITE) as uow:
        return await jobs.check_all(uow)


async def _generations(user: User, count: int, *, verified: bool = True) -> dict[str, Any]:
    """The list, once it has `count` generations all verified (30 s at most)."""
    body: dict[str, Any] = {}
    for _ in range(600):
        body = (await user.client.get(URL + "/generations")).json()
        gens = body["generations"]
        if len(gens) == count and (not verified or all(g["verified"] is not None for g in gens)):
            return body
        await asyncio.sleep(0.05)
    raise AssertionError(f"not {count} verified generations: {body}")


async def _finished(user: User, op_id: str) -> dict[str, Any]:
    op: dict[str, Any] = {}
    for _ in range(600):
        op = (await user.client.get(f"{URL}/operations/{op_id}")).json()
        if op["terminalCode"] is not None:
            return op
        await asyncio.sleep(0.05)
    raise AssertionError(f"operation did not finish: {op}")


@pytest.fixture
async def team(db_svc: Svc) -> AsyncIterator[Team]:
    yield await make_team(db_svc, project="web")


async def test_generations_restore_and_the_writes_after_it(db_svc: Svc, team: Team) -> None:
    alice, bob = team.alice, team.bob
    creds = (await bob.client.post(URL)).json()
    await as_project(creds, "create table notes (id int primary key, body text)",
               "insert into notes values (1, 'one'), (2, 'two')")
    assert await _check(db_svc) == 1
    first = (await _generations(bob, 1))["generations"][0]
    assert (first["epoch"], first["seq"], first["kind"]) == (1, 1, "scheduled")
    assert first["verified"] is True and first["restoreSeconds"] > 0
    assert first["bytes"] > 0 and len(first["sha256"]) == 64 and first["offsiteKey"].startswith("databases/")

    # No change since: no generation, and the check's time is recorded.
    assert await _check(db_svc) == 0
    listed = await _generations(bob, 1)
    assert listed["lastCheckedAt"] is not None

    await as_project(creds, "insert into notes values (3, 'three')", "update notes set body = 'TWO' where id = 2")
    assert await _check(db_svc) == 1
    second = (await _generations(bob, 2))["generations"][0]  # newest first
    assert (second["epoch"], second["seq"]) == (1, 2) and second["verified"] is True

    # Writes after the chosen generation are lost by a restore: the rows are exactly generation 1's.
    await as_project(creds, "insert into notes values (4, 'four')", "create table later (x int)")
    assert_error(await bob.client.post(URL + "/restore", json={"epoch": 1, "seq": 1}), 403, "forbidden")
    assert_error(await alice.client.post(URL + "/restore", json={"epoch": 1, "seq": 9}), 404, "not_found")
    assert_error(await alice.client.post(URL + "/restore", json={"epoch": 1}), 400, "bad_request")
    r = await alice.client.post(URL + "/restore", json={"epoch": 1, "seq": 1})
    assert r.status_code == 202, r.text
    op_id = r.json()["operationId"]
    again = await alice.client.post(URL + "/restore", json={"epoch": 1, "seq": 2})
    assert again.status_code in (202, 409)  # 409 operation_in_progress while the first runs
    if again.status_code == 409:
        assert again.json()["code"] == "operation_in_progress"
    op = await _finished(bob, op_id)
    assert (op["kind"], op["phase"], op["terminalCode"]) == ("restore", "done", "ok")
    if again.status_code == 202:
        await _finished(bob, again.json()["operationId"])
        rows = await as_project(creds, "select id, body from notes order by id")
        assert rows == [(1, "one"), (2, "TWO"), (3, "three")]
    else:
        assert await as_project(creds, "select id, body from notes order by id") == [(1, "one"), (2, "two")]
        assert await as_project(creds, "select count(*) from pg_tables where tablename = 'later'") == [(0,)]
    # What the restore replaced is kept (pre_restore, in epoch 1); the next generation is epoch 2's.
    gens = (await _generations(bob, 3 if again.status_code == 409 else 4))["generations"]
    assert gens[0]["kind"] == "pre_restore" and gens[0]["epoch"] == 1
    assert_error(await alice.client.post(f"{URL}/operations/{op_id}/abort"), 409, "not_abortable")
    await as_project(creds, "insert into notes values (5, 'five')")
    assert await _check(db_svc) == 1
    newest = (await _generations(bob, len(gens) + 1))["generations"][0]
    assert (newest["epoch"], newest["seq"]) == (2 if again.status_code == 409 else 3, 1)


async def test_a_tampered_generation_is_refused_and_the_database_untouched(db_svc: Svc, team: Team) -> None:
    alice = team.alice
    creds = (await alice.client.post(URL)).json()
    await as_project(creds, "create table t (x int)", "insert into t values (1)")
    await _check(db_svc)
    gen = (await _generations(alice, 1))["generations"][0]
    await as_project(creds, "insert into t values (2)")
    blobs = db_svc.ctx.settings.data_dir / "blobs"
    archive = next(p for p in blobs.rglob("*.dump"))
    archive.write_bytes(archive.read_bytes()[:-10] + b"0123456789")
    r = await alice.client.post(URL + "/restore", json={"epoch": gen["epoch"], "seq": gen["seq"]})
    op = await _finished(alice, r.json()["operationId"])
    assert op["terminalCode"] == "failed"
    assert await as_project(creds, "select x from t order by x") == [(1,), (2,)]
    notes = (await alice.client.get("/v1/orgs/acme/notifications")).json()["notifications"]
    assert any("sha256" in n["message"] for n in notes), notes


async def test_delete_keeps_the_final_generation(db_svc: Svc, team: Team) -> None:
    alice, bob = team.alice, team.bob
    creds = (await bob.client.post(URL)).json()
    await as_project(creds, "create table t (x int)", "insert into t values (42)")
    assert_error(await bob.client.post(URL + "/delete", json={"confirm": "web"}), 403, "forbidden")
    assert_error(await alice.client.post(URL + "/delete", json={"confirm": "Web"}), 400, "confirm_mismatch")
    assert (await bob.client.get(URL)).json() == {"db": True}  # nothing started
    r = await alice.client.post(URL + "/delete", json={"confirm": "web"})
    assert r.status_code == 202, r.text
    op = await _finished(bob, r.json()["operationId"])
    assert (op["kind"], op["terminalCode"]) == ("delete", "ok")
    assert (await bob.client.get(URL)).json() == {"db": False}
    assert_error(await bob.client.get(URL + "/connect"), 404)

    async def final_kept() -> dict[str, Any] | None:
        # The newest, and verified: a scheduled one the backup cycle took before may be listed too.
        gens = (await bob.client.get(URL + "/generations")).json()["generations"]
        return gens[0] if gens and gens[0]["kind"] == "final" and gens[0]["verified"] is not None else None

    final = await until(final_kept, what="the final generation, verified")
    assert final["verified"] is True
    with pytest.raises((asyncpg.InvalidCatalogNameError, asyncpg.InvalidPasswordError,
                        asyncpg.InvalidAuthorizationSpecificationError)):
        await as_project(creds, "select 1")
    # Another project's operation id is not found under this project.
    assert_error(await bob.client.get(f"/v1/orgs/acme/projects/nope/database/operations/{op['id']}"), 404)
    # The database can be created again (a new one, empty).
    again = (await bob.client.post(URL)).json()
    assert await as_project(again, "select count(*) from pg_tables where schemaname = 'public'") == [(0,)]


async def test_abort_a_delete_before_committing(settings: Settings, project_cluster: Any) -> None:
    from svc.adapters.database.postgres import PostgresNode
    from svc.app import default_adapters

    adapters = default_adapters(settings)
    adapters.database = node = PostgresNode(project_cluster.admin_url)
    try:
        async with running_svc(settings, adapters, run_workers=False) as svc:
            team = await make_team(svc, project="web")
            alice = team.alice
            creds = (await alice.client.post(URL)).json()
            await as_project(creds, "create table t (x int)")
            runner = job_runner(svc)
            op_id = (await alice.client.post(URL + "/delete", json={"confirm": "web"})).json()["operationId"]
            await runner.run_once()  # draining: the database is closed
            op = (await alice.client.get(f"{URL}/operations/{op_id}")).json()
            assert op["phase"] == "sealing" and op["terminalCode"] is None
            with pytest.raises(asyncpg.PostgresError):
                await as_project(creds, "select 1")
            aborted = await alice.client.post(f"{URL}/operations/{op_id}/abort")
            assert aborted.status_code == 200 and aborted.json()["terminalCode"] == "aborted"
            assert_error(await alice.client.post(f"{URL}/operations/{op_id}/abort"), 409, "not_abortable")
            while await runner.run_once():
                pass
            assert await as_project(creds, "select count(*) from t") == [(0,)]  # open again, as it was
            assert (await alice.client.get(URL)).json() == {"db": True}
    finally:
        await node.close()


async def test_project_teardown_drops_its_database_and_keeps_a_final_generation(db_svc: Svc, team: Team,
                                                                              project_cluster: Any) -> None:
    from sqlalchemy import select

    from svc.models import DatabaseGeneration, ProjectDatabase
    from tests.support.api import wait_operation

    alice = team.alice
    creds = (await alice.client.post(URL)).json()
    await as_project(creds, "create table t (x int)", "insert into t values (7)")
    r = await alice.client.request("DELETE", "/v1/orgs/acme/projects/web", json={"confirm": "web"})
    assert r.status_code == 202, r.text
    op = await wait_operation(alice, "acme", r.json()["operationId"])
    assert op["terminalCode"] == "ok"
    admin = await asyncpg.connect(project_cluster.admin_url)
    try:
        assert await admin.fetchval("select count(*) from pg_database where datname = $1", creds["database"]) == 0
        assert await admin.fetchval("select count(*) from pg_roles where rolname = $1", creds["user"]) == 0
    finally:
        await admin.close()
    async with db_svc.ctx.db.transaction(write=False) as s:
        assert (await s.scalars(select(ProjectDatabase))).all() == []
        kinds = [g.kind for g in (await s.scalars(select(DatabaseGeneration))).all()]
        assert kinds == ["final"]


@pytest.mark.parametrize("crash_in", ["draining", "sealing", "committing", "reactivation"])
async def test_a_crash_in_any_restore_phase_resumes_to_exactly_the_chosen_generation(
        settings: Settings, project_cluster: Any, crash_in: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worst moment for a crash: a phase's work on the node done, its record not written (a
    kill -9 between them). The job runs again and the operation ends with the database holding
    exactly the chosen generation's rows."""
    from datetime import timedelta

    from sqlalchemy import update

    from svc.adapters.database.postgres import PostgresNode
    from svc.app import default_adapters
    from svc.domains.databases import queries
    from svc.kit.clock import utcnow
    from svc.models import Job, JobStatus

    adapters = default_adapters(settings)
    adapters.database = node = PostgresNode(project_cluster.admin_url)
    try:
        async with running_svc(settings, adapters, run_workers=False) as svc:
            runner = job_runner(svc)
            alice = (await make_team(svc, project="web")).alice
            creds = (await alice.client.post(URL)).json()
            await as_project(creds, "create table t (x int)", "insert into t values (1), (2)")
            assert await _check(svc) == 1
            while await runner.run_once():  # the generation and its verification
                pass
            await as_project(creds, "insert into t values (3)", "delete from t where x = 1")
            op_id = (await alice.client.post(URL + "/restore", json={"epoch": 1, "seq": 1})).json()["operationId"]

            real_lock = queries.lock_project
            crashed = []

            async def crash_once(session: Any, project_id: str) -> None:
                op = (await alice.client.get(f"{URL}/operations/{op_id}")).json()
                if op["phase"] == crash_in and not crashed:
                    crashed.append(crash_in)
                    raise RuntimeError("killed between the phase's work and its record")
                await real_lock(session, project_id)

            monkeypatch.setattr(queries, "lock_project", crash_once)
            for _ in range(20):
                while await runner.run_once():
                    pass
                async with svc.ctx.db.transaction() as s:  # the retry's backoff, passed
                    await s.execute(update(Job).where(Job.kind == DatabaseJob.operation,
                                                      Job.status == JobStatus.queued)
                                    .values(run_at=utcnow() - timedelta(seconds=1)))
                op = (await alice.client.get(f"{URL}/operations/{op_id}")).json()
                if op["terminalCode"] is not None:
                    break
            assert crashed == [crash_in]
            assert (op["phase"], op["terminalCode"]) == ("done", "ok"), op
            assert await as_project(creds, "select x from t order by x") == [(1,), (2,)]
            gens = (await alice.client.get(URL + "/generations")).json()["generations"]
            assert [(g["epoch"], g["seq"], g["kind"]) for g in gens] == [(1, 2, "pre_restore"), (1, 1, "scheduled")]
    finally:
        await node.close()
