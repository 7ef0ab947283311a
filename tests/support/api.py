"""An in-process svc (real app, real store, lifespan run) and clients that speak to it over HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import func, select

from svc.app import build_registry, create_app
from svc.context import Adapters, AppContext
from svc.jobs.worker import Worker
from svc.models.jobs import Job
from svc.settings import Config, Settings


@dataclass
class User:
    client: httpx.AsyncClient
    token: str
    id: str
    subject: str
    personal_org: str


class Svc:
    """A running svc. `anon` has no credentials; `login()` gives a signed-in client."""

    def __init__(self, app: FastAPI, anon: httpx.AsyncClient) -> None:
        self.app = app
        self.anon = anon
        self._clients: list[httpx.AsyncClient] = []

    @property
    def ctx(self) -> AppContext:
        ctx: AppContext = self.app.state.ctx
        return ctx

    def client(self, token: str | None = None) -> httpx.AsyncClient:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        c = httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app), base_url="http://svc.test",
                              headers=headers)
        self._clients.append(c)
        return c

    def browser(self, token: str) -> httpx.AsyncClient:
        """A client of the dashboard's pages, signed in as a browser is: the session cookie."""
        from svc.web.session import session_cookie_name

        c = self.client()
        c.cookies.set(session_cookie_name(self.ctx.settings), token)
        return c

    async def login(self, subject: str, *, email: str | None = None, name: str | None = None) -> User:
        body: dict[str, Any] = {"subject": subject}
        if email:
            body["email"] = email
        if name:
            body["name"] = name
        r = await self.anon.post("/v1/auth/dev/login", json=body)
        assert r.status_code == 200, r.text
        data = r.json()
        client = self.client(data["token"])
        me = (await client.get("/v1/me")).json()
        personal = next(o["slug"] for o in me["orgs"] if o["personal"])
        return User(client=client, token=data["token"], id=data["userId"], subject=subject,
                    personal_org=personal)

    async def close(self) -> None:
        for c in self._clients:
            await c.aclose()


@asynccontextmanager
async def running_svc(settings: Settings | Config, adapters: Adapters | None = None, *,
                      run_workers: bool = True) -> AsyncIterator[Svc]:
    app = create_app(settings, adapters, run_workers=run_workers)
    async with app.router.lifespan_context(app):
        anon = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://svc.test")
        svc = Svc(app, anon)
        try:
            yield svc
        finally:
            await anon.aclose()
            await svc.close()


def job_runner(svc: Svc, worker: str = "test") -> Worker:
    """A job worker of the test's own, for a svc started with run_workers=False: `run_once()`
    runs what is due now."""
    return Worker(replace(svc.ctx, worker_name=worker), build_registry(svc.ctx.config))


async def run_due_jobs(svc: Svc) -> None:
    """Run the due jobs (and the ones they enqueue) until none is due."""
    runner = job_runner(svc)
    for _ in range(400):  # 20 s at most
        if await runner.run_once():
            continue
        # A job the svc's own background worker claimed first is still theirs: wait for it to end
        # (it may enqueue more), or the test would look before the job did its work.
        async with svc.ctx.db.transaction(write=False) as s:
            running = await s.scalar(select(func.count()).select_from(Job).where(Job.status == "running"))
        if not running:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("jobs still running after 20 s")


async def wait_operation(user: User, org: str, op_id: str) -> dict[str, Any]:
    """Poll an operation until it has a terminal code (10 s at most); returns it."""
    op: dict[str, Any] = {}
    for _ in range(200):
        op = dict((await user.client.get(f"/v1/orgs/{org}/operations/{op_id}")).json())
        if op["terminalCode"] is not None:
            return op
        await asyncio.sleep(0.05)
    raise AssertionError(f"operation {op_id} did not finish: {op}")


def assert_error(response: httpx.Response, status: int, code: str | None = None) -> dict[str, Any]:
    """Every non-2xx is the Error envelope; returns its body."""
    assert response.status_code == status, f"{response.status_code} {response.text}"
    body = response.json()
    assert set(body) == {"code", "message", "details"}, body
    assert isinstance(body["message"], str) and body["message"]
    if code is not None:
        assert body["code"] == code, body
    return body
