"""The ACME adapter against a real ACME server: pebble, run through svc's supervisor, its lookups
and DNS-01 checks answered by a real PowerDNS (the session's `pdns`). A wildcard certificate by
DNS-01 (the TXT record published in the zone and withdrawn after), a certificate for one name by
HTTP-01 (answered by a small HTTP server standing for the edge), the CA's refusal in words, an
account key kept across clients, a renewal that meets authorizations the CA hands back already valid,
and the renewal window of a CA that offers ACME Renewal Information."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from cryptography import x509

from svc.adapters.acme.client import AcmeClient
from svc.adapters.acme.pebble import Pebble
from svc.adapters.acme.port import AcmeError, AcmeErrorKind, Method
from svc.adapters.nameserver.port import RRsetData
from svc.supervisor import free_tcp_port
from tests.support.acme import PEBBLE_REQUIRED, running_pebble
from tests.support.pdns import Pdns

pytestmark = PEBBLE_REQUIRED

ZONE = "apps.test."


class Solver:
    """Publishes DNS-01 records in the zone on PowerDNS, and HTTP-01 answers for `Responder`."""

    def __init__(self, pdns: Pdns) -> None:
        self.pdns = pdns
        self.answers: dict[str, str] = {}
        self.published: list[str] = []
        self.withdrawn: list[str] = []

    async def publish(self, method: Method, name: str, token: str, value: str) -> None:
        self.published.append(name)
        if method is Method.dns01:
            await self.pdns.nameserver.apply(ZONE, replace=[RRsetData(name + ".", "TXT", 1, (f'"{value}"',))],
                                             delete=[])
        else:
            self.answers[token] = value

    async def withdraw(self, method: Method, name: str, token: str, value: str) -> None:
        self.withdrawn.append(name)
        if method is Method.dns01:
            await self.pdns.nameserver.apply(ZONE, replace=[], delete=[(name + ".", "TXT")])
        else:
            self.answers.pop(token, None)


async def _responder(port: int, answers: dict[str, str]) -> asyncio.Server:
    """A plain HTTP server at `port` answering /.well-known/acme-challenge/<token> from `answers`."""
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = (await reader.readuntil(b"\r\n\r\n")).decode()
        path = request.split(" ", 2)[1]
        token = path.rsplit("/", 1)[-1]
        body = answers.get(token, "").encode() if path.startswith("/.well-known/acme-challenge/") else b""
        status = "200 OK" if body else "404 Not Found"
        writer.write(f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
        await writer.drain()
        writer.close()

    return await asyncio.start_server(handle, "127.0.0.1", port)


@pytest.fixture
async def pebble(pdns: Pdns, tmp_path: Path) -> AsyncIterator[Pebble]:
    await pdns.nameserver.ensure_zone(ZONE, nameservers=["ns1.svc.test."])
    await pdns.nameserver.apply(ZONE, replace=[RRsetData(f"shop.{ZONE}", "A", 60, ("127.0.0.1",))], delete=[])
    try:
        # Every new order is handed back the authorizations still valid from an earlier one, as
        # Let's Encrypt does for 30 days (pebble's default: half of them).
        async with running_pebble(tmp_path / "pebble", pdns.port, authz_reuse=100) as running:
            yield running
    finally:
        await pdns.nameserver.delete_zone(ZONE)


async def test_a_wildcard_by_dns01_and_a_name_by_http01(pebble: Pebble, pdns: Pdns, tmp_path: Path) -> None:
    acme = AcmeClient(pebble.directory_url, account_key_pem=None, email="ops@apps.test", ca_bundle=pebble.ca_bundle)
    solver = Solver(pdns)
    wildcard = await acme.issue(["*.apps.test"], Method.dns01, solver)
    assert wildcard.names == ("*.apps.test",)
    assert solver.published == solver.withdrawn == ["_acme-challenge.apps.test"]
    assert (await pdns.query("_acme-challenge.apps.test.", "TXT")).answer == []  # withdrawn
    # The chain verifies to pebble's root, for a host under the wildcard.
    root = await pebble.root_pem()
    leaf, *intermediates = x509.load_pem_x509_certificates(wildcard.fullchain_pem.encode())
    store = x509.verification.Store(x509.load_pem_x509_certificates(root.encode()))
    x509.verification.PolicyBuilder().store(store).build_server_verifier(
        x509.DNSName("web-acme.apps.test")).verify(leaf, intermediates)
    assert wildcard.not_after > wildcard.not_before and wildcard.issuer
    assert "PRIVATE KEY" in wildcard.key_pem

    server = await _responder(pebble.http_port, solver.answers)
    try:
        shop = await acme.issue(["shop.apps.test"], Method.http01, solver)
    finally:
        server.close()
    assert shop.names == ("shop.apps.test",) and solver.answers == {}
    # The key and the chain load as a TLS server's would.
    chain, key = tmp_path / "chain.pem", tmp_path / "key.pem"
    chain.write_text(shop.fullchain_pem)
    key.write_text(shop.key_pem)
    ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(chain, key)
    # The same account key finds the same account from another client (kept sealed by svc).
    again = AcmeClient(pebble.directory_url, account_key_pem=acme.account_key_pem(), email=None,
                       ca_bundle=pebble.ca_bundle)
    assert again.account_key_pem() == acme.account_key_pem()
    # A name nobody can prove (no record anywhere): refused in the CA's words, not a loop.
    with pytest.raises(AcmeError) as refused:
        await again.issue(["nowhere.apps.test"], Method.http01, solver)
    assert refused.value.kind is AcmeErrorKind.rejected and "nowhere.apps.test" in refused.value.message


async def test_a_ca_that_does_not_answer(tmp_path: Path) -> None:
    acme = AcmeClient(f"https://127.0.0.1:{free_tcp_port('127.0.0.1')}/dir", account_key_pem=None, email=None)
    with pytest.raises(AcmeError) as down:
        await acme.issue(["x.apps.test"], Method.dns01, Solver.__new__(Solver))
    assert down.value.kind is AcmeErrorKind.unavailable


async def test_a_renewal_skips_the_authorizations_the_ca_hands_back_valid(pebble: Pebble, pdns: Pdns) -> None:
    """RFC 8555 7.1.4: a new order may come with authorizations already valid. Their challenges
    cannot be answered again ("Cannot update challenge with status valid"): they are skipped, and
    only pending ones are proven."""
    acme = AcmeClient(pebble.directory_url, account_key_pem=None, email=None, ca_bundle=pebble.ca_bundle)
    solver = Solver(pdns)
    first = await acme.issue(["*.apps.test"], Method.dns01, solver)
    assert solver.published == ["_acme-challenge.apps.test"]
    server = await _responder(pebble.http_port, solver.answers)
    try:
        shop = await acme.issue(["shop.apps.test"], Method.http01, solver)
    finally:
        server.close()
    # Renewals of both, with nothing answering any check now: the CA's valid authorizations carry them.
    again = await acme.issue(["*.apps.test"], Method.dns01, solver)
    shop_again = await acme.issue(["shop.apps.test"], Method.http01, solver)
    assert solver.published == ["_acme-challenge.apps.test", "shop.apps.test"]  # nothing new to prove
    assert again.fullchain_pem != first.fullchain_pem and again.names == ("*.apps.test",)
    assert shop_again.fullchain_pem != shop.fullchain_pem and shop_again.names == ("shop.apps.test",)


@contextmanager
def _ari_directory(directory: dict[str, object], window: tuple[datetime, datetime]) -> Iterator[tuple[str, list[str]]]:
    """An ACME directory at a local http server: pebble's own (which has no renewalInfo), with a
    renewalInfo resource here answering `window` for any certificate. Yields its URL and the
    renewalInfo paths asked."""
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/dir":
                body = directory | {"renewalInfo": f"http://127.0.0.1:{self.server.server_address[1]}/ari"}
            elif self.path.startswith("/ari/"):
                asked.append(self.path.removeprefix("/ari/"))
                body = {"suggestedWindow": {"start": window[0].isoformat().replace("+00:00", "Z"),
                                            "end": window[1].isoformat().replace("+00:00", "Z")}}
            else:
                self.send_error(404)
                return
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/dir", asked
    finally:
        server.shutdown()
        server.server_close()


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


async def test_the_renewal_window_of_a_ca_that_offers_ari(pebble: Pebble, pdns: Pdns) -> None:
    """RFC 9773: the certificate's renewalInfo (its issuer's key identifier and its serial, each
    base64url) is read, and the time to renew lies in the window it suggests. pebble 2.4 offers
    none: its directory is served here with a renewalInfo resource added."""
    acme = AcmeClient(pebble.directory_url, account_key_pem=None, email=None, ca_bundle=pebble.ca_bundle)
    issued = await acme.issue(["*.apps.test"], Method.dns01, Solver(pdns))
    assert await acme.renewal_time(issued.fullchain_pem) is None  # no renewalInfo in pebble's directory
    async with httpx.AsyncClient(verify=ssl.create_default_context(cafile=pebble.ca_bundle)) as http:
        directory = (await http.get(pebble.directory_url)).json()
    now = datetime.now(UTC)
    window = (now + timedelta(days=20), now + timedelta(days=22))
    with _ari_directory(directory, window) as (url, asked):
        ari = AcmeClient(url, account_key_pem=acme.account_key_pem(), email=None, ca_bundle=pebble.ca_bundle)
        when = await ari.renewal_time(issued.fullchain_pem)
    leaf = x509.load_pem_x509_certificates(issued.fullchain_pem.encode())[0]
    key_id = leaf.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value.key_identifier
    assert key_id is not None
    serial = leaf.serial_number.to_bytes((leaf.serial_number.bit_length() + 8) // 8, "big", signed=True)
    assert asked == [f"{_b64url(key_id)}.{_b64url(serial)}"]
    assert when is not None and window[0] <= when <= window[1]
