"""kill -9 of `svc serve` in the middle of a restore, then a restart: the operation resumes at the
phase it was in and the database ends holding exactly the chosen generation. The sealing phase
(pg_dump of what is there now) is held at a table lock, so the kill lands in it for certain."""

from __future__ import annotations

import asyncio
import os
import signal
from datetime import datetime
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from svc.adapters.database.process import PrivateCluster
from tests.support.serve import Server, svc_serve
from tests.support.wait import WAIT_SECONDS

URL = "/v1/orgs/crash/projects/web/database"


async def _sql(creds: dict[str, Any], statement: str) -> Any:
    con = await asyncpg.connect(host=creds["host"], port=creds["port"], database=creds["database"],
                                user=creds["user"], password=creds["password"])
    try:
        return await con.fetch(statement)
    finally:
        await con.close()


async def _until(check: Any, what: str, seconds: float = 2 * WAIT_SECONDS) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while loop.time() < deadline:
        found = await check()
        if found:
            return found
        await asyncio.sleep(0.1)
    raise AssertionError(f"{what}: not within {seconds:g}s")


async def test_kill_9_in_a_restore_then_a_restart_finishes_it(tmp_path: Path, project_cluster: PrivateCluster) -> None:
    settings = {"SVC_PROJECT_DB_ENABLED": "true", "SVC_PROJECT_DB_ADMIN_URL": project_cluster.admin_url,
                "SVC_DATABASE_BACKUP_SECONDS": "1", "SVC_JOB_LEASE_SECONDS": "3", "SVC_WORKER_PROCESSES": "1"}
    async with svc_serve(tmp_path, **settings) as server:
        async with httpx.AsyncClient(base_url=server.api, timeout=30) as http:
            token = (await http.post("/v1/auth/dev/login", json={"subject": "crash"})).json()["token"]
            http.headers["authorization"] = f"Bearer {token}"
            assert (await http.post("/v1/orgs/crash/projects", json={"name": "web"})).status_code == 201
            creds = (await http.post(URL)).json()
            await _sql(creds, "create table t (x int)")
            await _sql(creds, "insert into t values (1), (2)")
            written = (await _sql(creds, "select clock_timestamp() as at"))[0]["at"]

            def after(moment: datetime) -> Any:
                async def verified() -> dict[str, Any] | None:
                    gens = (await http.get(URL + "/generations")).json()["generations"]
                    fresh = [g for g in gens if g["verified"] and datetime.fromisoformat(
                        g["createdAt"].replace("Z", "+00:00")) > moment]
                    return fresh[0] if fresh else None
                return verified

            generation = await _until(after(written), "a verified generation of the rows")
            # The backup cycle (every second here) takes a generation of the next change too: waited
            # for, so no scheduled pg_dump meets the lock below and holds the job worker ahead of
            # the restore.
            changing = (await _sql(creds, "select clock_timestamp() as at"))[0]["at"]
            await _sql(creds, "insert into t values (3)")
            await _until(after(changing), "a verified generation of the change")
            admin = await asyncpg.connect(project_cluster.admin_url, database=creds["database"])
            try:
                # Holds pg_dump (sealing) until the kill.
                lock = admin.transaction()
                await lock.start()
                await admin.execute("lock table t in access exclusive mode")
                r = await http.post(URL + "/restore", json={"epoch": generation["epoch"], "seq": generation["seq"]})
                assert r.status_code == 202, r.text
                op_id = r.json()["operationId"]

                async def sealing() -> bool:
                    op = (await http.get(f"{URL}/operations/{op_id}")).json()
                    return bool(op["phase"] == "sealing" and await admin.fetchval(
                        "select count(*) from pg_stat_activity where wait_event_type = 'Lock' and datname = $1",
                        creds["database"]))

                await _until(sealing, "pg_dump waiting in the sealing phase")
                assert server.pgid is not None
                os.killpg(server.pgid, signal.SIGKILL)
                await lock.rollback()
            finally:
                await admin.close()
    # Restarted on the same data directory: the operation resumes and finishes.
    async with svc_serve(tmp_path, **settings) as again:
        await _finished(again, token, op_id)
    assert [r["x"] for r in await _sql(creds, "select x from t order by x")] == [1, 2]


async def _finished(server: Server, token: str, op_id: str) -> None:
    async with httpx.AsyncClient(base_url=server.api, timeout=30,
                                 headers={"authorization": f"Bearer {token}"}) as http:
        async def done() -> dict[str, Any] | None:
            op = (await http.get(f"{URL}/operations/{op_id}")).json()
            return op if op["terminalCode"] is not None else None

        op = await _until(done, "the restore to finish after the restart", 90)
        assert (op["phase"], op["terminalCode"]) == ("done", "ok"), op


