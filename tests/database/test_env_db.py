"""env.db end to end: a real `svc serve` (edge, workerd) whose projects' databases live on a real
PostgreSQL cluster. The notes example (examples/notes) keeps its rows through env.db: the grant
reaches a running worker with no redeploy, a transaction is all or nothing, PostgreSQL's refusals
reach the worker as their SQLSTATE, and the steady path has env.db as the loading path has it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from svc.adapters.database.process import PrivateCluster
from tests.support import components
from tests.support.bundles import site
from tests.support.serve import Server, svc_serve
from tests.workers.test_serve import Project, until_steady

pytestmark = components.WORKERD

EXAMPLE = Path(__file__).parents[2] / "examples" / "notes"


def notes_bundle() -> bytes:
    files = {str(p.relative_to(EXAMPLE)): p.read_bytes() for p in EXAMPLE.rglob("*")
             if p.is_file() and p.name != "svc.json"}
    return site(files, svc_json=json.loads((EXAMPLE / "svc.json").read_text()))


@pytest.fixture(scope="module")
async def server(tmp_path_factory: pytest.TempPathFactory, project_cluster: PrivateCluster) -> AsyncIterator[Server]:
    async with svc_serve(tmp_path_factory.mktemp("envdb"), SVC_WORKER_PROCESSES="1",
                         SVC_PROJECT_DB_ENABLED="true", SVC_PROJECT_DB_ADMIN_URL=project_cluster.admin_url) as running:
        yield running


@pytest.fixture
async def project(server: Server) -> AsyncIterator[Project]:
    async with httpx.AsyncClient(base_url=server.api, timeout=30) as http:
        r = await http.post("/v1/auth/dev/login", json={"subject": "notes"})
        auth = {"authorization": f"Bearer {r.json()['token']}"}
        r = await http.post("/v1/orgs/notes/projects", json={"name": "site"}, headers=auth)
        assert r.status_code == 201, r.text
        yield Project(server=server, http=http, owner="notes", auth=auth, host=r.json()["hostname"])


async def _post(project: Project, path: str, body: Any) -> httpx.Response:
    async with httpx.AsyncClient(timeout=30) as client:
        return await client.post(f"http://127.0.0.1:{project.server.edge_port}{path}", json=body,
                                 headers={"host": project.host})


async def test_the_notes_example_keeps_its_rows_in_env_db(project: Project) -> None:
    assert (await project.deploy(notes_bundle())).status_code == 201
    # Deployed before the project had a database: the worker has no env.db.
    before = await project.get("/api/notes")
    assert before.status_code == 503 and "svc db create" in before.json()["error"]

    r = await project.http.post(f"{project.base}/database", headers=project.auth)
    assert r.status_code == 200, r.text
    # The grant reaches the running deployment at once: no redeploy.
    assert (await project.get("/api/notes")).json() == {"notes": []}
    made = await _post(project, "/api/notes", {"body": "first"})
    assert made.status_code == 201, made.text
    note = made.json()
    assert note["body"] == "first" and isinstance(note["id"], int)
    assert note["created_at"][:2] == "20"  # a timestamptz in PostgreSQL's text form
    listed_r = await project.get("/api/notes")
    assert "notes" in listed_r.json(), listed_r.text
    listed = listed_r.json()["notes"]
    assert [n["body"] for n in listed] == ["first"]

    # A transaction is all or nothing: the empty body fails the check, the first insert goes too.
    failed = await _post(project, "/api/notes/batch", {"bodies": ["second", ""]})
    assert failed.status_code == 400 and failed.json()["code"] == "23514", failed.text  # check_violation
    assert "notes_body_check" in failed.json()["error"]
    assert (await project.get("/api/notes/count")).json() == {"count": 1}
    ok = await _post(project, "/api/notes/batch", {"bodies": ["second", "third"]})
    assert ok.status_code == 201 and len(ok.json()["ids"]) == 2
    assert (await project.get("/api/notes/count")).json() == {"count": 3}

    # PostgreSQL's own words and code, never svc's internals.
    bad = await project.get("/api/notes?limit=many")
    assert bad.status_code == 400 and bad.json()["code"] == "22P02", bad.text  # invalid_text_representation

    # The steady path (the shard's own process and socket) has env.db as the loading path has it.
    await until_steady(project)
    assert (await _post(project, "/api/notes", {"body": "steady"})).status_code == 201
    assert [n["body"] for n in (await project.get("/api/notes")).json()["notes"]][:1] == ["steady"]

    # The rows are the project's, in its own database: psql's view as the project's role agrees.
    creds = (await project.http.get(f"{project.base}/database/connect", headers=project.auth)).json()
    import asyncpg

    con = await asyncpg.connect(host=creds["host"], port=creds["port"], database=creds["database"],
                                user=creds["user"], password=creds["password"])
    try:
        assert await con.fetchval("select count(*) from notes") == 4
        assert await con.fetchval("select tableowner from pg_tables where tablename = 'notes'") == creds["user"]
    finally:
        await con.close()
    await asyncio.sleep(0)
