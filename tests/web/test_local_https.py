"""https on one machine, in a real browser: a `svc serve` of the test's own with svc's local CA
(SVC_TLS_ISSUER=local, as `make run EDGE_TLS_PORT=...`). `svc certs trust` puts the CA in the NSS
database of a HOME of the test's own, and a Chromium started with that HOME trusts it as a person's
would: nothing is ignored (no --ignore-certificate-errors). The dashboard links the project over
https, and the link opens it with a valid certificate; a Chromium that does not trust the CA refuses
the same page."""

from __future__ import annotations

import os
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser, Error, expect

from tests.support.browser import CHROMIUM, CHROMIUM_ARGS
from tests.support.bundles import site
from tests.support.components import CERTUTIL
from tests.support.ports import free_port
from tests.support.serve import Server, svc_serve
from tests.support.wait import until
from tests.web.conftest import sign_in

pytestmark = CERTUTIL


@pytest.fixture
async def local_tls(tmp_path: Path) -> AsyncIterator[tuple[Server, int]]:
    tls_port = free_port()
    async with svc_serve(tmp_path, SVC_TLS_ISSUER="local", SVC_EDGE_TLS_PORT=str(tls_port)) as server:
        yield server, tls_port


async def test_a_project_opens_over_https_with_the_local_ca_trusted(local_tls: tuple[Server, int], browser: Browser,
                                                                    tmp_path: Path) -> None:
    server, tls_port = local_tls
    assert server.data_dir is not None
    async with httpx.AsyncClient(base_url=server.api, timeout=30) as http:
        token = (await http.post("/v1/auth/dev/login", json={"subject": "ada"})).json()["token"]
        auth = {"authorization": f"Bearer {token}"}
        made = await http.post("/v1/orgs/ada/projects", json={"name": "shop"}, headers=auth)
        assert made.json()["url"] == f"https://shop-ada.localhost:{tls_port}"
        r = await http.post("/v1/orgs/ada/projects/shop/deployments", headers={**auth, "content-type":
                            "application/gzip"}, content=site({"assets/index.html": b"<h1>over local https</h1>"}))
        assert r.status_code == 201, r.text

    # A person's HOME: `svc certs trust` makes its NSS database and adds the CA there.
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    env |= {"HOME": str(home), "SVC_DATA_DIR": str(server.data_dir)}
    svc = str(Path(sys.executable).parent / "svc")
    trusted = subprocess.run([svc, "certs", "trust", "--no-system"], env=env, capture_output=True, text=True,
                             timeout=60, check=False)
    assert trusted.returncode == 0, trusted.stderr
    assert f"trusted in Chromium and Chrome ({home}/.pki/nssdb" in trusted.stdout

    chromium = await browser.browser_type.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True,
                                                 env={**env, "HOME": str(home)})
    try:
        context = await chromium.new_context(viewport={"width": 1440, "height": 900})
        page = await sign_in(context, server, "ada", next_path="/orgs/ada/projects/shop")
        link = page.get_by_role("link", name=f"https://shop-ada.localhost:{tls_port}")
        await expect(link).to_have_attribute("href", f"https://shop-ada.localhost:{tls_port}")

        root = server.data_dir / "tls" / "local-ca" / "root.pem"

        async def served() -> bool:  # its certificate comes within svc's next check
            verify = ssl.create_default_context(cafile=str(root))
            try:
                async with httpx.AsyncClient(verify=verify, timeout=10) as https:
                    r = await https.get(f"https://127.0.0.1:{tls_port}/", headers={"host": "shop-ada.localhost"},
                                        extensions={"sni_hostname": "shop-ada.localhost"})
            except (httpx.TransportError, ssl.SSLError):
                return False
            return r.status_code == 200

        await until(served, what="the project's certificate at the edge")
        async with context.expect_page() as opened:
            await link.click()
        shop = await opened.value
        await expect(shop.get_by_role("heading", name="over local https")).to_be_visible()
        assert shop.url == f"https://shop-ada.localhost:{tls_port}/"
        await context.close()
    finally:
        await chromium.close()

    # The same page in a Chromium that was not told of the CA: refused, as it should be.
    context = await browser.new_context()
    try:
        stranger = await context.new_page()
        with pytest.raises(Error, match="ERR_CERT_AUTHORITY_INVALID"):
            await stranger.goto(f"https://shop-ada.localhost:{tls_port}/")
    finally:
        await context.close()
