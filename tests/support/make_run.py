"""What `make run` turns on: the `run: export SVC_...` lines of the Makefile, read from it, so a test
that starts svc "as `make run` does" follows the Makefile rather than a copy of it."""

from __future__ import annotations

import re
from pathlib import Path

MAKEFILE = Path(__file__).resolve().parents[2] / "Makefile"


def make_run_settings() -> dict[str, str]:
    """{"SVC_BILLING": "fake", ...}: each variable the run target exports, with its value."""
    found = re.findall(r"^run: export (SVC_\w+) \?= (\S+)\s*$", MAKEFILE.read_text(), re.M)
    assert found, f"no `run: export SVC_...` lines in {MAKEFILE}"
    return dict(found)
