"""Rules of the generations and operations a user relies on: retention keeps what it promises (the
newest 24 and one a day for 7 days; a final generation and exports never go); a generation whose
archive no longer restores is a notification; one operation at a time even when requests race;
export refused while an operation has the database closed."""

from __future__ import annotations

import asyncio
import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select

from svc.app import default_adapters
from svc.domains.databases import jobs
from svc.domains.databases.generations import prunable
from svc.domains.databases.kinds import DatabaseJob
from svc.models import DatabaseGeneration, GenerationKind
from svc.settings import Settings
from svc.uow import Tx, unit_of_work
from tests.support.api import Svc, assert_error, job_runner, running_svc
from tests.support.projectdb import as_project
from tests.support.team import make_team

URL = "/v1/orgs/acme/projects/web/database"


def _generation(n: int, at: datetime, kind: GenerationKind = GenerationKind.scheduled) -> DatabaseGeneration:
    return DatabaseGeneration(id=f"gen{n}", project_id="p", epoch=1, seq=n, kind=kind.value, blob_key=f"k{n}",
                              bytes=1, sha256="0" * 64, created_at=at, row_counts={})


def test_retention_keeps_24_hourly_and_one_a_day_for_7_days_and_never_a_final_one() -> None:
    now = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
    hourly = [_generation(n, now - timedelta(hours=n)) for n in range(24 * 10)]  # ten days, every hour
    final = _generation(9999, now - timedelta(days=60), GenerationKind.final)
    export = _generation(9998, now - timedelta(days=60), GenerationKind.export)
    gone = {g.id for g in prunable([*hourly, final, export], keep_hourly=24, keep_daily=7, now=now)}
    kept = [g for g in hourly if g.id not in gone]
    assert final.id not in gone and export.id not in gone
    newest = sorted(hourly, key=lambda g: g.created_at, reverse=True)
    assert all(g in kept for g in newest[:24])
    older = [g for g in kept if g not in newest[:24]]
    days = {g.created_at.date() for g in older}
    assert len(older) == len(days) and all(now - g.created_at <= timedelta(days=7) for g in older)
    assert {(now - timedelta(days=d)).date() for d in range(2, 8)} <= days | {g.created_at.date() for g in newest[:24]}
    assert len(kept) <= 24 + 7


def test_a_burst_of_backups_on_request_never_pushes_the_hourly_ones_out() -> None:
    now = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
    hourly = [_generation(n, now - timedelta(hours=n)) for n in range(30)]
    manual = [_generation(1000 + n, now - timedelta(minutes=n)) for n in range(40)]
    for g in manual:
        g.kind = GenerationKind.manual.value
    gone = {g.id for g in prunable([*hourly, *manual], keep_hourly=24, keep_daily=7, now=now)}
    # Each pool keeps its own newest 24 (and the newest of each day): the hourly ones as without the burst.
    assert {g.id for g in hourly[:24]}.isdisjoint(gone) and {g.id for g in manual[:24]}.isdisjoint(gone)
    assert {g.id for g in manual[24:]} <= gone
    assert gone == {g.id for g in prunable(hourly, keep_hourly=24, keep_daily=7, now=now)} | \
        {g.id for g in manual[24:]}




async def test_a_generation_that_does_not_restore_is_a_notification(db_svc: Svc) -> None:
    alice = (await make_team(db_svc, project="web")).alice
    creds = (await alice.client.post(URL)).json()
    await as_project(creds, "create table t (x int)", "insert into t values (1)")
    async with unit_of_work(db_svc.ctx, Tx.READ_THEN_WRITE) as uow:
        assert await jobs.check_all(uow) == 1
    for _ in range(600):
        gens = (await alice.client.get(URL + "/generations")).json()["generations"]
        if gens and gens[0]["verified"] is not None:
            break
        await asyncio.sleep(0.05)
    assert gens[0]["verified"] is True
    # Its archive damaged since: checked again, it is not proven, and the org's admins are told.
    archive = next((db_svc.ctx.settings.data_dir / "blobs").rglob("*.dump"))
    archive.write_bytes(b"PGDMP" + b"\0" * 100)
    async with db_svc.ctx.db.transaction() as s:
        row = (await s.scalars(select(DatabaseGeneration))).one()
        row.verified = None
        await s.flush()
    async with unit_of_work(db_svc.ctx, Tx.WRITE) as uow:
        uow.enqueue(DatabaseJob.verify, {"generation_id": row.id})
    for _ in range(600):
        gen = (await alice.client.get(URL + "/generations")).json()["generations"][0]
        if gen["verified"] is not None:
            break
        await asyncio.sleep(0.05)
    assert gen["verified"] is False
    notes = (await alice.client.get("/v1/orgs/acme/notifications")).json()["notifications"]
    assert any("did not pass its restore check" in n["message"] for n in notes), notes


async def test_one_operation_at_a_time_and_export_waits_for_it(settings: Settings, project_cluster: Any) -> None:
    from svc.adapters.database.postgres import PostgresNode

    adapters = default_adapters(settings)
    adapters.database = node = PostgresNode(project_cluster.admin_url)
    try:
        async with running_svc(settings, adapters, run_workers=False) as svc:
            runner = job_runner(svc)
            alice = (await make_team(svc, project="web")).alice
            creds = (await alice.client.post(URL)).json()
            await as_project(creds, "create table t (x int)")
            async with unit_of_work(svc.ctx, Tx.READ_THEN_WRITE) as uow:
                await jobs.check_all(uow)
            while await runner.run_once():
                pass
            # Eight restores at once: one starts, the others are refused.
            answers = await asyncio.gather(*(alice.client.post(URL + "/restore", json={"epoch": 1, "seq": 1})
                                             for _ in range(8)))
            assert sorted(a.status_code for a in answers) == [202] + [409] * 7
            assert {a.json()["code"] for a in answers if a.status_code == 409} == {"operation_in_progress"}
            deleting = await alice.client.post(URL + "/delete", json={"confirm": "web"})
            assert_error(deleting, 409, "operation_in_progress")
            assert_error(await alice.client.post(URL + "/export"), 409, "suspended")
            while await runner.run_once():
                pass
            exported = await alice.client.post(URL + "/export")
            assert exported.status_code == 200 and exported.json()["key"].startswith("databases/")
            # An export is not a generation: never listed, never restorable.
            listed = (await alice.client.get(URL + "/generations")).json()["generations"]
            assert all(g["kind"] != "export" for g in listed)
            async with svc.ctx.db.transaction(write=False) as s:
                kinds = [g.kind for g in (await s.scalars(select(DatabaseGeneration))).all()]
            assert kinds.count("export") == 1
    finally:
        await node.close()


async def _verified(svc: Svc, generation_id: str) -> DatabaseGeneration:
    """Verify the generation again (as its job does after a dump) and wait for the outcome."""
    async with svc.ctx.db.transaction() as s:
        row = await s.get(DatabaseGeneration, generation_id)
        assert row is not None
        row.verified, row.restore_seconds, row.verify_error = None, None, None
        await s.flush()
    async with unit_of_work(svc.ctx, Tx.WRITE) as uow:
        uow.enqueue(DatabaseJob.verify, {"generation_id": generation_id})
    for _ in range(1800):
        async with svc.ctx.db.transaction(write=False) as s:
            row = await s.get(DatabaseGeneration, generation_id)
            assert row is not None
            if row.verified is not None:
                return row
        await asyncio.sleep(0.05)
    raise AssertionError("the verification did not finish within 90 s")


async def test_the_restore_proof_restores_the_archive_and_compares_its_rows(db_svc: Svc) -> None:
    """A generation is proven only by a restore whose rows per table are the dump's: an archive
    whose sha256 is the recorded one but which does not restore is not proven (a proof that skipped
    the restore would pass it), nor is one whose restored rows differ from the counts recorded at
    dump time (a proof that did not compare them would pass it)."""
    alice = (await make_team(db_svc, project="web")).alice
    creds = (await alice.client.post(URL)).json()
    await as_project(creds, "create table t (x int)", "insert into t select generate_series(1, 3)",
               "create table u (y text)")
    async with unit_of_work(db_svc.ctx, Tx.READ_THEN_WRITE) as uow:
        assert await jobs.check_all(uow) == 1
    for _ in range(1800):
        async with db_svc.ctx.db.transaction(write=False) as s:
            row = (await s.scalars(select(DatabaseGeneration))).first()
        if row is not None:
            break
        await asyncio.sleep(0.05)
    assert row is not None and row.row_counts == {"public.t": 3, "public.u": 0}
    proven = await _verified(db_svc, row.id)
    assert proven.verified is True and proven.restore_seconds is not None and proven.verify_error is None

    # The counts recorded at dump time no longer match what the archive holds: not proven.
    async with db_svc.ctx.db.transaction() as s:
        changed = await s.get(DatabaseGeneration, row.id)
        assert changed is not None
        changed.row_counts = {"public.t": 4, "public.u": 0}
        await s.flush()
    differs = await _verified(db_svc, row.id)
    assert differs.verified is False and differs.restore_seconds is not None
    assert "public.t: 4 dumped, 3 restored" in (differs.verify_error or "")

    # An archive that is not a dump, recorded with its own sha256 and size (so the digest check
    # passes): only the restore itself can find it out.
    archive = next((db_svc.ctx.settings.data_dir / "blobs").rglob("*.dump"))
    garbage = b"PGDMP" + bytes(range(256)) * 4
    archive.write_bytes(garbage)
    async with db_svc.ctx.db.transaction() as s:
        changed = await s.get(DatabaseGeneration, row.id)
        assert changed is not None
        changed.row_counts = {"public.t": 3, "public.u": 0}
        changed.sha256, changed.bytes = hashlib.sha256(garbage).hexdigest(), len(garbage)
        await s.flush()
    broken = await _verified(db_svc, row.id)
    assert broken.verified is False and "pg_restore" in (broken.verify_error or ""), broken.verify_error
