"""A shorter SVC_DATABASE_BACKUP_SECONDS takes effect at the restart: svc ran with the hourly grid
(its cycle's next run stored an hour ahead), was stopped, and started again with a check every
second; the change made meanwhile gets its generation within seconds, not an hour later."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from svc.adapters.database.process import PrivateCluster
from tests.support.serve import svc_serve
from tests.support.wait import WAIT_SECONDS, until

URL = "/v1/orgs/grid/projects/web/database"


def _next_run(data_dir: Path) -> datetime | None:
    """The backup cycle's stored next run (svc's SQLite store; naive UTC there)."""
    with sqlite3.connect(data_dir / "svc.sqlite3") as con:
        row = con.execute("select next_run_at from cycles where name = 'database.cycle'").fetchone()
    return datetime.fromisoformat(row[0]).replace(tzinfo=UTC) if row else None


async def _sql(creds: dict[str, Any], statement: str) -> Any:
    con = await asyncpg.connect(host=creds["host"], port=creds["port"], database=creds["database"],
                                user=creds["user"], password=creds["password"])
    try:
        return await con.fetchval(statement)
    finally:
        await con.close()


async def test_a_shorter_backup_interval_moves_the_stored_next_run_at_the_restart(
        tmp_path: Path, project_cluster: PrivateCluster) -> None:
    settings = {"SVC_PROJECT_DB_ENABLED": "true", "SVC_PROJECT_DB_ADMIN_URL": project_cluster.admin_url}
    async with svc_serve(tmp_path, SVC_DATABASE_BACKUP_SECONDS="3600", **settings) as server:
        assert server.data_dir is not None
        async with httpx.AsyncClient(base_url=server.api, timeout=30) as http:
            token = (await http.post("/v1/auth/dev/login", json={"subject": "grid"})).json()["token"]
            http.headers["authorization"] = f"Bearer {token}"
            assert (await http.post("/v1/orgs/grid/projects", json={"name": "web"})).status_code == 201
            creds = (await http.post(URL)).json()
            await _sql(creds, "create table t (x int)")

            # The hourly grid's first turn ran at the start: its next run is stored an hour ahead.
            async def stored_an_hour_ahead() -> bool:
                at = _next_run(server.data_dir)  # type: ignore[arg-type]
                return at is not None and at > datetime.now(UTC) + timedelta(minutes=50)

            await until(stored_an_hour_ahead, what="the backup cycle's next run stored an hour ahead")
    # Stopped; a change made while it is down.
    await _sql(creds, "insert into t values (1)")
    changed = await _sql(creds, "select clock_timestamp()")

    # Started again with a check every second: the next run follows the new interval.
    async with svc_serve(tmp_path, SVC_DATABASE_BACKUP_SECONDS="1", **settings) as again:
        async with httpx.AsyncClient(base_url=again.api, timeout=30,
                                     headers={"authorization": f"Bearer {token}"}) as http:
            async def generation_of_the_change() -> dict[str, Any] | None:
                gens = (await http.get(URL + "/generations")).json()["generations"]
                fresh = [g for g in gens if g["verified"] is not None
                         and datetime.fromisoformat(g["createdAt"].replace("Z", "+00:00")) > changed]
                return fresh[0] if fresh else None

            generation = await until(generation_of_the_change, timeout=WAIT_SECONDS,
                                     what="a generation of the change made while svc was down")
            assert (generation["kind"], generation["verified"]) == ("scheduled", True)
        assert server.data_dir is not None
        at = _next_run(server.data_dir)
        assert at is not None and at < datetime.now(UTC) + timedelta(minutes=1)
