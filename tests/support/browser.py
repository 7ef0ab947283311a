"""Headless Chromium (Debian's package, which `make test` installs) for the browser tests."""

from __future__ import annotations

from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--no-first-run"]
HAVE_CHROMIUM = Path(CHROMIUM).exists()
