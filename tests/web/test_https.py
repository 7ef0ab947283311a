"""The Domains tab while svc gets certificates, in a real browser, against a `svc serve` of the
test's own with a real ACME server (pebble) checking at its edge: the default hostname's card says
the wildcard it is served with; a custom hostname added through the form turns Active, its HTTPS
line says "getting a certificate…" and then the certificate's expiry and issuer, all on the page as
it is (never reloaded), and the site answers over https with that certificate."""

from __future__ import annotations

import asyncio
import shutil
import socket
import ssl
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from playwright.async_api import expect

from tests.support.acme import PEBBLE_REQUIRED, running_pebble
from tests.support.bundles import site
from tests.support.pdns import PDNS_REQUIRED, free_dns_port
from tests.support.ports import free_port
from tests.support.serve import Server, svc_serve
from tests.support.wait import until
from tests.web.conftest import look, sign_in

pytestmark = [PEBBLE_REQUIRED, PDNS_REQUIRED]

# The order runs at once when the name turns active; pebble answers in about a second.
CERTIFICATE_WITHIN_MS = 60_000


@pytest.fixture
async def tls_server(tmp_path: Path) -> AsyncIterator[tuple[Server, int, str]]:
    dns_port, edge_port, tls_port = free_dns_port(), free_port(), free_port()
    work = Path(tempfile.mkdtemp(prefix="svcweb-"))  # short: PowerDNS's socket path must fit
    try:
        async with running_pebble(tmp_path / "pebble", dns_port, http_port=edge_port) as pebble:
            root = await pebble.root_pem()
            async with svc_serve(work, edge_port=edge_port, SVC_DNS_PORT=str(dns_port),
                                 SVC_APP_DOMAIN="apps.test", SVC_ACME_DIRECTORY_URL=pebble.directory_url,
                                 SVC_ACME_CA_BUNDLE=pebble.ca_bundle, SVC_EDGE_TLS_PORT=str(tls_port),
                                 SVC_CERTIFICATE_CHECK_SECONDS="1", SVC_HOSTNAME_VERIFY_SECONDS="1") as server:
                yield server, tls_port, root
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _https_issuer(port: int, host: str, root_pem: str) -> str:
    """The issuer's common name of the certificate the edge shows for `host` (verified)."""
    ctx = ssl.create_default_context(cadata=root_pem)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
            ctx.wrap_socket(raw, server_hostname=host) as tls:
        cert = tls.getpeercert()
    assert cert is not None
    return next(value for rdn in cert["issuer"] for key, value in rdn if key == "commonName")


async def test_the_domains_tab_follows_a_certificate_order_live(tls_server: tuple[Server, int, str],
                                                                contexts) -> None:
    server, tls_port, root = tls_server
    async with httpx.AsyncClient(base_url=server.api, timeout=30) as http:
        token = (await http.post("/v1/auth/dev/login", json={"subject": "ada"})).json()["token"]
        auth = {"authorization": f"Bearer {token}"}
        assert (await http.post("/v1/orgs/ada/projects", json={"name": "shop"}, headers=auth)).status_code == 201
        r = await http.post("/v1/orgs/ada/projects/shop/deployments", content=site({"assets/index.html": b"<h1>"}),
                            headers={**auth, "content-type": "application/gzip"})
        assert r.status_code == 201, r.text
        # The name's DNS on this svc, in the same org: proven at once (the zone is theirs).
        assert (await http.post("/v1/orgs/ada/dns/zones", json={"name": "shop.test"}, headers=auth)).status_code == 200
        r = await http.put("/v1/orgs/ada/dns/zones/shop.test/rrsets/www/A", json={"records": ["127.0.0.1"]},
                           headers=auth)
        assert r.status_code == 200, r.text

    context = await contexts(also=server)
    page = await sign_in(context, server, "ada", next_path="/orgs/ada/projects/shop/hostnames")
    await expect(page.get_by_role("heading", name="shop: domains", level=1)).to_be_visible()

    # The default hostname is served with the app domain's wildcard (ordered at svc's first check).
    default = page.locator("article.hostname").filter(has_text="shop-ada.apps.test")
    await expect(default.locator("p.https")).to_have_attribute("data-certificate", "active",
                                                               timeout=CERTIFICATE_WITHIN_MS)

    field = page.get_by_label("Hostname", exact=True)
    await field.fill("www.shop.test")
    await page.get_by_role("button", name="Add hostname").click()
    card = page.locator("article.hostname").filter(has_text="www.shop.test")
    await expect(card.locator(".badge")).to_have_text("Active", timeout=CERTIFICATE_WITHIN_MS)
    # Proven at once (its zone is the org's): the order starts, and the page, as it is, follows it.
    https = card.locator("p.https")
    await expect(https).to_have_attribute("data-certificate", "issuing")
    await expect(https).to_contain_text("getting a certificate")
    await page.evaluate("window.notReloaded = true")
    await expect(https).to_have_attribute("data-certificate", "active", timeout=CERTIFICATE_WITHIN_MS)
    await expect(https).to_contain_text("certificate until")
    await expect(https).to_contain_text("Pebble")
    assert await page.evaluate("window.notReloaded") is True
    await look(page, "hostnames-https")

    async def issuer_served() -> str | None:  # the edge loads the new certificate (a graceful reload)
        try:
            return await asyncio.to_thread(_https_issuer, tls_port, "www.shop.test", root)
        except (OSError, ssl.SSLError):
            return None

    issuer = await until(issuer_served, what="the edge serving the new certificate")
    assert issuer.startswith("Pebble")
