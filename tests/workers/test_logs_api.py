"""Workers' store side on both state stores: a project's logs and traffic through the API (who may
read them, paging by cursor, bad input), the runtime's endpoints behind its token (a worker's code
and env, its log lines), and the retention cycle. The runtime itself is a stub here (its token and
a check that accepts): tests/workers/test_runtime.py and test_serve.py run the real one."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import select, update

from svc.adapters.edge.port import TrafficBatch, TrafficRecord
from svc.adapters.workers.port import Upstream, WorkerCode
from svc.domains.workers import service
from svc.kit.clock import utcnow
from svc.models import LogLine, Project, TrafficMinute
from svc.uow import Tx, unit_of_work
from tests.support.api import Svc, assert_error
from tests.support.bundles import site
from tests.support.team import make_team

BASE = "/v1/orgs/acme/projects/web"
WORKER = b"export default { fetch(request, env) { return new Response(env.GREETING) } }"


@dataclass
class StubRuntime:
    """The WorkerRuntime port with its token, accepting every check."""

    token: str = "stub-runtime-token"
    description: str = "stub"
    checked: int = 0

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    def upstreams(self) -> tuple[Upstream, ...]:
        return (Upstream("127.0.0.1", 1),)

    def shard_of(self, project_id: str) -> int:
        return 0

    async def check(self, code: WorkerCode) -> None:
        assert code.main_module == "index.js" and "index.js" in code.modules
        self.checked += 1


async def _project_id(svc: Svc) -> str:
    async with svc.ctx.db.transaction(write=False) as s:
        return str((await s.scalars(select(Project.id).where(Project.name == "web"))).one())


def _record(project_id: str, at: datetime, status: int, path: str) -> TrafficRecord:
    return TrafficRecord(at=at, project_id=project_id, status=status, bytes_sent=100, duration_ms=1.5,
                         request_id=f"req-{path}", method="GET", path=path)


async def test_logs_and_traffic_through_the_api(svc: Svc) -> None:
    team = await make_team(svc, project="web")
    project_id = await _project_id(svc)
    now = utcnow().replace(second=0, microsecond=0)
    recorder = service.TrafficRecorder(svc.ctx)
    # Two batches for the same minute add up (one upsert per project and minute).
    for batch in range(2):
        await recorder.record(TrafficBatch(
            counts={(project_id, now): [3, 1, 2, 1 if batch else 0, 1000]},
            samples=[_record(project_id, now, 200, f"/p{batch}"), _record(project_id, now, 404, f"/missing{batch}")]))
    async with unit_of_work(svc.ctx, Tx.WRITE) as uow:
        await service.record_runtime_logs(uow, project_id, service.schemas.RuntimeLogLines.model_validate(
            {"lines": [{"at": now.timestamp() * 1000, "level": "warn", "message": "careful", "requestId": "r1"},
                       {"at": now.timestamp() * 1000, "level": "error", "message": "Error: boom",
                        "stack": "at index.js:1:2", "requestId": "r2"},
                       {"at": now.timestamp() * 1000, "level": "weird", "message": "an unknown level"}]}))

    r = await team.vic.client.get(f"{BASE}/traffic")  # a viewer reads both
    assert r.status_code == 200, r.text
    traffic = r.json()
    assert traffic["requests"] == 13 and traffic["bytesSent"] == 2000 and traffic["minutesPerBucket"] == 15
    last = traffic["buckets"][-1]
    assert (last["s2xx"], last["s3xx"], last["s4xx"], last["s5xx"]) == (6, 2, 4, 1)
    hourly = (await team.vic.client.get(f"{BASE}/traffic", params={"hours": 1})).json()
    assert len(hourly["buckets"]) == 60 and hourly["requests"] == 13

    r = await team.vic.client.get(f"{BASE}/logs")
    assert r.status_code == 200, r.text
    lines = r.json()["lines"]
    assert [(line["source"], line["level"], line["message"]) for line in lines] == [
        ("edge", "2xx", "GET /p0 200 100 B 1.5 ms"), ("edge", "4xx", "GET /missing0 404 100 B 1.5 ms"),
        ("edge", "2xx", "GET /p1 200 100 B 1.5 ms"), ("edge", "4xx", "GET /missing1 404 100 B 1.5 ms"),
        ("worker", "warn", "careful"), ("worker", "error", "Error: boom"), ("worker", "log", "an unknown level")]
    assert lines[5]["stack"] == "at index.js:1:2" and lines[5]["requestId"] == "r2"
    # The last two, then what came after a cursor (nothing yet, then a new line).
    page = (await team.vic.client.get(f"{BASE}/logs", params={"limit": 2})).json()
    assert [line["message"] for line in page["lines"]] == ["Error: boom", "an unknown level"]
    after = (await team.vic.client.get(f"{BASE}/logs", params={"cursor": page["nextCursor"]})).json()
    assert after == {"lines": [], "nextCursor": page["nextCursor"]}
    async with unit_of_work(svc.ctx, Tx.WRITE) as uow:
        await service.record_runtime_logs(uow, project_id, service.schemas.RuntimeLogLines.model_validate(
            {"lines": [{"at": now.timestamp() * 1000, "level": "log", "message": "later"}]}))
    after = (await team.vic.client.get(f"{BASE}/logs", params={"cursor": page["nextCursor"]})).json()
    assert [line["message"] for line in after["lines"]] == ["later"]

    # A window longer than a date can hold means every kept line (found by schemathesis: a 500).
    r = await team.vic.client.get(f"{BASE}/logs", params={"since": "999999d", "limit": 1})
    assert r.status_code == 200 and [line["message"] for line in r.json()["lines"]] == ["later"]
    for params in ({"since": "yesterday"}, {"limit": 0}, {"limit": 1001}, {"cursor": -1}, {"hours": 0}):
        path = "traffic" if "hours" in params else "logs"
        assert_error(await team.vic.client.get(f"{BASE}/{path}", params=params), 400, "bad_request")
    # Outside the org: nothing to see (404, as every other project route).
    assert_error(await team.eve.client.get(f"{BASE}/logs"), 404, "not_found")


async def test_one_requests_lines_by_its_id_or_the_end_people_are_shown(svc: Svc) -> None:
    """?request= keeps one request's lines, the edge's and its worker's: its whole id, or what
    follows a dash in it (the edge's ids share their first part for a whole start)."""
    team = await make_team(svc, project="web")
    project_id = await _project_id(svc)
    now = utcnow()
    first, second = "e1a2b3c4-900-7-1", "e1a2b3c4-900-7-2"
    await service.TrafficRecorder(svc.ctx).record(TrafficBatch(counts={}, samples=[
        TrafficRecord(at=now, project_id=project_id, status=status, bytes_sent=1, duration_ms=1, request_id=rid,
                      method="GET", path=path) for rid, status, path in ((first, 200, "/a"), (second, 500, "/b"))]))
    async with unit_of_work(svc.ctx, Tx.WRITE) as uow:
        await service.record_runtime_logs(uow, project_id, service.schemas.RuntimeLogLines.model_validate(
            {"lines": [{"at": now.timestamp() * 1000, "level": "log", "message": "serving /a", "requestId": first},
                       {"at": now.timestamp() * 1000, "level": "error", "message": "Error: b", "requestId": second},
                       {"at": now.timestamp() * 1000, "level": "log", "message": "at the top level"}]}))

    async def messages(request: str) -> list[str]:
        r = await team.vic.client.get(f"{BASE}/logs", params={"request": request})
        assert r.status_code == 200, r.text
        return [line["message"] for line in r.json()["lines"]]

    assert await messages(first) == await messages("900-7-1") == ["GET /a 200 1 B 1 ms", "serving /a"]
    assert await messages("900-7-2") == ["GET /b 500 1 B 1 ms", "Error: b"]
    assert await messages("00-7-1") == [] and await messages("e1a2b3c4") == []  # a dash begins the end
    assert await messages("900_7_1") == []  # "_" is no wildcard here (as it is in SQL LIKE)
    page = (await team.vic.client.get(f"{BASE}/logs", params={"request": "900-7-1", "limit": 1})).json()
    assert [line["message"] for line in page["lines"]] == ["serving /a"]
    for bad in ("a b", "", "x" * 65, "a/b", "9%7"):
        assert_error(await team.vic.client.get(f"{BASE}/logs", params={"request": bad}), 400, "bad_request")


async def test_the_runtimes_endpoints_answer_its_token_only(svc: Svc) -> None:
    team = await make_team(svc, project="web")
    runtime = StubRuntime()
    svc.ctx.adapters.runtime = runtime
    try:
        await team.bob.client.put(f"{BASE}/secrets/GREETING", json={"value": "hello"})
        r = await team.bob.client.post(f"{BASE}/deployments", headers={"content-type": "application/gzip"},
                                       content=site({"worker/index.js": WORKER, "assets/a.txt": b"a"}))
        assert r.status_code == 201, r.text
        assert runtime.checked == 1 and r.json()["worker"] == {
            "main": "index.js", "compatibilityDate": "2025-06-01", "assets": "files-first"}
        key = f"{r.json()['id']}.2"  # the secret set before bumped the bindings generation to 2
        headers = {"X-Svc-Runtime-Token": runtime.token}
        assert_error(await svc.anon.get(f"/v1/runtime/workers/{key}"), 403, "forbidden")
        assert_error(await svc.anon.get(f"/v1/runtime/workers/{key}", headers={"X-Svc-Runtime-Token": "x"}),
                     403, "forbidden")
        assert_error(await team.alice.client.get(f"/v1/runtime/workers/{key}"), 403, "forbidden")
        r = await svc.anon.get(f"/v1/runtime/workers/{key}", headers=headers)
        assert r.status_code == 200, r.text
        worker = r.json()
        assert worker["modules"] == {"index.js": WORKER.decode()} and worker["mainModule"] == "index.js"
        assert worker["env"] == {"GREETING": "hello", "SVC_SECRET_VERSIONS": {"GREETING": 1}}
        assert worker["assets"].endswith("/assets") and r.headers["cache-control"] == "no-store"
        assert_error(await svc.anon.get("/v1/runtime/workers/dep_nothing.1", headers=headers), 404, "not_found")
        project_id = await _project_id(svc)
        body = {"lines": [{"at": 1_700_000_000_000, "level": "log", "message": "from the runtime"}]}
        assert_error(await svc.anon.post(f"/v1/runtime/projects/{project_id}/logs", json=body), 403, "forbidden")
        r = await svc.anon.post(f"/v1/runtime/projects/{project_id}/logs", json=body, headers=headers)
        assert r.status_code == 204, r.text
        lines = (await team.vic.client.get(f"{BASE}/logs")).json()["lines"]
        assert [line["message"] for line in lines] == ["from the runtime"]
        assert lines[0]["at"].startswith("2023-11-14T22:13:20")
        # Not in the API's document: it is the runtime's.
        paths: Mapping[str, object] = (await svc.anon.get("/v1/openapi.json")).json()["paths"]
        assert not [p for p in paths if p.startswith("/v1/runtime")]
    finally:
        svc.ctx.adapters.runtime = None


async def test_old_lines_and_counts_expire(svc: Svc) -> None:
    await make_team(svc, project="web")
    project_id = await _project_id(svc)
    old = utcnow() - timedelta(days=40)
    await service.TrafficRecorder(svc.ctx).record(TrafficBatch(
        counts={(project_id, old.replace(second=0, microsecond=0)): [1, 0, 0, 0, 10],
                (project_id, datetime.now(UTC).replace(second=0, microsecond=0)): [2, 0, 0, 0, 20]},
        samples=[_record(project_id, old, 200, "/old"), _record(project_id, utcnow(), 200, "/new")]))
    async with unit_of_work(svc.ctx, Tx.WRITE) as uow:
        # The old line and the old minute (the periodic cycle, running in this svc, may have been
        # first: what is left is what counts).
        assert await service.expire_logs(uow) in (0, 2)
    async with svc.ctx.db.transaction(write=False) as s:
        left = list(await s.scalars(select(LogLine.message).where(LogLine.project_id == project_id)))
        minutes = list(await s.scalars(select(TrafficMinute.minute).where(TrafficMinute.project_id == project_id)))
    assert left == ["GET /new 200 100 B 1.5 ms"]
    assert len(minutes) == 1 and minutes[0] > utcnow() - timedelta(days=1)  # the old minute is gone
    # A line of a project deleted meanwhile is dropped, not an error.
    async with svc.ctx.db.transaction(write=True) as s:
        await s.execute(update(Project).where(Project.id == project_id).values(name="renamed"))
    await service.TrafficRecorder(svc.ctx).record(TrafficBatch(counts={("prj_gone", old): [1, 0, 0, 0, 1]},
                                                               samples=[_record("prj_gone", old, 200, "/x")]))
