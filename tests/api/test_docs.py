"""What a newcomer finds on the API's address: `/` says what answers there and where to go next,
and /v1/docs is Swagger UI served by svc itself, so it works on a machine without internet."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from svc import __version__
from svc.openapi import openapi_30
from tests.support import components
from tests.support.api import Svc, assert_error
from tests.support.browser import WAIT_MS

if TYPE_CHECKING:
    from playwright.async_api import Browser

HTML = {"accept": "text/html"}
# What a URL's ending says its answer must be.
CONTENT_TYPES = {".js": "text/javascript", ".css": "text/css", ".png": "image/png", ".json": "application/json"}


@pytest.fixture
def store() -> str:
    """The docs page and the OpenAPI document do not depend on the store: on one state store."""
    return "sqlite"


LOADED = {("script", "src"), ("link", "href"), ("img", "src"), ("iframe", "src")}


class Refs(HTMLParser):
    """The URLs of a page: those the browser loads (script src, link href, ...), and its links."""

    def __init__(self) -> None:
        super().__init__()
        self.loaded: list[tuple[str, str]] = []
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is not None and (tag, name) in LOADED:
                self.loaded.append((tag, value))
            elif value is not None and (tag, name) == ("a", "href"):
                self.links.append(value)


def refs(page: str) -> Refs:
    parser = Refs()
    parser.feed(page)
    return parser


async def test_the_docs_page_loads_everything_from_svc_itself(svc: Svc) -> None:
    r = await svc.anon.get("/v1/docs", headers=HTML)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    # No other host anywhere on the page: not in a URL it loads, not in its inline script.
    assert "http://" not in r.text and "https://" not in r.text and "//cdn" not in r.text
    csp = r.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self' 'nonce-" in csp and "connect-src 'self'" in csp
    assert "http" not in csp
    urls = refs(r.text).loaded
    assert {tag for tag, _ in urls} == {"script", "link"}, urls
    assert len(urls) == 3, urls  # the script, the style sheet, the icon
    for _, url in urls:
        assert url.startswith("/v1/docs/assets/") and not url.startswith("//"), url
        asset = await svc.anon.get(url)
        assert asset.status_code == 200, url
        assert asset.headers["content-type"].startswith(CONTENT_TYPES[Path(url).suffix]), (url, asset.headers)
        assert len(asset.content) > 500, url
    bundle = next(url for tag, url in urls if tag == "script")
    assert "SwaggerUIBundle" in (await svc.anon.get(bundle)).text
    # The inline script starts Swagger UI on svc's own document, and only it runs (by its nonce).
    nonce = csp.split("'nonce-")[1].split("'")[0]
    assert f'<script nonce="{nonce}">' in r.text and "url: '/v1/docs/openapi.json'" in r.text


async def test_the_docs_read_the_api_document_in_openapi_30_terms(svc: Svc) -> None:
    """Swagger UI 4 (the swagger-ui-bundle package) reads OpenAPI 3.0 only: the page gets the
    document of record (3.1) with its nullable fields said the 3.0 way, and nothing else changed."""
    record = (await svc.anon.get("/v1/openapi.json")).json()
    r = await svc.anon.get("/v1/docs/openapi.json")
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    docs = r.json()
    assert record["openapi"].startswith("3.1") and docs["openapi"] == "3.0.3"
    assert docs["paths"].keys() == record["paths"].keys() and docs["info"] == record["info"]
    assert '"type": "null"' in json.dumps(record) and '"type": "null"' not in json.dumps(docs)
    # An optional string stays a string, with its bound, now nullable.
    login = docs["components"]["schemas"]["DevLogin"]["properties"]
    assert login["name"]["type"] == "string" and login["name"]["maxLength"] == 200 and login["name"]["nullable"]
    assert login["subject"] == record["components"]["schemas"]["DevLogin"]["properties"]["subject"]


def test_openapi_30_keeps_what_it_does_not_convert() -> None:
    schema = {"type": "object", "properties": {
        "type": {"anyOf": [{"$ref": "#/components/schemas/Org"}, {"type": "null"}], "description": "d"},
        "anyOf": {"const": "x"},  # property names are not keywords
        "both": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
        "never": {"type": "null"},
        "listed": {"type": ["string", "null"], "examples": ["a", "b"]},
    }}
    out = openapi_30({"openapi": "3.1.0", "components": {"schemas": {"S": schema}}})["components"]["schemas"]["S"]
    assert out["properties"] == {
        "type": {"allOf": [{"$ref": "#/components/schemas/Org"}], "description": "d", "nullable": True},
        "anyOf": {"enum": ["x"]},
        "both": {"anyOf": [{"type": "string"}, {"type": "integer"}], "nullable": True},
        "never": {"nullable": True, "enum": [None]},
        "listed": {"type": "string", "nullable": True, "example": "a"},
    }
    assert out["type"] == "object"


async def test_only_the_files_the_page_needs_are_served(svc: Svc) -> None:
    # The package's demo page (it would load a pet store from the internet) and anything else: 404.
    for name in ("index.html", "swagger-initializer.js", "..%2F..%2F__init__.py", "nope.js"):
        assert_error(await svc.anon.get(f"/v1/docs/assets/{name}"), 404, "not_found")


async def test_docs_and_front_page_are_not_operations_of_the_api(svc: Svc) -> None:
    paths = (await svc.anon.get("/v1/openapi.json")).json()["paths"]
    assert paths and not [p for p in paths if p == "/" or p.startswith("/v1/docs")]


async def test_the_front_page_sends_a_browser_to_sign_in_and_says_what_answers_there(svc: Svc) -> None:
    for headers in (HTML, {}, {"accept": "*/*"}):  # a browser, curl
        r = await svc.anon.get("/", headers=headers)
        assert r.status_code == 303 and r.headers["location"] == "/signin", headers
    r = await svc.anon.get("/signin", headers=HTML)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "default-src 'none'; script-src 'self'" in r.headers["content-security-policy"]
    text = r.text
    assert "Sign in to svc" in text and "control API" in text and f"svc version {__version__}" in text
    loaded = refs(text).loaded
    assert loaded and all(url.startswith("/static/") for _, url in loaded), loaded  # svc's own files only
    for _, url in loaded:
        asset = await svc.anon.get(url)
        assert asset.status_code == 200 and "immutable" in asset.headers["cache-control"], url
    assert {"/docs", "/v1/openapi.json"} <= set(refs(text).links)
    assert "svc login" in text and "export SVC_API_URL=http://svc.test" in text
    assert "svc login --dev" in text  # dev sign-in is on in these tests
    assert "http://" not in text.replace("http://svc.test", "")  # nothing from elsewhere
    # Every link on it leads somewhere.
    for href in refs(text).links:
        assert (await svc.anon.get(href, headers=HTML, follow_redirects=True)).status_code == 200, href


async def test_a_json_client_gets_the_front_page_as_json(svc: Svc) -> None:
    r = await svc.anon.get("/", headers={"accept": "application/json"})
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.json() == {"service": "svc", "name": "svc", "version": __version__, "api": "http://svc.test/v1",
                        "docs": "/v1/docs", "openapi": "/v1/openapi.json"}
    # Other methods on / are the usual error envelope.
    assert_error(await svc.anon.post("/", json={}), 405, "method_not_allowed")


@components.CHROMIUM
async def test_the_docs_render_in_a_browser_without_other_hosts(tmp_path: Path, browser: Browser) -> None:
    """Every request the page makes goes to svc; the operations show; the page's policy blocks nothing."""
    from playwright.async_api import expect

    from tests.cli.conftest import running_server

    with running_server(tmp_path) as url:
        context = await browser.new_context()
        try:
            page = await context.new_page()
            page.set_default_timeout(WAIT_MS)
            requested: list[str] = []
            problems: list[str] = []
            page.on("request", lambda req: requested.append(req.url))
            page.on("console", lambda msg: problems.append(msg.text) if msg.type == "error" else None)
            page.on("pageerror", lambda exc: problems.append(str(exc)))
            await page.goto(f"{url}/v1/docs")
            await expect(page.locator(".swagger-ui .info .title")).to_contain_text("svc control API")
            await expect(page.locator(".opblock").first).to_be_visible()
            assert await page.locator(".opblock").count() > 20
            # Open one operation: its details render from the same document.
            await page.locator(".opblock-summary").first.click()
            await expect(page.locator(".opblock-body").first).to_be_visible()
            assert requested and all(u.startswith(url + "/") for u in requested), requested
            assert f"{url}/v1/docs/openapi.json" in requested
            assert not problems, problems
        finally:
            await context.close()
