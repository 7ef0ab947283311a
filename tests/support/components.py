"""What a test needs installed (nginx, workerd, PostgreSQL, PowerDNS, pebble, Chromium, ssh...),
said in one place. On a developer's machine a test whose component is missing is skipped, saying
which; with SVC_TESTS_REQUIRE_COMPONENTS set (CI: .ci/run) it fails instead, so a component that
`make test` should have installed can never turn a red run into a green one with skips.

A test module or test says `pytestmark = NGINX` (or `needs(what, present)`); a fixture that finds
its component missing calls `absent(what)`. This module is a pytest plugin (tests/conftest.py's
`pytest_plugins`): its hook decides, before a test's fixtures are set up."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path
from typing import NoReturn

import pytest

from svc.adapters.database.process import find_postgres
from svc.adapters.workers.workerd import find_workerd
from svc.supervisor import find_binary
from tests.support.browser import CHROMIUM as CHROMIUM_BINARY

REQUIRE = "SVC_TESTS_REQUIRE_COMPONENTS"
_MARK = "needs_component"


def required() -> bool:
    """Whether a missing component fails the test (SVC_TESTS_REQUIRE_COMPONENTS=1, true or yes)."""
    return os.environ.get(REQUIRE, "").strip().lower() in {"1", "true", "yes", "on"}


def absent(what: str) -> NoReturn:
    """`what` is not installed: the test is skipped, or fails when components are required."""
    said = f"{what} is not installed (make setup / make test installs it)"
    if required():
        pytest.fail(f"{said}; {REQUIRE} is set, so a missing component is a failure", pytrace=False)
    pytest.skip(said)


def needs(what: str, present: bool) -> pytest.MarkDecorator:
    """A mark: the test needs `what`, which is there or not (found once, at import)."""
    return getattr(pytest.mark, _MARK)(what=what, present=present)


NGINX = needs("nginx", find_binary("nginx") is not None)
WORKERD = needs("workerd", find_workerd() is not None)
POSTGRES = needs("PostgreSQL's server", find_postgres() is not None)
PSQL = needs("psql", shutil.which("psql") is not None)
SSH_KEYGEN = needs("ssh-keygen", shutil.which("ssh-keygen") is not None)
SSH_CLIENTS = needs("git, ssh and ssh-keygen", all(shutil.which(b) for b in ("git", "ssh", "ssh-keygen")))
PLAYWRIGHT = needs("playwright", importlib.util.find_spec("playwright") is not None)
CHROMIUM = needs("Debian's chromium", Path(CHROMIUM_BINARY).exists())
CERTUTIL = needs("certutil (libnss3-tools)", shutil.which("certutil") is not None)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{_MARK}(what, present): a component the test needs (tests/support/"
                                       "components.py)")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers(_MARK):
        if not mark.kwargs["present"]:
            absent(mark.kwargs["what"])
