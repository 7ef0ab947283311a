"""Identity-provider login in tests: svc (in-process) pointed at the fake IdP (a real HTTP server),
and a `Browser` that walks the redirects the way a person's browser would."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import httpx
from pydantic import SecretStr

from svc.adapters.idp.fake import FakeIdp, running_fake_idp
from svc.app import default_adapters
from svc.settings import Config, Settings
from tests.support.api import Svc, running_svc
from tests.support.config import configured

# The client callbacks a login may return to (SVC_IDP_REDIRECTS) in these tests.
APP_CALLBACK = "http://app.test/cb"
DASHBOARD = "http://localhost:8080"
LOOPBACK = "http://127.0.0.1"
REDIRECTS = f"{APP_CALLBACK},{DASHBOARD},{LOOPBACK}"


def idp_settings(settings: Settings | Config, fake: FakeIdp, provider: str, **extra: Any) -> Config:
    update = {**fake.svc_settings(provider), "idp_redirects": REDIRECTS, **extra}
    update["idp_client_secret"] = SecretStr(str(update["idp_client_secret"]))
    return configured(settings, **update)


@dataclass
class Landing:
    """Where the browser ended up after the callback: the client URL and its fragment."""

    response: httpx.Response
    url: str
    fragment: dict[str, str]


def landing(response: httpx.Response) -> Landing:
    assert response.status_code == 302, f"{response.status_code} {response.text}"
    location = response.headers["location"]
    url, _, fragment = location.partition("#")
    return Landing(response=response, url=url, fragment=dict(parse_qsl(fragment, keep_blank_values=True)))


class Browser:
    """One browser: a cookie jar for svc (ASGI, in-process) and real HTTP to the identity provider."""

    def __init__(self, svc: Svc, provider: str) -> None:
        self.svc = svc
        self.provider = provider
        self.http = svc.client()  # cookies persist across requests, as in a browser
        self.idp = httpx.AsyncClient(timeout=10)

    async def aclose(self) -> None:
        await self.idp.aclose()

    async def start(self, redirect: str = APP_CALLBACK, provider: str | None = None) -> httpx.Response:
        return await self.http.get(f"/v1/auth/{provider or self.provider}/start", params={"redirect": redirect})

    async def authorize(self, authorize_url: str, *, user: str | None = None, deny: bool = False) -> str:
        """Visit the provider's page (it approves at once) and return the callback URL it redirects to."""
        extra: dict[str, str] = {}
        if user:
            extra["login_hint"] = user
        if deny:
            extra["fake_action"] = "deny"
        url = f"{authorize_url}&{urlencode(extra)}" if extra else authorize_url
        r = await self.idp.get(url)
        assert r.status_code == 302, f"{r.status_code} {r.text}"
        return r.headers["location"]

    async def begin(self, redirect: str = APP_CALLBACK, *, user: str | None = None, deny: bool = False) -> str:
        """start + authorize: the callback URL, not visited yet."""
        r = await self.start(redirect)
        assert r.status_code == 302, f"{r.status_code} {r.text}"
        return await self.authorize(r.headers["location"], user=user, deny=deny)

    async def callback(self, url: str, **changes: str) -> httpx.Response:
        """Visit the callback URL, with some query parameters replaced (to tamper with them)."""
        parts = urlsplit(url)
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        query.update(changes)
        return await self.http.get(parts.path, params=query)

    async def login(self, redirect: str = APP_CALLBACK, *, user: str | None = None) -> Landing:
        result = landing(await self.callback(await self.begin(redirect, user=user)))
        assert "token" in result.fragment, result.fragment
        return result


@dataclass
class IdpEnv:
    svc: Svc
    fake: FakeIdp
    provider: str
    settings: Settings
    browsers: list[Browser] = field(default_factory=list)

    def browser(self) -> Browser:
        b = Browser(self.svc, self.provider)
        self.browsers.append(b)
        return b


@asynccontextmanager
async def idp_env(settings: Settings, provider: str, **extra: Any) -> AsyncIterator[IdpEnv]:
    """The fake IdP on 127.0.0.1 (port 0), and svc configured for it by the adapter factory."""
    callback = f"{settings.public_url}/v1/auth/{provider}/callback"
    async with running_fake_idp(FakeIdp(redirect_uris=[callback])) as fake:
        configured = idp_settings(settings, fake, provider, **extra)
        async with running_svc(configured, default_adapters(configured)) as svc:
            env = IdpEnv(svc=svc, fake=fake, provider=provider, settings=configured)
            try:
                yield env
            finally:
                for b in env.browsers:
                    await b.aclose()
