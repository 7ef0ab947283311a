"""Machinery for the schemathesis run: a requests adapter that hands each request to the running app
on the test's own event loop, a per-operation world of real ids, and a log of server tracebacks.

Schemathesis (hypothesis) is synchronous, so it runs in a worker thread; the app, its lifespan and
its state store live on the test's event loop (tests.support.api.running_svc). Every request
crosses over with asyncio.run_coroutine_threadsafe and goes through httpx's ASGI transport, the
same way every other API test reaches the app."""

from __future__ import annotations

import asyncio
import io
import logging
from dataclasses import dataclass, field
from typing import Any

import httpx
import requests
import requests.adapters
import urllib3
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import strategies as st

from tests.support.api import Svc

BASE_URL = "http://svc.test"


class LoopAdapter(requests.adapters.HTTPAdapter):
    """Send a prepared request to the ASGI app on `loop` and build the requests.Response from it."""

    def __init__(self, app: Any, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self.loop = loop
        # raise_app_exceptions=False: an unhandled error is the 500 a real server would answer.
        self.client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app, raise_app_exceptions=False))

    def send(self, request: requests.PreparedRequest, stream: bool = False, timeout: Any = None,  # type: ignore[override]
             verify: Any = True, cert: Any = None, proxies: Any = None) -> requests.Response:
        body = request.body
        content = body.encode() if isinstance(body, str) else (body or b"")
        assert isinstance(content, bytes), type(body)
        headers = {k: v if isinstance(v, str) else v.decode("latin-1") for k, v in request.headers.items()}
        future = asyncio.run_coroutine_threadsafe(
            self.client.request(request.method or "GET", request.url or "", headers=headers, content=content),
            self.loop)
        r = future.result(timeout=60)
        raw = urllib3.HTTPResponse(body=io.BytesIO(r.content), headers=urllib3.HTTPHeaderDict(r.headers.multi_items()),
                                   status=r.status_code, reason=r.reason_phrase, preload_content=False, version=11,
                                   request_method=request.method)
        return self.build_response(request, raw)

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.client.aclose(), self.loop).result(timeout=10)


def loop_session(app: Any, loop: asyncio.AbstractEventLoop) -> requests.Session:
    session = requests.Session()
    session.mount("http://", LoopAdapter(app, loop))
    return session


class ServerErrors(logging.Handler):
    """Collects the tracebacks svc logs for unhandled errors, to put them in the report."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.records: list[str] = []
        self.setFormatter(logging.Formatter("%(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(self.format(record))


@dataclass
class World:
    """Real things for one operation's cases to find: an org of its own with a second member, an
    access token, an SSH key and an invite (each where the endpoint exists)."""

    token: str
    path: dict[str, str] = field(default_factory=dict)


def ssh_public_key() -> str:
    key = Ed25519PrivateKey.generate().public_key()
    return key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()


def public_keys() -> st.SearchStrategy[str]:
    """Public key lines of every type svc accepts, some with a comment: a new ed25519 key each time,
    and one key of each other type (made once: an RSA key takes a while; again: 409 ssh_key_exists)."""
    curves = (ec.SECP256R1(), ec.SECP384R1(), ec.SECP521R1())
    others = [ec.generate_private_key(curve).public_key() for curve in curves]
    others.append(rsa.generate_private_key(public_exponent=65537, key_size=2048).public_key())
    openssh = serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    lines = [k.public_bytes(*openssh).decode() for k in others]
    key = st.one_of(st.builds(ssh_public_key), st.sampled_from(lines))
    return st.tuples(key, st.sampled_from(["", " laptop", "  me@example.com\n"])).map("".join)


async def build_world(svc: Svc, n: int) -> World:
    owner = await svc.login("fuzz-owner")
    member = await svc.login(f"fuzz-member-{n}")
    slug = f"fuzz-{n}"
    c = owner.client
    r = await c.post("/v1/orgs", json={"slug": slug, "name": f"Fuzz {n}"})
    assert r.status_code == 201, r.text
    r = await c.post(f"/v1/orgs/{slug}/members", json={"provider": "dev", "subject": member.subject, "role": "member"})
    assert r.status_code == 201, r.text
    world = World(token=owner.token, path={"orgSlug": slug, "userId": member.id})
    # Endpoints other areas own: used when they exist, so deep code runs rather than only 404s.
    attempts: list[tuple[str, str, dict[str, Any], dict[str, str]]] = [
        ("/v1/me/tokens", "tokenId", {"name": f"fuzz {n}"}, {}),
        ("/v1/me/ssh-keys", "keyId", {"name": f"fuzz {n}", "publicKey": ssh_public_key()}, {}),
        (f"/v1/orgs/{slug}/invites", "inviteId", {"email": f"fuzz{n}@example.com", "role": "viewer"},
         {"token": "token"}),
    ]
    r = await c.post(f"/v1/orgs/{slug}/dns/zones", json={"name": f"fuzz-{n}.example"})
    if r.status_code == 200:
        world.path["zone"] = r.json()["name"]
    r = await c.post(f"/v1/orgs/{slug}/projects", json={"name": "web"})
    if r.status_code in (200, 201):
        world.path["projectName"] = "web"
        r = await c.post(f"/v1/orgs/{slug}/projects/web/hostnames", json={"name": f"www.fuzz-{n}.example.net"})
        if r.status_code == 200:
            world.path["host"] = r.json()["host"]
    for url, name, body, extra in attempts:
        r = await c.post(url, json=body)
        if r.status_code in (200, 201) and isinstance(r.json().get("id"), str):
            world.path[name] = r.json()["id"]
            for param, key in extra.items():
                if isinstance(r.json().get(key), str):
                    world.path[param] = r.json()[key]
    return world


def is_error_envelope(body: object) -> bool:
    return (isinstance(body, dict) and set(body) == {"code", "message", "details"}
            and isinstance(body["code"], str) and bool(body["code"])
            and isinstance(body["message"], str) and bool(body["message"])
            and (body["details"] is None or isinstance(body["details"], dict)))
