"""Access-control tests: projects to protect, and the edge's side of the contract (docs/edge.md):
the requests nginx sends to /v1/edge/* with X-Svc-Host, with cookies passed explicitly."""

from __future__ import annotations

from dataclasses import dataclass
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
from sqlalchemy import select

from svc.models import AuditEvent
from tests.support.api import Svc, User

JSON = {"accept": "application/json"}
HTML = {"accept": "text/html,application/xhtml+xml"}


@dataclass
class Site:
    org: str
    name: str
    host: str
    project_id: str = ""

    @property
    def access(self) -> str:
        return f"/v1/orgs/{self.org}/projects/{self.name}/access"


async def make_site(admin: User, name: str = "site", org: str | None = None) -> Site:
    org = org or admin.personal_org
    r = await admin.client.post(f"/v1/orgs/{org}/projects", json={"name": name})
    assert r.status_code == 201, r.text
    return Site(org=org, name=name, host=r.json()["hostname"], project_id=r.json()["id"])


async def set_mode(admin: User, site: Site, mode: str, password: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"mode": mode}
    if password is not None:
        body["password"] = password
    r = await admin.client.put(site.access, json=body)
    assert r.status_code == 200, r.text
    result: dict[str, Any] = r.json()
    return result


async def add_member(admin: User, org: str, user: User, role: str) -> None:
    r = await admin.client.post(f"/v1/orgs/{org}/members", json={"provider": "dev", "subject": user.subject,
                                                                 "role": role})
    assert r.status_code == 201, r.text


def set_cookie_value(response: httpx.Response) -> str:
    """The svc_access value a response sets (asserting it is set exactly once)."""
    headers = response.headers.get_list("set-cookie")
    values = [h for h in headers if h.startswith("svc_access=")]
    assert len(values) == 1, headers
    jar: SimpleCookie = SimpleCookie()
    jar.load(values[0])
    return jar["svc_access"].value


def query_of(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


class Edge:
    """Speaks to svc the way nginx does. No cookie jar: each call sends what it is given."""

    def __init__(self, svc: Svc, client: tuple[str, int] | None = None) -> None:
        transport = httpx.ASGITransport(app=svc.app, client=client or ("127.0.0.1", 40000))
        self.http = httpx.AsyncClient(transport=transport, base_url="http://svc.test")

    async def aclose(self) -> None:
        await self.http.aclose()

    async def _send(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        r = await self.http.request(method, url, **kwargs)
        self.http.cookies.clear()
        return r

    async def check(self, host: str, *, cookie: str | None = None, bypass: str | None = None,
                    uri: str = "/") -> httpx.Response:
        headers = {"x-svc-host": host, "x-svc-uri": uri}
        if cookie is not None:
            headers["cookie"] = f"svc_access={cookie}"
        if bypass is not None:
            headers["svc-access-bypass"] = bypass
        return await self._send("GET", "/v1/edge/check", headers=headers)

    async def password_form(self, host: str, next_path: str = "/", *, accept: dict[str, str] = HTML) -> httpx.Response:
        return await self._send("GET", "/v1/edge/password", params={"next": next_path},
                                headers={"x-svc-host": host, **accept})

    async def password(self, host: str, password: str, next_path: str = "/", *,
                       accept: dict[str, str] = HTML) -> httpx.Response:
        return await self._send("POST", "/v1/edge/password", data={"password": password, "next": next_path},
                                headers={"x-svc-host": host, **accept})

    async def callback(self, host: str, code: str, next_path: str = "/", *,
                       accept: dict[str, str] = HTML) -> httpx.Response:
        return await self._send("GET", "/v1/edge/callback", params={"code": code, "next": next_path},
                                headers={"x-svc-host": host, **accept})

    async def sign_in_with_password(self, host: str, password: str) -> str:
        r = await self.password(host, password)
        assert r.status_code == 303, r.text
        return set_cookie_value(r)


async def audit_rows(svc: Svc, prefix: str = "access.") -> list[AuditEvent]:
    async with svc.ctx.db.transaction(write=False) as session:
        rows = await session.scalars(select(AuditEvent).where(AuditEvent.action.startswith(prefix))
                                     .order_by(AuditEvent.at, AuditEvent.id))
        return list(rows.all())
