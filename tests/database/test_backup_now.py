"""Back up now (POST .../database/generations), against a real PostgreSQL cluster: a generation
taken on request, listed and counted in the epoch's seq as the scheduled ones, proven by a scratch
restore, and restorable; one at a time per project (409 operation_in_progress), the database open
meanwhile (export works); a member may, a viewer may not, another org's project is 404; a backup
whose proof fails ends failed in words. The job worker is the test's own, so each step is seen."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import select

from svc.app import default_adapters
from svc.domains.databases import jobs
from svc.jobs.worker import Worker
from svc.models import DatabaseGeneration
from svc.settings import Settings
from svc.uow import Tx, unit_of_work
from tests.support.api import Svc, assert_error, job_runner, running_svc
from tests.support.projectdb import as_project
from tests.support.team import Team, make_team

URL = "/v1/orgs/acme/projects/web/database"




async def _drain(runner: Worker) -> None:
    while await runner.run_once():
        pass


@pytest.fixture
async def held(settings: Settings, project_cluster: Any) -> AsyncIterator[tuple[Svc, Worker]]:
    """svc on the shared cluster whose jobs run only when the test runs them."""
    from svc.adapters.database.postgres import PostgresNode

    adapters = default_adapters(settings)
    adapters.database = node = PostgresNode(project_cluster.admin_url)
    try:
        async with running_svc(settings, adapters, run_workers=False) as svc:
            yield svc, job_runner(svc)
    finally:
        await node.close()


async def test_back_up_now_is_a_generation_proven_counted_and_restorable(held: tuple[Svc, Worker]) -> None:
    svc, runner = held
    team: Team = await make_team(svc, project="web", other_org=True)
    alice, bob, vic, eve = team.alice, team.bob, team.vic, team.eve
    # No database yet: nothing to back up.
    assert_error(await bob.client.post(URL + "/generations"), 404, "not_found")
    creds = (await bob.client.post(URL)).json()
    await as_project(creds, "create table notes (id int primary key)", "insert into notes values (1), (2)")
    # A viewer may not; another org's person finds no such project; nothing starts.
    assert_error(await vic.client.post(URL + "/generations"), 403, "forbidden")
    assert_error(await eve.client.post(URL + "/generations"), 404, "not_found")
    assert_error(await bob.client.get(URL + "/operations/" + "x" * 65), 400, "bad_request")

    # Eight at once (a member, as export): one starts, the others are refused while it runs.
    answers = await asyncio.gather(*(bob.client.post(URL + "/generations") for _ in range(8)))
    assert sorted(a.status_code for a in answers) == [202] + [409] * 7
    refused = [a.json() for a in answers if a.status_code == 409]
    assert {r["code"] for r in refused} == {"operation_in_progress"}
    op_id = next(a.json()["operationId"] for a in answers if a.status_code == 202)
    assert {r["details"]["operationId"] for r in refused} == {op_id}
    op = (await bob.client.get(f"{URL}/operations/{op_id}")).json()
    assert (op["kind"], op["phase"], op["terminalCode"], op["generation"]) == ("backup", "dumping", None, None)
    # Meanwhile the database stays open: a restore or delete waits, an export does not.
    assert_error(await alice.client.post(URL + "/delete", json={"confirm": "web"}), 409, "operation_in_progress")
    assert (await bob.client.post(URL + "/export")).status_code == 200
    assert_error(await alice.client.post(f"{URL}/operations/{op_id}/abort"), 409, "not_abortable")
    assert (await bob.client.get(URL + "/generations")).json()["generations"] == []

    await _drain(runner)
    op = (await bob.client.get(f"{URL}/operations/{op_id}")).json()
    assert (op["kind"], op["phase"], op["terminalCode"]) == ("backup", "done", "ok"), op
    assert op["generation"] == {"epoch": 1, "seq": 1} and op["error"] is None
    listed = (await bob.client.get(URL + "/generations")).json()
    [taken] = listed["generations"]
    assert (taken["epoch"], taken["seq"], taken["kind"], taken["verified"]) == (1, 1, "manual", True)
    assert taken["restoreSeconds"] > 0 and taken["bytes"] > 0 and listed["lastCheckedAt"] is not None

    # Counted as a generation: the hourly check sees no change since it, and the next change's
    # generation is seq 2; a second backup now is seq 3.
    async with unit_of_work(svc.ctx, Tx.READ_THEN_WRITE) as uow:
        assert await jobs.check_all(uow) == 0
    await as_project(creds, "insert into notes values (3)")
    async with unit_of_work(svc.ctx, Tx.READ_THEN_WRITE) as uow:
        assert await jobs.check_all(uow) == 1
    await _drain(runner)
    second = (await bob.client.post(URL + "/generations")).json()["operationId"]
    await _drain(runner)
    assert (await bob.client.get(f"{URL}/operations/{second}")).json()["generation"] == {"epoch": 1, "seq": 3}
    gens = (await bob.client.get(URL + "/generations")).json()["generations"]
    assert [(g["seq"], g["kind"], g["verified"]) for g in gens] == [(3, "manual", True), (2, "scheduled", True),
                                                                    (1, "manual", True)]

    # Restorable as any generation: back to 1.1, the rows of then.
    restore = (await alice.client.post(URL + "/restore", json={"epoch": 1, "seq": 1})).json()["operationId"]
    await _drain(runner)
    assert (await bob.client.get(f"{URL}/operations/{restore}")).json()["terminalCode"] == "ok"
    assert await as_project(creds, "select id from notes order by id") == [(1,), (2,)]


async def test_a_backup_whose_proof_fails_ends_failed_in_words(held: tuple[Svc, Worker]) -> None:
    svc, runner = held
    bob = (await make_team(svc, project="web")).bob
    creds = (await bob.client.post(URL)).json()
    await as_project(creds, "create table t (x int)", "insert into t values (1)")
    op_id = (await bob.client.post(URL + "/generations")).json()["operationId"]
    assert await runner.run_once()  # dumping: the generation taken and listed
    op = (await bob.client.get(f"{URL}/operations/{op_id}")).json()
    assert (op["phase"], op["generation"]) == ("verifying", {"epoch": 1, "seq": 1})
    # Its archive damaged before the proof: the backup is not proven, and says why.
    archive = next((svc.ctx.settings.data_dir / "blobs").rglob("*.dump"))
    archive.write_bytes(b"PGDMP" + b"\0" * 100)
    await _drain(runner)
    op = (await bob.client.get(f"{URL}/operations/{op_id}")).json()
    assert (op["phase"], op["terminalCode"]) == ("done", "failed")
    assert "sha256" in op["error"]
    [gen] = (await bob.client.get(URL + "/generations")).json()["generations"]
    assert (gen["kind"], gen["verified"]) == ("manual", False)
    async with svc.ctx.db.transaction(write=False) as s:
        row = (await s.scalars(select(DatabaseGeneration))).one()
    assert "sha256" in (row.verify_error or "")
    # The next one may start: the first has ended.
    assert (await bob.client.post(URL + "/generations")).status_code == 202


async def test_a_backup_whose_dump_keeps_failing_ends_failed_and_frees_the_project(
        held: tuple[Svc, Worker], monkeypatch: pytest.MonkeyPatch) -> None:
    from sqlalchemy import update

    from svc.adapters.database.port import DatabaseNodeError
    from svc.domains.databases import generations
    from svc.kit.clock import utcnow
    from svc.models import Job

    svc, runner = held
    team = await make_team(svc, project="web")
    bob, alice = team.bob, team.alice
    (await bob.client.post(URL)).raise_for_status()

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise DatabaseNodeError("pg_dump failed: the node went away")

    monkeypatch.setattr(generations, "take", broken)
    op_id = (await bob.client.post(URL + "/generations")).json()["operationId"]
    op: dict[str, Any] = {}
    for _ in range(20):  # each attempt fails; the retries are made due at once
        await runner.run_once()
        op = (await bob.client.get(f"{URL}/operations/{op_id}")).json()
        if op["terminalCode"] is not None:
            break
        async with svc.ctx.db.transaction() as s:
            await s.execute(update(Job).where(Job.status == "queued").values(run_at=utcnow()))
    assert (op["phase"], op["terminalCode"]) == ("done", "failed"), op
    assert op["error"] == "the dump failed: pg_dump failed: the node went away"
    assert (await bob.client.get(URL + "/generations")).json()["generations"] == []
    # Not left holding the project's one operation: a restore or another backup may start.
    monkeypatch.undo()
    assert (await bob.client.post(URL + "/generations")).status_code == 202
    await _drain(runner)
    assert (await alice.client.post(URL + "/delete", json={"confirm": "web"})).status_code == 202
