"""One host per request, against a tenant who names two (issue 42, 1 and 8): the edge routes a
request, asks the access check and keys the check cache by the same host, the one of an
absolute-form request target when there is one (RFC 9112 3.2.2), never the Host header's beside it;
and what a client says of itself in Forwarded, X-Forwarded-Host, X-Real-IP, X-Original-URL and the
like never reaches a worker or the API.

Through the real nginx: with the API's real check (svc's app served over HTTP) in both protected
modes, over http and https, without a cookie and with a valid cookie of the tenant's own project;
with svc's worker runtime (`svc serve`, workerd) for a protected worker; with the fake check of
tests/edge/helpers.py for what the API is sent."""

from __future__ import annotations

import asyncio
import datetime
import json
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx
import pytest
import uvicorn
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from svc.adapters.edge.port import ServedCertificate
from svc.adapters.edge.settings import EdgeSettings
from svc.adapters.workers.workerd import find_workerd
from svc.edge import NginxEdge
from svc.edge.component import EdgeRouting
from svc.settings import Config
from tests.access.helpers import Site, make_site, query_of, set_cookie_value, set_mode
from tests.edge.conftest import NGINX, Running, edge_settings
from tests.edge.helpers import create_project, deploy, set_access
from tests.support.api import Svc, User, running_svc
from tests.support.bundles import site as bundle
from tests.support.config import configured
from tests.support.ports import free_port
from tests.support.serve import Server, svc_serve

pytestmark = pytest.mark.skipif(NGINX is None, reason="nginx is not installed (make test installs it)")

SECRET = b"the victim's secret, 7f3a9c"
PASSWORD = "tenant password 42"
# The only name the edge holds a certificate for: a client picks its SNI, so https requests ask
# for it and name the project host in the request.
TLS_NAME = "tls.test"
NOWHERE = "nothing.invalid"
WAIT = 90.0


# --- raw requests: an absolute-form target and a Host header of the client's choosing ---


def _edge_port(config: Config) -> int:
    return config.settings_of(EdgeSettings).edge_port



@dataclass
class Answer:
    status: int
    head: str
    raw: bytes

    def header(self, name: str) -> str | None:
        for line in self.head.split("\r\n")[1:]:
            key, _, value = line.partition(":")
            if key.strip().lower() == name:
                return value.strip()
        return None


async def raw_get(port: int, target: str, host: str, *, tls: bool = False, headers: dict[str, str] | None = None,
                  method: str = "GET") -> Answer:
    context = None
    if tls:
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE

    async def ask() -> bytes:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context,
                                                       server_hostname=TLS_NAME if tls else None)
        lines = [f"{method} {target} HTTP/1.1", f"Host: {host}", "Connection: close",
                 *(f"{k}: {v}" for k, v in (headers or {}).items())]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        await writer.drain()
        data = await reader.read()
        writer.close()
        return data

    data = await asyncio.wait_for(ask(), WAIT)
    head = data.partition(b"\r\n\r\n")[0].decode("latin-1")
    return Answer(status=int(head.split(" ", 2)[1]), head=head, raw=data)


def _certificate(name: str) -> ServedCertificate:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .sign(key, hashes.SHA256()))
    return ServedCertificate(name=name, fullchain_pem=cert.public_bytes(serialization.Encoding.PEM).decode(),
                             key_pem=key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                       serialization.NoEncryption()).decode())


class OneCertificate:
    """The edge's certificate source (adapters/edge/port.py CertificateSource): TLS_NAME's alone."""

    def __init__(self) -> None:
        self.served = [_certificate(TLS_NAME)]

    async def version(self) -> str:
        return "1"

    async def certificates(self) -> list[ServedCertificate]:
        return self.served


# --- svc's real check behind the real nginx, http and https ---


@dataclass
class Tenants:
    """Per protected mode: the victim's project and the tenant's own, and the tenant's valid cookie
    for their own."""

    svc: Svc
    edge: NginxEdge
    victims: dict[str, Site]
    owns: dict[str, Site]
    cookies: dict[str, str]

    @property
    def port(self) -> int:
        return self.svc.ctx.settings_of(EdgeSettings).edge_port

    @property
    def tls_port(self) -> int:
        tls_port = self.svc.ctx.settings_of(EdgeSettings).edge_tls_port
        assert tls_port is not None
        return tls_port


@asynccontextmanager
async def serving(svc: Svc) -> AsyncIterator[str]:
    """svc's app over HTTP on a free port (its lifespan already runs): the API the edge asks."""
    server = uvicorn.Server(uvicorn.Config(svc.app, host="127.0.0.1", port=0, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve())
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    while not server.started:
        assert loop.time() < deadline and not task.done(), "the API did not start"
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        await task


async def until(check: object, what: str) -> None:
    assert callable(check)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    while not await check():
        assert loop.time() < deadline, what
        await asyncio.sleep(0.05)


async def _deployed(user: User, site: Site, files: dict[str, bytes]) -> None:
    r = await user.client.post(f"/v1/orgs/{site.org}/projects/{site.name}/deployments",
                               content=bundle({f"assets/{k}": v for k, v in files.items()}),
                               headers={"content-type": "application/gzip"})
    assert r.status_code == 201, r.text


async def _own_cookie(eve: User, site: Site, mode: str, port: int) -> str:
    """The tenant's cookie for their own project, as a browser gets it through the edge."""
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=WAIT) as edge:
        if mode == "password":
            r = await edge.post("/__svc/password", data={"password": PASSWORD, "next": "/"},
                                headers={"host": site.host})
            assert r.status_code == 303, r.text
        else:
            r = await eve.client.post("/v1/access/authorize", json={"to": site.host, "next": "/"})
            assert r.status_code == 200, r.text
            code = query_of(r.json()["redirect"])["code"]
            r = await edge.get("/__svc/callback", params={"code": code, "next": "/"}, headers={"host": site.host})
            assert r.status_code == 302, r.text
    return set_cookie_value(r)


@pytest.fixture(scope="module")
async def tenants(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Tenants]:
    assert NGINX is not None
    settings = edge_settings(tmp_path_factory.mktemp("tenants") / "data", edge_tls_port=free_port())
    async with running_svc(settings) as svc, serving(svc) as api:
        edge = NginxEdge(configured(settings), EdgeRouting(svc.ctx), api_url=api, binary=NGINX,
                         certificates=OneCertificate())
        await edge.start()
        svc.ctx.edge = edge
        try:
            vic, eve = await svc.login("vic"), await svc.login("eve")
            victims, owns, cookies = {}, {}, {}
            for mode in ("org", "password"):
                victims[mode] = await make_site(vic, f"secret-{mode}")
                owns[mode] = await make_site(eve, f"mine-{mode}")
                await _deployed(vic, victims[mode], {"index.html": b"<h1>vic</h1>", "secret.txt": SECRET})
                await _deployed(eve, owns[mode], {"index.html": b"<h1>eve</h1>", "secret.txt": b"eve's own"})
                await set_mode(vic, victims[mode], mode, PASSWORD if mode == "password" else None)
                await set_mode(eve, owns[mode], mode, PASSWORD if mode == "password" else None)
            await edge.converge_now()
            for mode in ("org", "password"):
                victim, own = victims[mode], owns[mode]

                async def protected(host: str = victim.host) -> bool:
                    return (await raw_get(_edge_port(settings), "/secret.txt", host)).status in (302, 401)

                await until(protected, f"the edge did not protect {victim.host}")
                cookies[mode] = await _own_cookie(eve, own, mode, _edge_port(settings))
            yield Tenants(svc=svc, edge=edge, victims=victims, owns=owns, cookies=cookies)
        finally:
            svc.ctx.edge = None
            await edge.stop()


def _refused(answer: Answer, login_for: str | None) -> None:
    """Refused: nothing of the victim's; sent to the login of `login_for`, or the edge's 404 for a
    host it does not route (None)."""
    assert SECRET not in answer.raw, answer.head
    if login_for is None:
        assert answer.status == 404, answer.head
        return
    assert answer.status == 302, answer.head
    location = answer.header("location") or ""
    # The login of the host that was routed and checked, never of the Host header's.
    assert f"to={login_for}&" in location or f"//{login_for}:" in location, location


@pytest.mark.parametrize("scheme", ["http", "https"])
@pytest.mark.parametrize("mode", ["org", "password"])
async def test_a_request_naming_two_hosts_gets_nothing_of_a_protected_project(tenants: Tenants, mode: str,
                                                                              scheme: str) -> None:
    victim, own = tenants.victims[mode], tenants.owns[mode]
    cookie = {"cookie": f"svc_access={tenants.cookies[mode]}"}
    tls = scheme == "https"
    port = tenants.tls_port if tls else tenants.port

    # The tenant's cookie is valid for their own project (so what it is refused below, it is
    # refused for the host it is not for) ...
    mine = await raw_get(port, f"{scheme}://{own.host}/secret.txt", own.host, tls=tls, headers=cookie)
    assert (mine.status, mine.raw.endswith(b"eve's own")) == (200, True), mine.head
    # ... and the victim's project is protected.
    _refused(await raw_get(port, "/secret.txt", victim.host, tls=tls), victim.host)

    for headers in ({}, cookie):
        # The request target names the protected host, the Host header another (an unknown one,
        # or the one the cookie is for): the target's host is the request's one host.
        for other in (NOWHERE, own.host):
            answer = await raw_get(port, f"{scheme}://{victim.host}/secret.txt", other, tls=tls, headers=headers)
            _refused(answer, victim.host)
        # The reverse: the target names a host nobody routes, Host the protected one.
        _refused(await raw_get(port, f"{scheme}://{NOWHERE}/secret.txt", victim.host, tls=tls, headers=headers), None)
    # Nothing above left an allowed answer in the check cache for the victim's host.
    _refused(await raw_get(port, "/secret.txt", victim.host, tls=tls, headers=cookie), victim.host)
    _refused(await raw_get(port, "/", victim.host, tls=tls, headers=cookie), victim.host)


# --- what a client says of itself, and which host the API is told (the fake check) ---

# What a client may claim of itself that the edge never says: dropped on the way.
DROPPED = {"Forwarded": "for=6.6.6.6;host=evil.test;proto=https", "True-Client-IP": "6.6.6.6",
           "X-Forwarded-Ssl": "on", "X-Forwarded-Scheme": "https", "X-Forwarded-Prefix": "/admin",
           "X-Forwarded-Server": "evil.test", "X-Original-URL": "/admin", "X-Rewrite-URL": "/admin",
           "X-Client-IP": "6.6.6.6", "X-Cluster-Client-IP": "6.6.6.6", "Client-IP": "6.6.6.6",
           "Fastly-Client-IP": "6.6.6.6", "X-Original-Forwarded-For": "6.6.6.6"}
# ... and all it may claim: the edge says its own instead, or nothing.
FORGED = {**DROPPED, "X-Forwarded-Host": "evil.test", "X-Real-IP": "6.6.6.6", "CF-Connecting-IP": "6.6.6.6",
          "X-Forwarded-For": "6.6.6.6", "X-Forwarded-Proto": "https", "X-Forwarded-Port": "6666"}


def _as_the_edge_tells_a_worker(seen: dict[str, str]) -> None:
    """A worker hears the client's address from the edge and nothing else of the client's claims
    (its URL carries the host, port and scheme)."""
    told = {name.lower() for name in DROPPED} | {"x-forwarded-host", "x-real-ip", "x-forwarded-port"}
    assert not told & set(seen), seen
    assert [seen.get(name) for name in ("cf-connecting-ip", "x-forwarded-for")] == ["127.0.0.1"] * 2, seen


def _as_the_edge_says(seen: dict[str, str], host: str, port: int) -> None:
    assert not {name.lower() for name in DROPPED} & set(seen), seen
    assert seen.get("x-forwarded-port") == str(port), seen
    assert seen.get("x-forwarded-host") == host, seen
    assert [seen.get(name) for name in ("x-real-ip", "cf-connecting-ip", "x-forwarded-for")] == ["127.0.0.1"] * 3, seen
    # (workerd takes X-Forwarded-Proto as the URL's scheme: the worker tests that.)
    assert seen.get("x-forwarded-proto", "http") == "http", seen


async def test_the_api_is_told_the_routed_host_and_the_edges_own_client_headers(running: Running) -> None:
    alice = await running.svc.login("alice")
    site = await create_project(alice, "secret")
    await deploy(running.ctx, site, {"index.html": b"<h1>members</h1>", "secret.txt": SECRET})
    await set_access(running.ctx, site, "password")
    await running.edge.converge_now()
    port, check = running.svc.ctx.settings_of(EdgeSettings).edge_port, running.check

    # The check is asked about the host the request was routed by, the target's, with the edge's
    # own client headers.
    r = await raw_get(port, f"http://{site.host}/secret.txt", NOWHERE, headers={**FORGED, "X-Svc-Host": NOWHERE})
    assert r.status == 302 and SECRET not in r.raw, r.head
    assert check.checks[-1]["host"] == site.host
    _as_the_edge_says(check.headers[-1], site.host, port)
    # The API's pages on the host (/__svc/) likewise.
    r = await raw_get(port, f"http://{site.host}/__svc/password?next=/", NOWHERE, headers=FORGED)
    assert r.status == 200 and r.raw.endswith(f"svc page /v1/edge/password for {site.host}".encode()), r.head
    assert check.proxied[-1]["host"] == site.host
    _as_the_edge_says(check.headers[-1], site.host, port)


# --- a protected worker, and what a worker is told (`svc serve`: the edge and workerd) ---

WORKER = b"""
let runs = 0;
export default {
  async fetch(request) {
    runs += 1;
    const url = new URL(request.url);
    if (url.pathname === "/headers") {
      return Response.json({ host: url.host, scheme: url.protocol, headers: Object.fromEntries(request.headers) });
    }
    return Response.json({ ran: "the worker ran", runs });
  },
};
"""


@dataclass
class Runtime:
    server: Server
    victim: str
    bypass: str
    own: str
    cookie: str
    public: str


async def _made(http: httpx.AsyncClient, subject: str, name: str, files: dict[str, bytes],
                mode: str | None) -> tuple[str, dict[str, str]]:
    r = await http.post("/v1/auth/dev/login", json={"subject": subject})
    auth = {"authorization": f"Bearer {r.json()['token']}"}
    r = await http.post(f"/v1/orgs/{subject}/projects", json={"name": name}, headers=auth)
    assert r.status_code == 201, r.text
    host: str = r.json()["hostname"]
    r = await http.post(f"/v1/orgs/{subject}/projects/{name}/deployments", content=bundle(files),
                        headers={**auth, "content-type": "application/gzip"})
    assert r.status_code == 201, r.text
    if mode is not None:
        r = await http.put(f"/v1/orgs/{subject}/projects/{name}/access", json={"mode": mode, "password": PASSWORD},
                           headers=auth)
        assert r.status_code == 200, r.text
    return host, auth


@pytest.fixture(scope="module")
async def runtime(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Runtime]:
    if find_workerd() is None:
        pytest.skip("workerd is not installed (make setup)")
    worker = {"worker/index.js": WORKER, "assets/index.html": b"<h1>home</h1>"}
    async with svc_serve(tmp_path_factory.mktemp("tenants-runtime"), SVC_WORKER_PROCESSES="1") as server, \
            httpx.AsyncClient(base_url=server.api, timeout=WAIT) as http:
        victim, auth = await _made(http, "vic", "site", worker, "password")
        r = await http.post("/v1/orgs/vic/projects/site/access/bypass", headers=auth)
        assert r.status_code == 200, r.text
        bypass = r.json()["secret"]
        own, _ = await _made(http, "eve", "mine", {"assets/index.html": b"eve's own"}, "password")
        public, _ = await _made(http, "pub", "site", worker, None)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.edge_port}", timeout=WAIT) as edge:
            async def served() -> bool:
                r = await edge.get("/headers", headers={"host": public})
                return r.status_code == 200 and r.json().get("host") == public

            await until(served, "the public worker did not answer")
            r = await edge.post("/__svc/password", data={"password": PASSWORD, "next": "/"}, headers={"host": own})
            assert r.status_code == 303, r.text
            cookie = set_cookie_value(r)
        yield Runtime(server=server, victim=victim, bypass=bypass, own=own, cookie=cookie, public=public)


async def test_a_protected_worker_does_not_run_for_a_request_naming_two_hosts(runtime: Runtime) -> None:
    port, victim = runtime.server.edge_port, runtime.victim
    cookie = {"cookie": f"svc_access={runtime.cookie}"}
    assert (await raw_get(port, "/", runtime.own, headers=cookie)).raw.endswith(b"eve's own")
    for headers in ({}, cookie):
        for other in (NOWHERE, runtime.own):
            answer = await raw_get(port, f"http://{victim}/api", other, headers=headers)
            assert answer.status == 302 and b"the worker ran" not in answer.raw, answer.head
            assert f"//{victim}:" in (answer.header("location") or ""), answer.head
        answer = await raw_get(port, f"http://{NOWHERE}/api", victim, headers=headers)
        assert answer.status == 404 and b"the worker ran" not in answer.raw, answer.head
    # The worker ran for none of them: the first request that passes the check is its first run.
    answer = await raw_get(port, "/api", victim, headers={"svc-access-bypass": runtime.bypass})
    assert answer.status == 200 and answer.raw.endswith(b'{"ran":"the worker ran","runs":1}'), answer.raw


async def test_a_worker_sees_the_edges_own_client_headers_never_the_clients(runtime: Runtime) -> None:
    port, public = runtime.server.edge_port, runtime.public
    for target, host in (("/headers", public), (f"http://{public}/headers", NOWHERE)):
        answer = await raw_get(port, target, host, headers=FORGED)
        assert answer.status == 200, answer.raw
        seen = json.loads(answer.raw.partition(b"\r\n\r\n")[2])
        assert (seen["host"], seen["scheme"]) == (public, "http:"), seen
        _as_the_edge_tells_a_worker(seen["headers"])
