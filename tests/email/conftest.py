"""The email area's fixtures: a svc with a mail domain."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from svc.settings import Settings
from tests.support.api import Svc, running_svc
from tests.support.config import configured
from tests.support.smtp import SmtpSink

MAIL_DOMAIN = "mail.svc.test"


@pytest.fixture
async def mail_svc(settings: Settings) -> AsyncIterator[Svc]:
    async with running_svc(configured(settings, mail_domain=MAIL_DOMAIN)) as running:
        yield running


@pytest.fixture
async def out_svc(settings: Settings, sink: SmtpSink) -> AsyncIterator[Svc]:
    """A svc with a mail domain whose relay is `sink` (tests/conftest.py); its jobs run when a test runs them."""
    async with running_svc(configured(settings, mail_domain=MAIL_DOMAIN, smtp_relay_url=sink.url),
                           run_workers=False) as running:
        yield running
