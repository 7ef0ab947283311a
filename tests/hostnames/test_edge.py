"""End to end with `svc serve` as `make run` starts it (its managed PowerDNS trusted as the public
DNS, SVC_TRUST_OWN_ZONES; its nginx edge): a pending custom hostname answers 404 unknown_hostname, with a page naming
the missing record for browsers; once its TXT record is served and verified (or its CNAME found by
the background cycle), the edge serves the project's deployment at that name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.hostnames.conftest import until
from tests.support import components
from tests.support.bundles import site
from tests.support.pdns import PDNS_REQUIRED
from tests.support.serve import Server, svc_serve

pytestmark = [PDNS_REQUIRED, components.NGINX]

HTML = {"accept": "text/html,application/xhtml+xml"}


async def _login(http: httpx.AsyncClient, server: Server, subject: str) -> httpx.AsyncClient:
    r = await http.post(f"{server.api}/v1/auth/dev/login", json={"subject": subject})
    assert r.status_code == 200, r.text
    # Idle connections dropped before the server's keep-alive timeout (5 s) can close them under a
    # request: a POST on a connection the server just closed is not retried.
    return httpx.AsyncClient(base_url=server.api, headers={"authorization": f"Bearer {r.json()['token']}"},
                             timeout=10, limits=httpx.Limits(keepalive_expiry=1))


async def _edge(http: httpx.AsyncClient, server: Server, host: str, **headers: str) -> httpx.Response:
    return await http.get(f"http://127.0.0.1:{server.edge_port}/", headers={"host": host, **headers})


async def test_pending_page_then_served_after_proof(tmp_path: Path) -> None:
    async with svc_serve(tmp_path, SVC_HOSTNAME_VERIFY_SECONDS="0.5") as server, \
            httpx.AsyncClient(timeout=10) as http:
        alice = await _login(http, server, "alice")
        eve = await _login(http, server, "eve")
        try:
            assert (await alice.post("/v1/orgs", json={"slug": "acme"})).status_code == 201
            assert (await alice.post("/v1/orgs/acme/projects", json={"name": "web"})).status_code == 201
            r = await alice.post("/v1/orgs/acme/projects/web/deployments", content=site(
                {"assets/index.html": b"<h1>the web project</h1>"}), headers={"content-type": "application/gzip"})
            assert r.status_code in (200, 201), r.text
            # example.org is another org's zone on svc's PowerDNS: "the outside world's" DNS here.
            assert (await eve.post("/v1/orgs", json={"slug": "other"})).status_code == 201
            assert (await eve.post("/v1/orgs/other/dns/zones", json={"name": "example.org"})).status_code == 200

            base = "/v1/orgs/acme/projects/web/hostnames"
            added = (await alice.post(base, json={"name": "www.example.org"})).json()
            assert added["status"] == "pending_dns"
            value = added["verification"]["value"]

            # Pending (the edge answers it once the add returned): never the project's content. API
            # clients get the Error envelope...
            answer = await _edge(http, server, "www.example.org", accept="application/json")
            assert answer.status_code == 404 and answer.json()["code"] == "unknown_hostname"
            assert "not served yet" in answer.json()["message"] and value not in answer.text
            # ...browsers a page naming the record to create, and what the last check saw.
            async def checked_page() -> Any:
                r = await _edge(http, server, "www.example.org", **HTML)
                return r if "Last check:" in r.text else None

            page = await until(checked_page, "the page with the last check")
            assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
            assert "TXT" in page.text and "_svc-verify.www.example.org" in page.text
            assert "CNAME" in page.text and "edge.localhost." in page.text
            assert "the web project" not in page.text
            assert value not in page.text, "the verification value is not on the public page"
            assert page.headers["cache-control"] == "no-store"
            # A host nobody added keeps the edge's static page.
            unknown = await _edge(http, server, "nobody.example.org", **HTML)
            assert unknown.status_code == 404 and "Unknown host" in unknown.text

            # The owner creates the TXT record; pdns serves it; verify proves it; the edge routes it.
            r = await eve.put("/v1/orgs/other/dns/zones/example.org/rrsets/_svc-verify.www/TXT",
                              json={"records": [value]})
            assert r.status_code == 200, r.text

            async def verified() -> Any:
                got = (await alice.post(f"{base}/www.example.org/verify")).json()
                return got if got["status"] == "active" else None

            got = await until(verified, "www.example.org verified")
            assert got["lastError"] is None

            # Routed within one convergence (at once when this verify proved it; the background
            # cycle may have been first, and its process's edge converges after its commit).
            async def served() -> Any:
                r = await _edge(http, server, "www.example.org", **HTML)
                return r if r.status_code == 200 else None

            assert (await until(served, "www.example.org served")).text == "<h1>the web project</h1>"

            # A CNAME to the fallback origin, found by the background cycle (no verify call).
            assert (await alice.post(base, json={"name": "app.example.org"})).status_code == 200
            r = await eve.put("/v1/orgs/other/dns/zones/example.org/rrsets/app/CNAME",
                              json={"records": ["edge.localhost."]})
            assert r.status_code == 200, r.text

            async def cycle_served() -> bool:
                return (await _edge(http, server, "app.example.org")).text == "<h1>the web project</h1>"

            await until(cycle_served, "app.example.org served after the cycle")

            # Removed: unrouted at once.
            assert (await alice.delete(f"{base}/www.example.org")).status_code == 204
            gone = await _edge(http, server, "www.example.org", accept="application/json")
            assert gone.status_code == 404 and gone.json()["code"] == "unknown_hostname"
        finally:
            await alice.aclose()
            await eve.aclose()
