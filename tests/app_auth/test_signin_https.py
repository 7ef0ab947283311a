"""End-user sign-in on a project's host over https: a real `svc serve` whose edge serves the project
over TLS with a certificate from svc's local CA (SVC_TLS_ISSUER=local, as `make run EDGE_TLS_PORT=...`;
no public CA needed), its three providers the fake identity provider. httpx plays the browser (it
follows the provider's redirects by hand, as test_signin.py's non-browser tests do) and trusts that
CA alone, so each answer is what a browser on https would get: the cookies' attributes, the
callback address the provider is told, and the user the worker is handed."""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from svc.adapters.database.process import PrivateCluster
from svc.adapters.idp.fake import FakeIdp, running_fake_idp
from tests.app_auth.test_signin import PROVIDERS, Env, Site, make_site
from tests.support import components
from tests.support.ports import free_port
from tests.support.serve import svc_serve
from tests.support.wait import until

pytestmark = [components.WORKERD, components.NGINX, components.POSTGRES]


@dataclass
class TlsEnv(Env):
    tls_port: int = 0


@pytest.fixture(scope="module")
async def env(tmp_path_factory: pytest.TempPathFactory, project_cluster: PrivateCluster) -> AsyncIterator[TlsEnv]:
    tls_port = free_port()
    async with running_fake_idp(FakeIdp()) as fake, svc_serve(
            tmp_path_factory.mktemp("signin-https"), SVC_WORKER_PROCESSES="1", SVC_PROJECT_DB_ENABLED="true",
            SVC_PROJECT_DB_ADMIN_URL=project_cluster.admin_url, SVC_AUTH_FAKE_URL=fake.base_url,
            SVC_TLS_ISSUER="local", SVC_EDGE_TLS_PORT=str(tls_port), SVC_CERTIFICATE_CHECK_SECONDS="1") as server:
        yield TlsEnv(server=server, fake=fake, tls_port=tls_port)


class HttpsBrowser:
    """A cookie jar speaking https to the edge (SNI and Host the project's host, verified against
    svc's local CA only), and real HTTP to the fake provider."""

    def __init__(self, site: Site, tls_port: int) -> None:
        assert site.env.server.data_dir is not None
        root = site.env.server.data_dir / "tls" / "local-ca" / "root.pem"
        self.host = site.host
        self.origin = f"https://{site.host}:{tls_port}"
        # (httpx resolves no *.localhost name: the edge's address, the host in SNI and the header.)
        self.edge = httpx.AsyncClient(base_url=f"https://127.0.0.1:{tls_port}", timeout=30,
                                      verify=ssl.create_default_context(cafile=str(root)),
                                      headers={"host": site.host})
        self.idp = httpx.AsyncClient(timeout=30)

    async def aclose(self) -> None:
        await self.edge.aclose()
        await self.idp.aclose()

    async def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return await self.edge.get(path, extensions={"sni_hostname": self.host}, **kwargs)

    async def post(self, path: str, **kwargs: Any) -> httpx.Response:
        return await self.edge.post(path, extensions={"sni_hostname": self.host}, **kwargs)

    async def served(self) -> bool:
        """The project's certificate is at the edge (svc issues it at its next check)."""
        try:
            return (await self.get("/__svc/auth/session")).status_code == 401
        except (httpx.TransportError, ssl.SSLError):
            return False


def _set_cookies(r: httpx.Response) -> dict[str, dict[str, str]]:
    """Each Set-Cookie of an answer: name -> its attributes (lower-cased names), "" its value."""
    found = {}
    for line in r.headers.get_list("set-cookie"):
        first, *attrs = (part.strip() for part in line.split(";"))
        name, _, value = first.partition("=")
        parsed = {"": value}
        for attr in attrs:
            key, _, val = attr.partition("=")
            parsed[key.lower()] = val
        found[name] = parsed
    return found


def _assert_https_cookie(cookie: dict[str, str], path: str = "/") -> None:
    """Secure (never sent over http), HttpOnly (no script reads it), SameSite=Lax (sent on the
    provider's top-level redirect back), host-only (no Domain: a sibling project's host never gets it)."""
    assert "secure" in cookie, cookie
    assert "httponly" in cookie, cookie
    assert cookie.get("samesite", "").lower() == "lax", cookie
    assert "domain" not in cookie, cookie
    assert cookie.get("path") == path, cookie


@pytest.fixture
async def site(env: TlsEnv, request: pytest.FixtureRequest) -> AsyncIterator[Site]:
    owner = "t" + request.node.name.removeprefix("test_")[:20].replace("_", "-").strip("-")
    async for s in make_site(env, owner, client_id=env.fake.client_id, client_secret=env.fake.client_secret):
        yield s


async def test_signing_in_over_https_gives_secure_host_only_cookies_and_an_https_callback(
        site: Site, env: TlsEnv) -> None:
    browser = HttpsBrowser(site, env.tls_port)
    try:
        await until(browser.served, what="the project's certificate at the edge")
        # Over http the site (its auth service too) is sent to https: no sign-in ever runs in clear.
        async with httpx.AsyncClient(timeout=30) as http:
            moved = await http.get(f"http://127.0.0.1:{env.server.edge_port}/__svc/auth/login/github",
                                   headers={"host": site.host})
        assert moved.status_code == 308, moved.text
        assert moved.headers["location"] == f"{browser.origin}/__svc/auth/login/github"

        for provider in PROVIDERS:
            browser.edge.cookies.clear()
            callback = f"{browser.origin}/__svc/auth/callback/{provider}"
            # The provider's app is registered with the https callback only: it must be the one sent.
            env.fake.redirect_uris = [callback]
            r = await browser.get(f"/__svc/auth/login/{provider}", params={"next": "/whoami"})
            assert r.status_code == 302, r.text
            assert parse_qs(urlsplit(r.headers["location"]).query)["redirect_uri"] == [callback]
            _assert_https_cookie(_set_cookies(r)["svc_auth_flow"], path="/__svc/auth/callback/")
            approved = await browser.idp.get(r.headers["location"])
            assert approved.status_code == 302, approved.text
            back = urlsplit(approved.headers["location"])
            assert f"{back.scheme}://{back.netloc}{back.path}" == callback

            r = await browser.get(f"{back.path}?{back.query}")
            assert r.status_code == 302 and r.headers["location"] == "/whoami", r.text
            cookies = _set_cookies(r)
            for name in ("svc_auth", "svc_auth_user"):
                _assert_https_cookie(cookies[name])
            # The worker, over https, is handed the signed-in user (and not one a visitor forges).
            forged = json.dumps({"id": "eu_admin", "email": "admin@example.com"})
            r = await browser.get("/whoami", headers={"Svc-Auth-User": forged})
            assert r.status_code == 200, r.text
            user = json.loads(r.json()["user"])
            assert user["email"] == "alice@example.com" and user["id"] != "eu_admin"
            session = await browser.get("/__svc/auth/session")
            assert session.status_code == 200 and session.json()["user"]["id"] == user["id"]

        # The short-lived user cookie gone (5 minutes on): the edge renews it from the session, the
        # worker still sees the user, and the new cookie is Secure too.
        browser.edge.cookies.delete("svc_auth_user")
        r = await browser.get("/whoami")
        seen = r.json()["user"]
        assert seen is not None, "the worker saw nobody once svc_auth_user had expired"
        assert json.loads(seen)["email"] == "alice@example.com"
        _assert_https_cookie(_set_cookies(r)["svc_auth_user"])
        # Logged out over https: the cookies are cleared (Secure, as they were set) and nobody is seen.
        r = await browser.post("/__svc/auth/logout", data={"next": "/whoami"})
        assert r.status_code == 303, r.text
        cleared = _set_cookies(r)
        for name in ("svc_auth", "svc_auth_user"):
            _assert_https_cookie(cleared[name])
            assert cleared[name][""] in ("", '""')
        assert (await browser.get("/whoami")).json()["user"] is None
    finally:
        await browser.aclose()
        env.fake.redirect_uris = None
