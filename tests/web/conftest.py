"""The dashboard in a real browser: one `svc serve` (SQLite, dev login, its nginx edge) for the
package, headless Chromium (Debian's, the session's `browser`) driven by Playwright, and
`look(page, name)`: screenshots at 1440 and 375 px wide into test-artifacts/dashboard/ (not
committed), axe-core (no serious or critical violation) and, at 375 px, nothing wider than the
screen (no table that scrolls sideways, nothing cut off at the right edge). Each distinct page is
looked at once, in its fullest state (rows in its tables, a refusal or a value shown once in its
form); the other steps of a test assert what they show, without a look.

Every page a test opens on svc's address is watched (`contexts`): a console error, a script error, a
Content-Security-Policy violation or a file of the page that failed to load fails the test at its
end, so each area's journey checks that for free."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.support import components
from tests.support.browser import WAIT_MS
from tests.support.serve import Server, svc_serve

try:
    from axe_playwright_python.async_playwright import Axe
    from playwright.async_api import (
        Browser,
        BrowserContext,
        ConsoleMessage,
        Page,
        Response,
        WebError,
        async_playwright,
        expect,
    )
except ImportError:  # pragma: no cover - the dev dependencies include them
    async_playwright = None  # type: ignore[assignment]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "dashboard"
WIDTHS = {"1440": (1440, 900), "375": (375, 812)}
BLOCKING = {"serious", "critical"}

pytestmark = [
    components.PLAYWRIGHT, components.CHROMIUM, components.NGINX,
]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/web/" in str(item.path):
            for mark in pytestmark:
                item.add_marker(mark)


@pytest.fixture(scope="package")
async def server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Server]:
    # With the fake registrar svc runs itself (SVC_REGISTRAR=fake), as `make run` does.
    async with svc_serve(tmp_path_factory.mktemp("dashboard"), SVC_REGISTRAR="fake") as running:
        yield running


@pytest.fixture
async def http(server: Server) -> AsyncIterator[httpx.AsyncClient]:
    # A connection per request: between two calls a journey may spend longer in the browser than the
    # server keeps an idle connection (uvicorn: 5 s), and a reused one it has just closed fails
    # ("Server disconnected without sending a response").
    async with httpx.AsyncClient(base_url=server.api, timeout=30,
                                 limits=httpx.Limits(max_keepalive_connections=0)) as client:
        yield client


# Chromium's console line for any answer of status >= 400, judged by the request it answered: a
# refusal swapped into a form (xhr, fetch) or an error page a test opens on purpose (document), 4xx,
# is an answer the page shows in words; a 5xx, or anything else failing (a script, a style sheet,
# the icon), is a defect.
NETWORK_LINE = "Failed to load resource: the server responded with a status of"
ANSWERS_SHOWN = {"document", "xhr", "fetch"}
# A Content-Security-Policy violation, reported whatever the console says of it.
CSP_WATCH = """document.addEventListener("securitypolicyviolation", function (event) {
  window.svcCspViolation(event.violatedDirective + " blocked " + (event.blockedURI || "inline") + " at "
    + event.sourceFile + ":" + event.lineNumber + ":" + event.columnNumber + " on " + location.pathname);
});"""


class ConsoleWatch:
    """What went wrong on svc's pages in one test: console errors, uncaught script errors, CSP
    violations, and files of a page that failed to load (the favicon a browser asks for by itself
    included). Pages of other addresses (a deployed site at the edge, the identity provider) are
    theirs."""

    def __init__(self, origin: str) -> None:
        self.origins = {origin}
        self.seen: list[str] = []
        self.failed_loads: list[tuple[str, str]] = []  # (page path, url): judged at the end
        self.answers_shown: set[str] = set()

    def ours(self, url: str) -> bool:
        parts = urlsplit(url)
        return f"{parts.scheme}://{parts.netloc}" in self.origins

    async def attach(self, context: BrowserContext) -> None:
        await context.expose_binding("svcCspViolation", self.csp)
        await context.add_init_script(CSP_WATCH)
        context.on("console", self.console)
        context.on("weberror", self.script_error)
        context.on("response", self.response)

    def csp(self, source: dict[str, Any], said: str) -> None:
        if self.ours(source["frame"].url):
            self.seen.append(f"CSP violation: {said}")

    def script_error(self, error: WebError) -> None:
        page_url = error.page.url if error.page else ""
        if self.ours(page_url):
            self.seen.append(f"script error on {urlsplit(page_url).path}: {error.error}")

    def console(self, message: ConsoleMessage) -> None:
        page_url = message.page.url if message.page else ""
        if message.type != "error" or not self.ours(page_url):
            return
        where = urlsplit(page_url).path
        if message.text.startswith(NETWORK_LINE):
            self.failed_loads.append((where, message.location["url"]))
        else:
            self.seen.append(f"console error on {where}: {message.text} ({message.location['url']})")

    def response(self, response: Response) -> None:
        if 400 <= response.status < 500 and response.request.resource_type in ANSWERS_SHOWN:
            self.answers_shown.add(response.url)

    def problems(self) -> list[str]:
        loads = [f"on {where}: {url} failed to load" for where, url in self.failed_loads
                 if url not in self.answers_shown]
        return list(dict.fromkeys(self.seen + loads))


@pytest.fixture
async def contexts(browser: Browser, server: Server) -> AsyncIterator[Callable[..., Awaitable[BrowserContext]]]:
    """New browser profiles (each its own cookies; `options` for Playwright's new_context), closed
    after the test, which fails if one of svc's pages logged an error (ConsoleWatch): the package's
    server's, and those of `also` (a server of the test's own)."""
    made: list[BrowserContext] = []
    watch = ConsoleWatch(server.api)

    async def new(*, also: Server | None = None, **options: Any) -> BrowserContext:
        if also is not None:
            watch.origins.add(also.api)
        context = await browser.new_context(**{"viewport": {"width": 1440, "height": 900}, **options})
        context.set_default_timeout(WAIT_MS)
        await watch.attach(context)
        made.append(context)
        return context

    yield new
    for context in made:
        await context.close()
    problems = watch.problems()
    assert not problems, "svc's pages logged errors:\n" + "\n".join(problems)


async def sign_in(context: BrowserContext, server: Server, subject: str, *, next_path: str = "/") -> Page:
    """Dev sign-in through the form, as a person does; lands on the page `next_path` leads to."""
    page = await context.new_page()
    await page.goto(f"{server.api}/signin?next={next_path}")
    await page.get_by_label("Your name").fill(subject)
    await page.get_by_role("button", name="Sign in").click()
    await page.wait_for_url(lambda url: "/signin" not in url)
    return page


# What does not fit a phone's width: a table that scrolls sideways (its last columns out of
# sight), and any element reaching past the right edge of the screen; an element inside a box
# that scrolls or clips (a <pre>) is that box's business, the box itself must fit. Visually
# hidden text (1 px, clipped) and the skip link (off screen until focused) are left out.
TOO_WIDE = """() => {
  const width = document.documentElement.clientWidth;
  const said = (el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "")
    + (el.classList.length ? "." + [...el.classList].join(".") : "")
    + " " + JSON.stringify(el.textContent.trim().slice(0, 40));
  const problems = [];
  document.querySelectorAll(".table-wrap").forEach((wrap) => {
    if (wrap.scrollWidth > wrap.clientWidth + 1) {
      const table = wrap.querySelector("table") || wrap;
      problems.push(`table scrolls sideways (${wrap.scrollWidth} px in ${wrap.clientWidth}): ${said(table)}`);
    }
  });
  const inClippingBox = (el) => {
    for (let up = el.parentElement; up && up !== document.body; up = up.parentElement) {
      if (getComputedStyle(up).overflowX !== "visible") return true;
    }
    return false;
  };
  const wide = new Set();
  document.querySelectorAll("body *").forEach((el) => {
    const box = el.getBoundingClientRect();
    if (box.width <= 1 || box.right <= width + 1) return;
    if (el.closest(".visually-hidden, .skip-link") || inClippingBox(el)) return;
    wide.add(el);
  });
  wide.forEach((el) => {
    const right = Math.round(el.getBoundingClientRect().right);
    if (!wide.has(el.parentElement)) problems.push(`reaches ${right} px of ${width}: ${said(el)}`);
  });
  return problems;
}"""


async def look(page: Page, name: str) -> None:
    """Screenshots at both widths, the accessibility check and, at 375 px, that everything fits
    the screen, on the page as it is now."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    size = page.viewport_size or {"width": 1440, "height": 900}
    problems = []
    for label, (width, height) in WIDTHS.items():
        await page.set_viewport_size({"width": width, "height": height})
        await page.screenshot(path=str(ARTIFACTS / f"{name}-{label}.png"), full_page=True)
        if label == "375":
            problems += [f"375px {problem}" for problem in await page.evaluate(TOO_WIDE)]
        results = await Axe().run(page)
        for violation in results.response["violations"]:
            if violation.get("impact") in BLOCKING:
                targets = [node.get("target") for node in violation.get("nodes", [])][:3]
                problems.append(f"{label}px {violation['impact']} {violation['id']}: {violation['help']} {targets}")
    await page.set_viewport_size(size)
    assert not problems, f"problems on {name}:\n" + "\n".join(problems)


__all__ = ["expect", "look", "sign_in"]
