"""The dashboard in a real browser: one `svc serve` (SQLite, dev login, its nginx edge) for the
package, headless Chromium (Debian's, the session's `browser`) driven by Playwright, and
`look(page, name)`: screenshots at 1440 and 375 px wide into test-artifacts/dashboard/ (not
committed) and axe-core, no serious or critical violation. Each distinct page is looked at once, in
its fullest state (rows in its tables, a refusal or a value shown once in its form); the other steps
of a test assert what they show, without a look."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx
import pytest

from svc.supervisor import find_binary
from tests.support.browser import CHROMIUM
from tests.support.serve import Server, svc_serve

try:
    from axe_playwright_python.async_playwright import Axe
    from playwright.async_api import Browser, BrowserContext, Page, async_playwright, expect
except ImportError:  # pragma: no cover - the dev dependencies include them
    async_playwright = None  # type: ignore[assignment]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "dashboard"
WIDTHS = {"1440": (1440, 900), "375": (375, 812)}
BLOCKING = {"serious", "critical"}

pytestmark = [
    pytest.mark.skipif(async_playwright is None, reason="playwright is not installed"),
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed"),
    pytest.mark.skipif(find_binary("nginx") is None, reason="nginx is not installed (make test installs it)"),
]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/web/" in str(item.path):
            for mark in pytestmark:
                item.add_marker(mark)


@pytest.fixture(scope="package")
async def server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Server]:
    async with svc_serve(tmp_path_factory.mktemp("dashboard")) as running:
        yield running


@pytest.fixture
async def http(server: Server) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server.api, timeout=30) as client:
        yield client


@pytest.fixture
async def contexts(browser: Browser) -> AsyncIterator[Callable[[], Awaitable[BrowserContext]]]:
    """New browser profiles (each its own cookies), closed after the test."""
    made: list[BrowserContext] = []

    async def new() -> BrowserContext:
        context = await browser.new_context(viewport={"width": 1440, "height": 900})
        context.set_default_timeout(20_000)
        made.append(context)
        return context

    yield new
    for context in made:
        await context.close()


async def sign_in(context: BrowserContext, server: Server, subject: str, *, next_path: str = "/") -> Page:
    """Dev sign-in through the form, as a person does; lands on the page `next_path` leads to."""
    page = await context.new_page()
    await page.goto(f"{server.api}/signin?next={next_path}")
    await page.get_by_label("Your name").fill(subject)
    await page.get_by_role("button", name="Sign in").click()
    await page.wait_for_url(lambda url: "/signin" not in url)
    return page


async def look(page: Page, name: str) -> None:
    """Screenshots at both widths and the accessibility check, on the page as it is now."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    size = page.viewport_size or {"width": 1440, "height": 900}
    problems = []
    for label, (width, height) in WIDTHS.items():
        await page.set_viewport_size({"width": width, "height": height})
        await page.screenshot(path=str(ARTIFACTS / f"{name}-{label}.png"), full_page=True)
        results = await Axe().run(page)
        for violation in results.response["violations"]:
            if violation.get("impact") in BLOCKING:
                targets = [node.get("target") for node in violation.get("nodes", [])][:3]
                problems.append(f"{label}px {violation['impact']} {violation['id']}: {violation['help']} {targets}")
    await page.set_viewport_size(size)
    assert not problems, f"accessibility problems on {name}:\n" + "\n".join(problems)


__all__ = ["expect", "look", "sign_in"]
