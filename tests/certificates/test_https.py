"""https end to end: a real `svc serve` (its edge, its managed PowerDNS) with a real ACME server
(pebble) whose DNS-01 checks that PowerDNS answers. svc gets the app domain's wildcard by itself,
writes it for the edge (0600) and the edge serves every project's default hostname over TLS with
it, picked by SNI; a name svc holds no certificate for gets no handshake."""

from __future__ import annotations

import asyncio
import re
import shutil
import socket
import ssl
import tempfile
from pathlib import Path

import httpx
import pytest

from tests.support.acme import PEBBLE_REQUIRED, running_pebble
from tests.support.bundles import site
from tests.support.pdns import free_dns_port
from tests.support.ports import free_port
from tests.support.serve import Server, svc_serve

pytestmark = PEBBLE_REQUIRED


def _https_get(port: int, host: str, root_pem: str, headers: dict[str, str] | None = None) -> tuple[str, str]:
    """GET / over TLS to 127.0.0.1:port with SNI `host`, verified against `root_pem`: (status line, body)."""
    ctx = ssl.create_default_context(cadata=root_pem)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
            ctx.wrap_socket(raw, server_hostname=host) as tls:
        tls.sendall(f"GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := tls.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    if headers is not None:
        headers.update((k.strip().lower(), v.strip()) for k, _, v in
                       (line.partition(":") for line in head.decode().split("\r\n")[1:]))
    return head.split(b"\r\n", 1)[0].decode(), body.decode(errors="replace")


async def test_default_hostnames_are_served_over_https_with_the_wildcard(tmp_path: Path) -> None:
    dns_port, edge_port, tls_port = free_dns_port(), free_port(), free_port()
    # (A short directory: PowerDNS's control socket path must fit a unix socket's 108 bytes.)
    work = Path(tempfile.mkdtemp(prefix="svctls-"))
    try:
        async with running_pebble(tmp_path / "pebble", dns_port, http_port=edge_port) as pebble:
            root = await pebble.root_pem()
            async with svc_serve(work, edge_port=edge_port, SVC_DNS_PORT=str(dns_port),
                                 SVC_APP_DOMAIN="apps.test", SVC_ACME_DIRECTORY_URL=pebble.directory_url,
                                 SVC_ACME_CA_BUNDLE=pebble.ca_bundle, SVC_EDGE_TLS_PORT=str(tls_port),
                                 SVC_CERTIFICATE_CHECK_SECONDS="1", SVC_EDGE_HSTS_SECONDS="600",
                                 SVC_PUBLIC_URL=f"https://svc.apps.test:{tls_port}") as server:
                await _journey(server, tls_port, root)
                await _console(server, tls_port, root)
    finally:
        shutil.rmtree(work, ignore_errors=True)


async def _journey(server: Server, tls_port: int, root: str) -> None:
    assert f"https:     on 127.0.0.1:{tls_port}" in server.log.read_text()
    async with httpx.AsyncClient(base_url=server.api, timeout=30) as http:
        token = (await http.post("/v1/auth/dev/login", json={"subject": "tls"})).json()["token"]
        auth = {"authorization": f"Bearer {token}"}
        made = await http.post("/v1/orgs/tls/projects", json={"name": "web"}, headers=auth)
        host = made.json()["hostname"]
        assert host == "web-tls.apps.test"
        r = await http.post("/v1/orgs/tls/projects/web/deployments", headers={**auth,
                            "content-type": "application/gzip"},
                            content=site({"assets/index.html": b"<h1>over tls</h1>"}))
        assert r.status_code == 201, r.text

    async def served() -> tuple[str, str] | None:
        try:
            return await asyncio.to_thread(_https_get, tls_port, host, root)
        except (OSError, ssl.SSLError):
            return None

    answer = None
    for _ in range(600):  # the wildcard is ordered at the first check, then the edge reloads
        answer = await served()
        if answer is not None:
            break
        await asyncio.sleep(0.1)
    assert answer is not None, server.log.read_text()[-3000:]
    status, body = answer
    assert status == "HTTP/1.1 200 OK" and body == "<h1>over tls</h1>"
    # HSTS, as the operator asked (SVC_EDGE_HSTS_SECONDS): on https answers only.
    headers: dict[str, str] = {}
    await asyncio.to_thread(_https_get, tls_port, host, root, headers)
    assert headers["strict-transport-security"] == "max-age=600"
    # The files nginx reads are svc's alone.
    assert server.data_dir is not None
    certs = server.data_dir / "edge" / "certs"
    assert certs.stat().st_mode & 0o077 == 0
    assert all(p.stat().st_mode & 0o077 == 0 for p in certs.iterdir())
    # A name outside the wildcard: no certificate, no handshake (never another name's).
    with pytest.raises(ssl.SSLError):
        await asyncio.to_thread(_https_get, tls_port, "elsewhere.example.net", root)

    # A custom hostname: once active, its own certificate by HTTP-01, which the CA checks
    # at the edge (svc answers from the store), then served over https.
    async with httpx.AsyncClient(base_url=server.api, timeout=30, headers=auth) as http:
        assert (await http.post("/v1/orgs/tls/dns/zones", json={"name": "shop.test"})).status_code == 200
        r = await http.put("/v1/orgs/tls/dns/zones/shop.test/rrsets/www/A", json={"records": ["127.0.0.1"]})
        assert r.status_code == 200, r.text
        r = await http.post("/v1/orgs/tls/projects/web/hostnames", json={"name": "www.shop.test"})
        assert r.status_code == 200, r.text
        for _ in range(600):
            hosts = (await http.get("/v1/orgs/tls/projects/web/hostnames")).json()["hostnames"]
            if any(h["host"] == "www.shop.test" and h["status"] == "active" for h in hosts):
                break
            await asyncio.sleep(0.1)
    answer = None
    for _ in range(600):
        try:
            answer = await asyncio.to_thread(_https_get, tls_port, "www.shop.test", root)
            break
        except (OSError, ssl.SSLError):
            await asyncio.sleep(0.1)
    assert answer == ("HTTP/1.1 200 OK", "<h1>over tls</h1>"), server.log.read_text()[-3000:]
    # Certificates reach nginx's memory as they come: the edge never reloaded for them.
    assert "edge reloaded onto config" not in server.log.read_text()
    # No key in svc's log or nginx's (as PEM, or base64 as the edge's table carries it), or in the audit.
    assert server.data_dir is not None
    logs = server.log.read_text() + (server.data_dir / "edge" / "error.log").read_text()
    assert "PRIVATE KEY" not in logs and "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0t" not in logs
    async with httpx.AsyncClient(base_url=server.api, timeout=30, headers=auth) as http:
        audit = (await http.get("/v1/orgs/tls/audit")).text
        hostnames = (await http.get("/v1/orgs/tls/projects/web/hostnames")).text
    assert "PRIVATE" not in audit and "PRIVATE" not in hostnames and "BEGIN" not in hostnames
    # The API says which certificate each hostname is served with.
    async with httpx.AsyncClient(base_url=server.api, timeout=30, headers=auth) as http:
        hosts = {h["host"]: h for h in (await http.get("/v1/orgs/tls/projects/web/hostnames")).json()["hostnames"]}
    for host in ("web-tls.apps.test", "www.shop.test"):
        cert = hosts[host]["certificate"]
        assert cert["status"] == "active" and cert["lastError"] is None and cert["issuer"], hosts[host]
        assert cert["notAfter"] > "2026"
    # Over http, a host with a certificate is sent to https (308), except ACME's checks.
    async with httpx.AsyncClient(timeout=30) as http:
        edge = f"http://127.0.0.1:{server.edge_port}"
        moved = await http.get(f"{edge}/page?x=1", headers={"host": "www.shop.test"})
        assert moved.status_code == 308 and moved.headers["location"] == f"https://www.shop.test:{tls_port}/page?x=1"
        moved = await http.get(f"{edge}/", headers={"host": "web-tls.apps.test"})
        assert moved.status_code == 308 and moved.headers["location"] == f"https://web-tls.apps.test:{tls_port}/"
        check = await http.get(f"{edge}/.well-known/acme-challenge/none", headers={"host": "www.shop.test"})
        assert check.status_code == 404 and check.text == "no such challenge"
        assert "strict-transport-security" not in check.headers


async def _console(server: Server, tls_port: int, root: str) -> None:
    """The dashboard and API at SVC_PUBLIC_URL's host, fronted by the edge over https (the app
    domain's wildcard covers svc.apps.test): the session cookie is then Secure (__Host-)."""
    verify = ssl.create_default_context(cadata=root)
    base = f"https://127.0.0.1:{tls_port}"
    sni = {"sni_hostname": "svc.apps.test"}
    async with httpx.AsyncClient(timeout=30, verify=verify, headers={"host": "svc.apps.test"}) as https:
        config = await https.get(f"{base}/v1/config", extensions=sni)
        assert config.status_code == 200 and config.headers["strict-transport-security"] == "max-age=600"
        page = await https.get(f"{base}/signin", extensions=sni)
        assert page.status_code == 200
        pre = page.headers["set-cookie"]
        assert pre.startswith("__Host-svc_pre=") and "Secure" in pre and "HttpOnly" in pre
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert csrf is not None, page.text
        signed = await https.post(f"{base}/signin/dev", extensions=sni, data={"subject": "tls", "csrf": csrf[1]},
                                  headers={"cookie": pre.split(";", 1)[0]})
        assert signed.status_code == 303, signed.text
        session = signed.headers["set-cookie"]
        assert session.startswith("__Host-svc_session=") and "Secure" in session and "HttpOnly" in session
    async with httpx.AsyncClient(timeout=30) as http:  # over http: sent to https
        moved = await http.get(f"http://127.0.0.1:{server.edge_port}/signin", headers={"host": "svc.apps.test"})
        assert moved.status_code == 308 and moved.headers["location"] == f"https://svc.apps.test:{tls_port}/signin"
