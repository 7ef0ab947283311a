"""The sign-in page's brand: what a tenant sets reaches its page escaped, and its logo's origin
reaches the page's Content-Security-Policy as a host only."""

from __future__ import annotations

from svc.domains.app_auth.edge_pages import signin_page
from svc.models import AuthGrant


def _csp(logo_url: str) -> str:
    grant = AuthGrant(project_id="prj_x", session_days=30, brand_name="<b>Shop</b>", logo_url=logo_url)
    response = signin_page(grant, ["github"], host="shop.apps.test", next_path="/")
    assert b"<b>Shop</b>" not in response.body and b"&lt;b&gt;Shop&lt;/b&gt;" in response.body
    return response.headers["content-security-policy"]


def test_a_logo_gives_its_origin_to_the_policy() -> None:
    assert _csp("https://cdn.example:8443/logo.png").endswith("; img-src https://cdn.example:8443")


def test_a_logo_url_cannot_write_into_the_policy() -> None:
    for url in ("https://cdn.example;script-src/x.png", "https://cdn.example,script-src/x.png",
                "https://a@cdn.example/x.png"):
        csp = _csp(url)
        assert "img-src" not in csp and "script-src/" not in csp and "cdn.example" not in csp, (url, csp)
