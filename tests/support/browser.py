"""Headless Chromium (Debian's package, which `make test` installs) for the browser tests."""

from __future__ import annotations

from pathlib import Path

from tests.support.wait import WAIT_SECONDS

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--no-first-run"]
HAVE_CHROMIUM = Path(CHROMIUM).exists()
# How long a page, a locator or an `expect` waits (Playwright's own default is 5 s): a busy
# machine's browser is slow, never wrong.
WAIT_MS = int(WAIT_SECONDS * 1000)
