"""The quota holds at write time: under concurrent writes (each write's length is held before its
body is read), between usage counts (svc's own writes count at once), and after a crash (a
reservation nobody settles is released by the usage cycle). The usage cycle counts the store."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import httpx
from sqlalchemy import func, select

from svc.domains.storage import jobs
from svc.domains.storage.kinds import StorageJob
from svc.kit.clock import utcnow
from svc.kit.ids import new_id
from svc.models import StorageGrant, StorageReservation
from svc.uow import Tx, unit_of_work
from tests.storage.conftest import FREE_QUOTA, project_id
from tests.support.api import Svc, assert_error, run_due_jobs
from tests.support.team import make_team
from tests.support.wait import until

S = "/v1/orgs/acme/projects/site/storage"
OBJ = S + "/objects"
PART = 40 * 1024  # two of them pass the free quota (64 KiB), one does not


async def _reservations(svc: Svc) -> int:
    async with svc.ctx.db.transaction(write=False) as s:
        return int(await s.scalar(select(func.count()).select_from(StorageReservation)) or 0)


async def test_two_concurrent_puts_over_the_quota_together_one_is_refused(storage_svc: Svc) -> None:
    team = await make_team(storage_svc, project="site")
    assert (await team.bob.client.post(S)).status_code == 200
    release = asyncio.Event()

    async def slow_body() -> AsyncIterator[bytes]:
        yield b"a" * 1024
        await release.wait()
        yield b"a" * (PART - 1024)

    first = asyncio.create_task(team.bob.client.put(OBJ + "/one", content=slow_body(),
                                                    headers={"content-length": str(PART)}))
    # The first write is under way (its length held, its body not yet whole) ...
    await until(lambda: _reservations(storage_svc), what="the first write's reservation")
    # ... so the second, which alone would fit, does not with it.
    second = await team.alice.client.put(OBJ + "/two", content=b"b" * PART)
    refused = assert_error(second, 413, "storage_quota_exceeded")
    assert refused["details"]["inFlightBytes"] == PART
    release.set()
    done = await first
    assert done.status_code == 200, done.text
    assert await _reservations(storage_svc) == 0
    assert [o["key"] for o in (await team.vic.client.get(OBJ)).json()["objects"]] == ["one"]
    # Settled: the first write counts, so the second is still refused with nothing in flight.
    assert (await team.vic.client.get(S)).json()["usedBytes"] == PART
    assert_error(await team.alice.client.put(OBJ + "/two", content=b"b" * PART), 413, "storage_quota_exceeded")
    # Deleting gives the room back at once.
    assert (await team.bob.client.delete(OBJ + "/one")).status_code == 204
    assert (await team.alice.client.put(OBJ + "/two", content=b"b" * PART)).status_code == 200


async def test_writes_racing_for_the_last_room_pass_one_at_a_time(storage_svc: Svc) -> None:
    """Four writes at once, each of which alone fits: their reservations take turns on the grant's
    row, so exactly one holds the room and the others are refused before their bodies are read."""
    team = await make_team(storage_svc, project="site")
    assert (await team.bob.client.post(S)).status_code == 200
    release = asyncio.Event()

    async def held_body() -> AsyncIterator[bytes]:
        await release.wait()
        yield b"a" * PART

    writes = [asyncio.create_task(team.bob.client.put(f"{OBJ}/{n}", content=held_body(),
                                                      headers={"content-length": str(PART)})) for n in range(4)]

    async def decided() -> bool:
        return await _reservations(storage_svc) + sum(w.done() for w in writes) == len(writes)

    await until(decided, what="every write reserved or refused")
    release.set()
    answers = [await w for w in writes]
    assert sorted(a.status_code for a in answers) == [200, 413, 413, 413], [a.text for a in answers]
    assert len((await team.vic.client.get(OBJ)).json()["objects"]) == 1
    assert (await team.vic.client.get(S)).json()["usedBytes"] == PART


async def test_a_write_given_up_midway_gives_its_hold_back(storage_svc: Svc) -> None:
    team = await make_team(storage_svc, project="site")
    assert (await team.bob.client.post(S)).status_code == 200

    async def broken_body() -> AsyncIterator[bytes]:
        yield b"a" * 1024
        raise httpx.ReadError("the client went away")

    try:
        await team.bob.client.put(OBJ + "/one", content=broken_body(), headers={"content-length": str(PART)})
    except httpx.HTTPError:
        pass
    assert await _reservations(storage_svc) == 0
    assert (await team.vic.client.get(OBJ)).json()["objects"] == []
    assert (await team.bob.client.put(OBJ + "/one", content=b"a" * PART)).status_code == 200


async def test_a_crashed_write_s_reservation_is_released_by_the_usage_cycle(storage_svc: Svc) -> None:
    team = await make_team(storage_svc, project="site")
    assert (await team.bob.client.post(S)).status_code == 200
    pid = await project_id(storage_svc, "site")
    # What a process killed midway through an upload leaves: its hold, never settled.
    async with storage_svc.ctx.db.transaction(write=True) as s:
        s.add(StorageReservation(id=new_id("sto"), project_id=pid, bytes=PART,
                                 created_at=utcnow() - jobs.RESERVATION_LIFETIME - timedelta(minutes=1)))
        s.add(StorageReservation(id=new_id("sto"), project_id=pid, bytes=1024, created_at=utcnow()))
    assert_error(await team.bob.client.put(OBJ + "/k", content=b"a" * PART), 413, "storage_quota_exceeded")
    async with unit_of_work(storage_svc.ctx, Tx.READ_THEN_WRITE) as uow:
        await jobs.count_usage(uow)
    # The stale one is gone; the live one (a write in flight now) is not.
    assert await _reservations(storage_svc) == 1
    assert (await team.bob.client.put(OBJ + "/k", content=b"a" * PART)).status_code == 200


async def test_the_usage_cycle_counts_what_the_store_holds(any_svc: Svc) -> None:
    team = await make_team(any_svc, project="site")
    assert (await team.bob.client.post(S)).status_code == 200
    assert (await team.bob.client.put(OBJ + "/a", content=b"a" * 1000)).status_code == 200
    pid = await project_id(any_svc, "site")
    store = any_svc.ctx.objects

    async def body() -> AsyncIterator[bytes]:
        yield b"z" * 3000

    # Written past svc (another process of a shared store, say): unseen until the next count.
    await store.put(f"p/{pid}/outside", body(), max_bytes=3000)
    assert (await team.vic.client.get(S)).json()["usedBytes"] == 1000
    async with unit_of_work(any_svc.ctx, Tx.READ_THEN_WRITE) as uow:
        assert await jobs.count_usage(uow) == 1
    assert (await team.vic.client.get(S)).json()["usedBytes"] == 4000
    async with any_svc.ctx.db.transaction(write=False) as s:
        assert (await s.scalars(select(StorageGrant.reported_at))).one() is not None
    # Counted, it holds: 4000 used + 61 KiB is over 64 KiB.
    assert_error(await team.bob.client.put(OBJ + "/b", content=b"b" * (FREE_QUOTA - 3999)), 413,
                 "storage_quota_exceeded")


async def test_the_usage_cycle_runs_as_a_job(storage_svc: Svc) -> None:
    team = await make_team(storage_svc, project="site")
    assert (await team.bob.client.post(S)).status_code == 200
    pid = await project_id(storage_svc, "site")

    async def body() -> AsyncIterator[bytes]:
        yield b"z" * 123

    await storage_svc.ctx.objects.put(f"p/{pid}/outside", body(), max_bytes=123)
    async with unit_of_work(storage_svc.ctx) as uow:  # the cycle's kind, as the worker runs it when due
        uow.enqueue(StorageJob.usage_cycle, {}, max_attempts=1)
    await run_due_jobs(storage_svc)
    assert (await team.vic.client.get(S)).json()["usedBytes"] == 123


class _SlowCount:
    """The object store, but a count reads the store first and answers once `go` is set: a write
    that lands in between is one the count missed."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.counting = asyncio.Event()
        self.go = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def usage(self, prefix: str) -> tuple[int, int]:
        counted = await self.store.usage(prefix)
        self.counting.set()
        await self.go.wait()
        return counted  # type: ignore[no-any-return]


async def test_a_write_settled_while_the_cycle_counts_is_not_forgotten(storage_svc: Svc) -> None:
    team = await make_team(storage_svc, project="site")
    assert (await team.bob.client.post(S)).status_code == 200
    assert (await team.bob.client.put(OBJ + "/a", content=b"a" * 1000)).status_code == 200
    slow = _SlowCount(storage_svc.ctx.adapters.objects)
    storage_svc.ctx.adapters.objects = slow  # type: ignore[assignment]
    try:
        async def count() -> None:
            async with unit_of_work(storage_svc.ctx, Tx.READ_THEN_WRITE) as uow:
                await jobs.count_usage(uow)

        counting = asyncio.create_task(count())
        await slow.counting.wait()
        assert (await team.bob.client.put(OBJ + "/b", content=b"b" * PART)).status_code == 200
        slow.go.set()
        await counting
    finally:
        storage_svc.ctx.adapters.objects = slow.store
    assert (await team.vic.client.get(S)).json()["usedBytes"] == 1000 + PART
    assert_error(await team.bob.client.put(OBJ + "/c", content=b"c" * PART), 413, "storage_quota_exceeded")
