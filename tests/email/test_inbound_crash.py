"""kill -9 of a real `svc serve` in the middle of a delivery and just after one, then a restart:
what a sender was not answered 250 for is not in the log, and its retry is stored; what it was
answered for is in the log once, however often it retries (docs/email.md, "Inbound")."""

from __future__ import annotations

import asyncio
import os
import signal
import smtplib
import sqlite3
from pathlib import Path

import httpx
import pytest

from tests.email.conftest import MAIL_DOMAIN
from tests.email.smtp_client import message, send
from tests.support.ports import free_port
from tests.support.serve import Server, svc_serve
from tests.support.wait import until

LOG = "/v1/orgs/crash/projects/site/email/log"
SITE = f"site.crash.{MAIL_DOMAIN}"


async def _logged(server: Server, token: str) -> list[dict[str, str]]:
    async with httpx.AsyncClient(base_url=server.api, timeout=30, headers={"authorization": f"Bearer {token}"}) as http:
        r = await http.get(LOG)
        assert r.status_code == 200, r.text
        return list(r.json()["entries"])


def _kill(server: Server) -> None:
    assert server.pgid is not None
    os.killpg(server.pgid, signal.SIGKILL)


async def test_kill_9_during_and_after_a_delivery(tmp_path: Path) -> None:
    port = free_port()
    settings = {"SVC_MAIL_DOMAIN": MAIL_DOMAIN, "SVC_SMTP_PORT": str(port)}
    sent = message(sender="ann@sender.example", to=f"hi@{SITE}")
    async with svc_serve(tmp_path, **settings) as server:
        async with httpx.AsyncClient(base_url=server.api, timeout=30) as http:
            token = (await http.post("/v1/auth/dev/login", json={"subject": "crash"})).json()["token"]
            http.headers["authorization"] = f"Bearer {token}"
            assert (await http.post("/v1/orgs/crash/projects", json={"name": "site"})).status_code == 201
            assert (await http.post("/v1/orgs/crash/projects/site/email")).status_code == 200
        assert server.data_dir is not None
        blobs = server.data_dir / "blobs"
        # The store's write lock held by the test: the delivery writes the raw copy, then waits to
        # write its row; the kill lands there for certain.
        holder = sqlite3.connect(server.data_dir / "svc.sqlite3", isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")
            sending = asyncio.create_task(send(port, "ann@sender.example", [f"hi@{SITE}"], sent))
            await until(lambda: any(blobs.rglob("*.eml")) or sending.done(),
                        what="the raw copy written, its row waiting for the store")
            assert not sending.done()
            _kill(server)
            with pytest.raises((smtplib.SMTPServerDisconnected, ConnectionError)):
                await sending
        finally:
            holder.close()
    async with svc_serve(tmp_path, **settings) as server:
        assert await _logged(server, token) == []  # never answered 250: not accepted
        assert (await send(port, "ann@sender.example", [f"hi@{SITE}"], sent)).code == 250  # the sender's retry
        assert len(await _logged(server, token)) == 1
        _kill(server)  # just after the 250
    async with svc_serve(tmp_path, **settings) as server:
        [entry] = await _logged(server, token)
        assert entry["to"] == f"hi@{SITE}" and entry["outcome"] in ("received", "handled")
        # A sender that never heard that 250 sends again: answered 250, stored once.
        assert (await send(port, "ann@sender.example", [f"hi@{SITE}"], sent)).code == 250
        assert [e["id"] for e in await _logged(server, token)] == [entry["id"]]
