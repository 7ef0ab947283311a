"""The spec's Object storage section and STORAGE.md's objects routes, end to end over HTTP: status
before a grant, grant and revoke (idempotent, audited, roles), the plan's quota, objects put, got
(ranges), listed and deleted, on the files backend and on S3 (moto)."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from email.utils import parsedate_to_datetime

from sqlalchemy import select

from svc.app import MAX_JSON_BODY
from svc.models import AuditEvent, StorageGrant
from tests.storage.conftest import FREE_QUOTA, PRO_QUOTA, project_id, set_plan
from tests.support.api import Svc, assert_error
from tests.support.team import make_team

S = "/v1/orgs/acme/projects/site/storage"
OBJ = S + "/objects"


async def test_status_grant_and_revoke(storage_svc: Svc) -> None:
    team = await make_team(storage_svc, project="site")
    pid = await project_id(storage_svc, "site")
    # Filled before a grant: the prefix a grant fixes (the project's id), the free plan's quota.
    before = (await team.vic.client.get(S)).json()
    assert before == {"granted": False, "prefix": f"p/{pid}/", "quotaBytes": FREE_QUOTA, "usedBytes": 0}
    assert_error(await team.vic.client.post(S), 403, "forbidden")
    assert_error(await team.eve.client.get(S), 404)
    overview = "/v1/orgs/acme/projects/site/overview"
    assert (await team.vic.client.get(overview)).json()["resources"]["storage"] == {"declared": False,
                                                                                     "provisioned": False}
    granted = await team.bob.client.post(S)
    assert granted.status_code == 200 and granted.json() == before | {"granted": True}, granted.text
    assert (await team.vic.client.get(overview)).json()["resources"]["storage"]["provisioned"] is True
    # Idempotent: the same prefix, one audit row.
    assert (await team.bob.client.post(S)).json() == before | {"granted": True}
    assert_error(await team.bob.client.delete(S), 403, "forbidden")
    assert (await team.alice.client.delete(S)).status_code == 204
    assert (await team.alice.client.delete(S)).status_code == 204
    assert (await team.vic.client.get(S)).json() == before
    assert (await team.vic.client.get(overview)).json()["resources"]["storage"]["provisioned"] is False
    # A grant again: the same prefix.
    assert (await team.bob.client.post(S)).json()["prefix"] == f"p/{pid}/"
    async with storage_svc.ctx.db.transaction(write=False) as s:
        events = (await s.execute(select(AuditEvent.action, AuditEvent.target, AuditEvent.actor_subject)
                                  .where(AuditEvent.action.startswith("storage.")).order_by(AuditEvent.at))).all()
    assert [tuple(e) for e in events] == [("storage.grant", "site", "dev:bob"), ("storage.revoke", "site", "dev:alice"),
                                          ("storage.grant", "site", "dev:bob")]


async def test_revoke_of_a_project_never_granted_is_204_and_records_nothing(storage_svc: Svc) -> None:
    team = await make_team(storage_svc, project="site")
    assert (await team.alice.client.delete(S)).status_code == 204
    async with storage_svc.ctx.db.transaction(write=False) as s:
        assert (await s.scalars(select(AuditEvent).where(AuditEvent.action.startswith("storage.")))).all() == []
        assert (await s.scalars(select(StorageGrant))).all() == []


async def test_the_quota_is_the_org_plan_s(storage_svc: Svc) -> None:
    team = await make_team(storage_svc, project="site")
    assert (await team.bob.client.post(S)).json()["quotaBytes"] == FREE_QUOTA
    big = b"x" * (FREE_QUOTA + 1)
    refused = assert_error(await team.bob.client.put(OBJ + "/big", content=big), 413, "storage_quota_exceeded")
    assert str(FREE_QUOTA) in refused["message"] and "uses 0 bytes" in refused["message"]
    assert refused["details"]["quotaBytes"] == FREE_QUOTA
    assert (await team.vic.client.get(OBJ)).json()["objects"] == []
    await set_plan(storage_svc, "acme", "pro")
    assert (await team.vic.client.get(S)).json()["quotaBytes"] == PRO_QUOTA
    stored = await team.bob.client.put(OBJ + "/big", content=big)
    assert stored.status_code == 200, stored.text
    assert (await team.vic.client.get(S)).json()["usedBytes"] == FREE_QUOTA + 1


async def test_objects_put_get_head_list_delete(any_svc: Svc) -> None:
    team = await make_team(any_svc, project="site")
    assert (await team.bob.client.post(S)).status_code == 200
    put = await team.bob.client.put(OBJ + "/docs/a.txt", content=b"hello, world",
                                    headers={"content-type": "text/plain"})
    assert put.status_code == 200, put.text
    view = put.json()
    assert set(view) == {"key", "size", "etag", "uploadedAt", "contentType"}
    assert (view["key"], view["size"], view["contentType"]) == ("docs/a.txt", 12, "text/plain")
    assert view["etag"].startswith('"')
    assert_error(await team.vic.client.put(OBJ + "/docs/b.txt", content=b"no"), 403, "forbidden")

    got = await team.vic.client.get(OBJ + "/docs/a.txt")
    assert got.status_code == 200 and got.content == b"hello, world"
    assert got.headers["etag"] == view["etag"] and got.headers["content-type"].startswith("text/plain")
    assert got.headers["content-length"] == "12" and got.headers["accept-ranges"] == "bytes"
    assert parsedate_to_datetime(got.headers["last-modified"]).year >= 2026
    head = await team.vic.client.head(OBJ + "/docs/a.txt")
    assert head.status_code == 200 and head.content == b"" and head.headers["content-length"] == "12"
    assert head.headers["etag"] == view["etag"]
    assert_error(await team.vic.client.get(OBJ + "/docs/none.txt"), 404, "not_found")
    assert (await team.vic.client.head(OBJ + "/docs/none.txt")).status_code == 404

    # A replaced object counts once; usedBytes follows svc's writes at once.
    assert (await team.bob.client.put(OBJ + "/docs/a.txt", content=b"hello")).json()["size"] == 5
    assert (await team.bob.client.put(OBJ + "/top", content=b"")).json()["size"] == 0
    assert (await team.vic.client.get(S)).json()["usedBytes"] == 5
    assert (await team.vic.client.get(OBJ + "/top")).content == b""

    listed = (await team.vic.client.get(OBJ)).json()
    assert [o["key"] for o in listed["objects"]] == ["docs/a.txt", "top"] and listed["nextCursor"] is None
    grouped = (await team.vic.client.get(OBJ, params={"delimiter": "/"})).json()
    assert [o["key"] for o in grouped["objects"]] == ["top"] and grouped["prefixes"] == ["docs/"]
    under = (await team.vic.client.get(OBJ, params={"prefix": "docs/"})).json()
    assert [o["key"] for o in under["objects"]] == ["docs/a.txt"]
    first = (await team.vic.client.get(OBJ, params={"limit": 1})).json()
    assert [o["key"] for o in first["objects"]] == ["docs/a.txt"] and first["nextCursor"]
    second = (await team.vic.client.get(OBJ, params={"limit": 1, "cursor": first["nextCursor"]})).json()
    assert [o["key"] for o in second["objects"]] == ["top"] and second["nextCursor"] is None

    assert_error(await team.vic.client.delete(OBJ + "/docs/a.txt"), 403, "forbidden")
    assert (await team.bob.client.delete(OBJ + "/docs/a.txt")).status_code == 204
    assert (await team.bob.client.delete(OBJ + "/docs/a.txt")).status_code == 204
    assert_error(await team.vic.client.get(OBJ + "/docs/a.txt"), 404, "not_found")
    assert (await team.vic.client.get(S)).json()["usedBytes"] == 0


async def test_ranges(any_svc: Svc) -> None:
    team = await make_team(any_svc, project="site")
    assert (await team.bob.client.post(S)).status_code == 200
    body = bytes(range(100))
    assert (await team.bob.client.put(OBJ + "/r", content=body)).status_code == 200
    for asked, status, part, content_range in (
            ("bytes=10-19", 206, body[10:20], "bytes 10-19/100"),
            ("bytes=90-", 206, body[90:], "bytes 90-99/100"),
            ("bytes=-5", 206, body[95:], "bytes 95-99/100"),
            ("bytes=95-500", 206, body[95:], "bytes 95-99/100"),
            ("bytes=0-0", 206, body[:1], "bytes 0-0/100"),
            ("bytes=5-1", 200, body, None),  # not a range: ignored, as RFC 9110 has it
            ("items=0-1", 200, body, None)):
        got = await team.vic.client.get(OBJ + "/r", headers={"range": asked})
        assert got.status_code == status, asked
        assert got.content == part, asked
        assert got.headers["content-length"] == str(len(part))
        assert got.headers.get("content-range") == content_range, asked
    for asked in ("bytes=100-", "bytes=100-200", "bytes=-0"):
        refused = await team.vic.client.get(OBJ + "/r", headers={"range": asked})
        assert_error(refused, 416, "range_not_satisfiable")
        assert refused.headers["content-range"] == "bytes */100"


async def test_every_objects_route_is_not_granted_without_a_grant(storage_svc: Svc) -> None:
    team = await make_team(storage_svc, project="site")
    for method, path in (("GET", OBJ), ("GET", OBJ + "/k"), ("PUT", OBJ + "/k"), ("DELETE", OBJ + "/k")):
        assert_error(await team.bob.client.request(method, path, content=b"x" if method == "PUT" else None), 404,
                     "not_granted")
    assert (await team.bob.client.head(OBJ + "/k")).status_code == 404
    # Revoked: not granted, and the objects are kept for a grant again.
    assert (await team.bob.client.post(S)).status_code == 200
    assert (await team.bob.client.put(OBJ + "/k", content=b"kept")).status_code == 200
    assert (await team.alice.client.delete(S)).status_code == 204
    assert_error(await team.bob.client.get(OBJ + "/k"), 404, "not_granted")
    assert_error(await team.bob.client.put(OBJ + "/k", content=b"new"), 404, "not_granted")
    assert (await team.bob.client.post(S)).json()["usedBytes"] == 4
    assert (await team.bob.client.get(OBJ + "/k")).content == b"kept"


async def test_an_upload_needs_its_length(storage_svc: Svc) -> None:
    team = await make_team(storage_svc, project="site")
    assert (await team.bob.client.post(S)).status_code == 200

    async def chunked() -> object:
        yield b"abc"

    assert_error(await team.bob.client.put(OBJ + "/k", content=chunked()), 411, "length_required")  # type: ignore[arg-type]
    assert (await team.vic.client.get(OBJ)).json()["objects"] == []


async def test_storage_off_is_503(storage_svc: Svc) -> None:
    team = await make_team(storage_svc, project="site")
    assert (await team.bob.client.post(S)).status_code == 200
    adapters = storage_svc.ctx.adapters
    store, adapters.objects = adapters.objects, None
    adapters.off["objects"] = "the object store did not start"
    try:
        for method, path in (("GET", S), ("POST", S), ("DELETE", S), ("GET", OBJ), ("PUT", OBJ + "/k")):
            refused = assert_error(await team.alice.client.request(method, path, content=b"x" if method == "PUT"
                                                                   else None), 503, "storage_unavailable")
            assert "did not start" in refused["message"]
    finally:
        adapters.objects = store
        del adapters.off["objects"]
    assert (await team.vic.client.get(S)).json()["granted"] is True


async def test_an_object_larger_than_the_api_s_json_cap_streams_in_and_out(any_svc: Svc) -> None:
    team = await make_team(any_svc, project="site")
    await set_plan(any_svc, "acme", "pro")
    assert (await team.bob.client.post(S)).status_code == 200
    size = MAX_JSON_BODY * 3 + 7
    digest = hashlib.sha256()

    async def body() -> AsyncIterator[bytes]:
        for n in range(0, size, 65536):
            chunk = bytes([n % 251]) * min(65536, size - n)
            digest.update(chunk)
            yield chunk

    put = await team.bob.client.put(OBJ + "/big.bin", content=body(), headers={"content-length": str(size)})
    assert put.status_code == 200, put.text
    assert put.json()["size"] == size
    got = hashlib.sha256()
    async with team.vic.client.stream("GET", OBJ + "/big.bin") as streamed:
        assert streamed.headers["content-length"] == str(size)
        async for chunk in streamed.aiter_bytes():
            got.update(chunk)
    assert got.hexdigest() == digest.hexdigest()
    # A body longer than its Content-Length (an ASGI client can send one): nothing stored, the hold
    # given back.
    over = await team.bob.client.put(OBJ + "/short", content=body(), headers={"content-length": "10"})
    assert "declared length" in assert_error(over, 400, "bad_request")["message"]
    assert_error(await team.vic.client.get(OBJ + "/short"), 404, "not_found")
    assert (await team.vic.client.get(S)).json()["usedBytes"] == size
