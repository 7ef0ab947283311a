"""A project reaches its own objects only: crafted keys (`../`, encoded slashes and dots, another
project's id, control characters) are refused or stay under the caller's prefix, on both backends;
another project's list and get never see them. Bad input changes nothing. A project's objects
leave with it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import func, select

from svc.domains.storage import errors, objects
from svc.models import StorageReservation
from tests.storage.conftest import project_id
from tests.support.api import Svc, assert_error, wait_operation
from tests.support.team import make_team
from tests.support.wait import until

A = "/v1/orgs/acme/projects/site/storage"
B = "/v1/orgs/acme/projects/other/storage"
SECRET = b"site's secret"


async def _two_projects(svc: Svc) -> tuple[Any, str, str]:
    team = await make_team(svc, project="site")
    assert (await team.alice.client.post("/v1/orgs/acme/projects", json={"name": "other"})).status_code == 201
    for path in (A, B):
        assert (await team.bob.client.post(path)).status_code == 200
    assert (await team.bob.client.put(A + "/objects/secret.txt", content=SECRET)).status_code == 200
    return team, await project_id(svc, "site"), await project_id(svc, "other")


async def test_crafted_keys_never_reach_another_project_s_objects(any_svc: Svc) -> None:
    team, site, other = await _two_projects(any_svc)
    client = team.bob.client
    # Ways out of B's prefix towards A's object: refused as keys, or a key of B's own (none there).
    refused = ("..%2F" + site + "%2Fsecret.txt", "%2E%2E%2F" + site + "%2Fsecret.txt", "a%2F..%2F..%2F" + site
               + "%2Fsecret.txt", "%2Fp%2F" + site + "%2Fsecret.txt", "%2E%2E", "x%2F%2E%2Fy", "a%09b", "a%7Fb")
    for crafted in refused:
        for method in ("GET", "PUT", "DELETE"):
            r = await client.request(method, f"{B}/objects/{crafted}", content=b"x" if method == "PUT" else None)
            assert_error(r, 400, "bad_request")
    for crafted in (f"p/{site}/secret.txt", f"p%2F{site}%2Fsecret.txt", "secret.txt", f"..p/{site}/secret.txt",
                    f"%252E%252E%252F{site}%252Fsecret.txt"):
        assert_error(await client.get(f"{B}/objects/{crafted}"), 404, "not_found")
    # B's listings, whatever their prefix, hold none of A's.
    for prefix in ("", "p/", f"p/{site}/", "secret"):
        assert (await client.get(B + "/objects", params={"prefix": prefix})).json()["objects"] == []
    for prefix in ("../", f"../{site}/", "a/./", "/p"):
        assert_error(await client.get(B + "/objects", params={"prefix": prefix}), 400, "bad_request")
    # A's cursor handed to B's listing: still B's prefix only (or refused as no cursor of B's).
    assert (await client.put(A + "/objects/second.txt", content=b"2")).status_code == 200
    cursor = (await client.get(A + "/objects", params={"limit": 1})).json()["nextCursor"]
    crossed = await client.get(B + "/objects", params={"cursor": cursor})
    assert crossed.status_code == 400 or crossed.json()["objects"] == [], crossed.text
    assert (await client.delete(A + "/objects/second.txt")).status_code == 204
    # A key naming A's prefix writes B's own object: A's is untouched.
    assert (await client.put(f"{B}/objects/p/{site}/secret.txt", content=b"B's")).status_code == 200
    assert (await client.get(f"{A}/objects/secret.txt")).content == SECRET
    assert [o["key"] for o in (await client.get(A + "/objects")).json()["objects"]] == ["secret.txt"]
    assert [o["key"] for o in (await client.get(B + "/objects")).json()["objects"]] == [f"p/{site}/secret.txt"]
    # Where it landed: under B's prefix in the store.
    assert await any_svc.ctx.objects.head(f"p/{other}/p/{site}/secret.txt") is not None
    # And the helpers the runtime and the dashboard call refuse alike.
    for key in ("../x", "a/../../b", "/abs", ".", "a\x00b", "", "é" * 600):
        with pytest.raises(errors.BadKey):
            await objects.get(any_svc.ctx, other, key)
    # A member of another org reaches neither.
    assert_error(await team.eve.client.get(f"{A}/objects/secret.txt"), 404)


async def test_bad_input_changes_nothing(storage_svc: Svc) -> None:
    team, _, _ = await _two_projects(storage_svc)
    client = team.bob.client
    before = (await client.get(A)).json()
    for path, kwargs in ((A + "/objects/..%2Fx", {"content": b"x"}),
                         (A + "/objects/", {"content": b"x"}),
                         (A + "/objects/k", {"content": b"x", "headers": {"content-length": "1x"}}),
                         (A + "/objects/k", {"content": b"x", "params": {"overwrite": "1"}})):
        assert_error(await client.put(path, **kwargs), 400, "bad_request")
    for params in ({"limit": 0}, {"limit": 1001}, {"delimiter": ""}, {"cursor": ""}, {"cursor": "made-up"},
                   {"pages": 2}):
        assert_error(await client.get(A + "/objects", params=params), 400, "bad_request")
    assert (await client.get(A)).json() == before
    assert [o["key"] for o in (await client.get(A + "/objects")).json()["objects"]] == ["secret.txt"]
    async with storage_svc.ctx.db.transaction(write=False) as s:
        assert await s.scalar(select(func.count()).select_from(StorageReservation)) == 0


async def test_a_deleted_project_s_objects_leave_with_it(worker_svc: Svc) -> None:
    team, site, _ = await _two_projects(worker_svc)
    assert (await team.bob.client.put(A + "/objects/dir/more", content=b"more")).status_code == 200
    assert (await team.bob.client.put(B + "/objects/kept", content=b"kept")).status_code == 200
    store = worker_svc.ctx.objects
    assert (await store.usage(f"p/{site}/"))[1] == 2
    op = (await team.alice.client.request("DELETE", "/v1/orgs/acme/projects/site", json={"confirm": "site"})).json()
    assert (await wait_operation(team.alice, "acme", op["operationId"]))["terminalCode"] == "ok"
    assert await store.usage(f"p/{site}/") == (0, 0)
    assert (await store.list(f"p/{site}/")).objects == []
    # Another project's stay.
    assert (await team.bob.client.get(B + "/objects/kept")).content == b"kept"
    # A new project of the same name starts empty (another id, another prefix).
    assert (await team.alice.client.post("/v1/orgs/acme/projects", json={"name": "site"})).status_code == 201
    assert (await team.bob.client.post(A)).json()["usedBytes"] == 0
    assert (await team.bob.client.get(A + "/objects")).json()["objects"] == []


async def test_an_upload_under_way_when_its_project_is_deleted_leaves_nothing_behind(worker_svc: Svc) -> None:
    """The teardown empties the prefix while a write is in flight; the write, once whole, finds its
    project gone and takes its object back out."""
    team, site, _ = await _two_projects(worker_svc)
    release = asyncio.Event()

    async def held_body() -> AsyncIterator[bytes]:
        yield b"a" * 10
        await release.wait()
        yield b"a" * 10

    upload = asyncio.create_task(team.bob.client.put(A + "/objects/late", content=held_body(),
                                                     headers={"content-length": "20"}))

    async def reserved() -> bool:
        async with worker_svc.ctx.db.transaction(write=False) as s:
            return bool(await s.scalar(select(func.count()).select_from(StorageReservation)))

    await until(reserved, what="the upload's reservation")
    op = (await team.alice.client.request("DELETE", "/v1/orgs/acme/projects/site", json={"confirm": "site"})).json()
    assert (await wait_operation(team.alice, "acme", op["operationId"]))["terminalCode"] == "ok"
    release.set()
    assert_error(await upload, 404, "not_granted")
    assert await worker_svc.ctx.objects.usage(f"p/{site}/") == (0, 0)
